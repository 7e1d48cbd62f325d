/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A job set: a curves file joined with a features file by job id, with
 * everything the commands and the report derive from it in one place:
 *
 *  - provenance (measured / emulated / published / unstated), decided from
 *    the files' provenance columns by one rule;
 *  - each job's true PFI (ratio definition, every point of its curve);
 *  - PFI estimates from a telemetry model (options in struct
 *    pfi_estimate_opts): in sample, leave-one-out or leave-one-cluster-out;
 *  - the clusters of leave-one-cluster-out, by one definition (struct
 *    pfi_clusters) used by `pfi fit`, `pfi simulate --holdout=cluster` and
 *    the report alike;
 *  - the inputs of the allocation strategies (struct pfi_jobset_inputs),
 *    with GPU counts validated the same way everywhere;
 *  - the population compared with the paper's published numbers.
 *
 * Values are caller-owned: pfi_jobset_load() fills a struct the caller
 * declares and pfi_jobset_release() frees what it holds.
 */
#ifndef PFI_JOBSET_H
#define PFI_JOBSET_H

#include <stddef.h>

#include "pfi/alloc.h"
#include "pfi/curve.h"
#include "pfi/error.h"
#include "pfi/features.h"
#include "pfi/index.h"
#include "pfi/model.h"
#include "pfi/objective.h"
#include "pfi/oracle.h"

/* ---- provenance ----------------------------------------------------------
 */

enum pfi_provenance {
  PFI_PROV_UNSTATED = 0, /* no provenance column, or no value it names */
  PFI_PROV_MEASURED,
  PFI_PROV_EMULATED,
  PFI_PROV_PUBLISHED,
  PFI_PROV_MIXED /* rows of more than one of the above */
};

/* "unstated", "measured", "emulated", "published", "mixed". */
const char *pfi_provenance_name(enum pfi_provenance p);

/*
 * Provenance of a table: the cells of its columns `provenance`, `source`
 * and `origin` (every one present). A cell containing "emulated" is
 * emulated, one equal to "measured" or "published" (any case) is that; a
 * table whose cells are all of one kind has that provenance, a table with
 * several kinds (or known and unknown cells) is mixed; no such column or
 * no known cell is unstated. *any_emulated (may be NULL) is set to 1 when
 * any cell is emulated.
 */
enum pfi_provenance pfi_table_provenance(const struct pfi_table *t,
                                         int *any_emulated);

/* ---- clusters for leave-one-cluster-out -----------------------------------
 */

enum pfi_cluster_kind {
  /* The paper's definition (its method text: "hold out
   * one architecture x task cluster at a time"), the default: the four
   * clusters dense-pt, dense-ft, moe-pt, moe-ft. */
  PFI_CLUSTERS_ARCHTASK = 0,
  /* The three classes of the paper's Kruskal-Wallis test, dense
   * pretraining and fine-tuning pooled: dense, moe-pt, moe-ft. */
  PFI_CLUSTERS_POOLED,
  /* The text of a features column (`column`). */
  PFI_CLUSTERS_COLUMN
};

struct pfi_clusters {
  enum pfi_cluster_kind kind;
  const char *column; /* PFI_CLUSTERS_COLUMN: the column (not owned) */
};

/* The default: PFI_CLUSTERS_ARCHTASK. */
void pfi_clusters_init(struct pfi_clusters *c);

/*
 * Parses a cluster definition by name: "archtask" (the default, four
 * clusters), "pooled" (three); any other name is a features column
 * (PFI_CLUSTERS_COLUMN, `s` kept, not copied). NULL or "" is the default.
 */
void pfi_clusters_parse(struct pfi_clusters *c, const char *s);

/* The definition's name as pfi_clusters_parse() reads it ("archtask",
 * "pooled" or the column). */
const char *pfi_clusters_name(const struct pfi_clusters *c);

/* A phrase for tables and pages: "archtask: 4 architecture x task
 * clusters", "pooled: 3 classes, dense pretraining and fine-tuning pooled",
 * "column COL". Static or the column name; written into buf (n bytes). */
const char *pfi_clusters_describe(const struct pfi_clusters *c, char *buf,
                                  size_t n);

/*
 * The cluster of features row `r`: a static string, or the cell's text
 * (PFI_CLUSTERS_COLUMN; "" when empty). NULL with err set when the arch
 * and task columns (or the named column) are absent: PFI_ENOTFOUND.
 */
const char *pfi_clusters_of(const struct pfi_clusters *c,
                            const struct pfi_features *f, size_t r,
                            struct pfi_error *err);

/* ---- the job set ----------------------------------------------------------
 */

struct pfi_jobset {
  struct pfi_curveset cs; /* curves, one per job (cs.n == 0 without) */
  int have_curves;
  int have_features;
  struct pfi_features f;    /* valid when have_features */
  long *frow;               /* cs.n: features row of each curve, -1 if none */
  size_t nmissing;          /* curves without a features row */
  double *true_pfi;         /* cs.n: ratio PFI of each curve */
  int *pfi_ok;              /* cs.n: 1 when the ratio PFI is defined */
  enum pfi_provenance prov; /* of the curves and features together */
  int any_emulated;         /* some row of either file is emulated */
  int features_borrowed;    /* f belongs to another set (pfi_jobset_subset) */
  /* The curve decisions read (enum pfi_curve_fit, monotone.h): 0, the
   * monotone fit, after pfi_jobset_load(); a command's --curve raw sets
   * PFI_CURVE_RAW. true_pfi and everything an index reports come from the
   * raw points either way. */
  int curve_fit;
  int *pfi_why; /* cs.n: enum pfi_index_undefined of a job without a PFI */
  /* The noise true_pfi's rule used for points without sd columns:
   * pfi_noise_of() of the curves after pfi_jobset_load() (the data's
   * estimate; the paper's repeatability for emulated curves and where the
   * data gives no estimate), or the caller's by pfi_jobset_set_noise();
   * the same as `pfi index`'s. */
  struct pfi_noise noise;
};

/*
 * Loads a curves file (`cpath`, with an optional column mapping `map`, see
 * curve.h; NULL: no curves) and, when `fpath` is not NULL, a features
 * file, joins them by job id and computes each job's true PFI under the
 * curves' own noise (js->noise, pfi_noise_of()) and the
 * provenance. Returns 0 or an error (bad input: file:line:column;
 * PFI_ENOMEM). Release with pfi_jobset_release() (also after a failure).
 */
int pfi_jobset_load(struct pfi_jobset *js, const char *cpath, const char *map,
                    const char *fpath, struct pfi_error *err);
void pfi_jobset_release(struct pfi_jobset *js);

/*
 * Recomputes every job's true PFI (true_pfi, pfi_ok, pfi_why) under the
 * noise `n` (a command's --noise), kept in js->noise. Returns 0 or
 * PFI_ENOMEM.
 */
int pfi_jobset_set_noise(struct pfi_jobset *js, const struct pfi_noise *n,
                         struct pfi_error *err);

/*
 * The jobs of `src` with keep[i] set, in their order, as a set of their
 * own (curves copied; the features borrowed from src, which must outlive
 * dst). Release dst with pfi_jobset_release(). PFI_ENOMEM.
 */
int pfi_jobset_subset(const struct pfi_jobset *src, const unsigned char *keep,
                      struct pfi_jobset *dst, struct pfi_error *err);

/* The provenance of the whole set as a word (pfi_provenance_name). */
const char *pfi_jobset_provenance(const struct pfi_jobset *js);

/* Fails (PFI_EINVAL without a features file; PFI_EPARSE naming the
 * features file, the first jobs and the count) when a job lacks features.
 * `why` says what needs them. */
int pfi_jobset_require_features(const struct pfi_jobset *js, const char *why,
                                struct pfi_error *err);

/*
 * GPU count of job i: the `gpus` column of its features row when the
 * features have one, else the curves' `gpus`. A count is a whole number
 * from 1 to 1e9; anything else is PFI_EPARSE at the cell. No count at all
 * is PFI_ENOTFOUND naming the job.
 */
int pfi_jobset_gpus(const struct pfi_jobset *js, size_t i, int *gpus,
                    struct pfi_error *err);

/* ---- PFI estimates --------------------------------------------------------
 */

enum pfi_holdout {
  PFI_HOLDOUT_NONE = 0, /* in sample: one fit on every fitted job */
  PFI_HOLDOUT_JOB,      /* leave-one-out */
  PFI_HOLDOUT_CLUSTER   /* leave-one-cluster-out, clusters below */
};

struct pfi_estimate_opts {
  int true_pfi; /* 1: the curves' own ratio PFI, no model */
  /* A model to predict with (not owned); NULL: fit one on `features`. */
  const struct pfi_model *model;
  const char *features;     /* predictors; NULL: pfi_default_model_features */
  enum pfi_holdout holdout; /* for a fitted model */
  struct pfi_clusters clusters;
  /* Jobs the model is fitted on (cs.n flags, 1: fit on it; NULL: all).
   * Every job gets an estimate: a job not fitted on is predicted by the
   * model fitted on the others. */
  const unsigned char *fit_on;
};

/* Defaults: a model on pfi_default_model_features fitted in sample on
 * every job, clusters by pfi_clusters_init(). */
void pfi_estimate_opts_init(struct pfi_estimate_opts *o);

/*
 * PFI of every job into est[cs.n] by `o`. A model needs features for every
 * job (PFI_EPARSE otherwise) and at least 3 fitted jobs with a defined PFI
 * (PFI_EINVAL); an estimate that is not finite (the model's terms
 * overflow) is PFI_EPARSE at the job's features line. With true_pfi a job
 * whose ratio PFI is undefined (docs/index-and-stats.md: the cap never
 * bound, or throughput never fell beyond the noise) gets PFI 0, the least
 * flexible, in every command alike (allocate, capacity, simulate, replay);
 * pfi_jobset_undefined_note() names those jobs and their reasons. Returns
 * 0 or the error.
 */
int pfi_jobset_estimate(const struct pfi_jobset *js,
                        const struct pfi_estimate_opts *o, double *est,
                        struct pfi_error *err);

/* Why job i's ratio PFI is undefined: pfi_index_undefined_reason() of its
 * index ("the cap never bound", ...); "" when it is defined. */
const char *pfi_jobset_undefined_reason(const struct pfi_jobset *js, size_t i);

/* The count of jobs whose ratio PFI is undefined; `buf` (n bytes) gets the
 * first three as "JOB (reason), ...; noise NOISE" (pfi_noise_describe() of
 * js->noise; "" when none). */
size_t pfi_jobset_undefined_note(const struct pfi_jobset *js, char *buf,
                                 size_t n);

/*
 * Each job's PFI predicted by `m` from its features row, with the 95 %
 * prediction interval of pfi_model_predict_interval() (model.h): est, lo,
 * hi (cs.n each). *approx (may be NULL) is 1 when the model has no
 * covariance and the interval is the residual-only one. Errors: a job
 * without features (PFI_EPARSE), a missing feature column, a model
 * without standard errors (PFI_EINVAL).
 */
int pfi_jobset_predict_interval(const struct pfi_jobset *js,
                                const struct pfi_model *m, double *est,
                                double *lo, double *hi, int *approx,
                                struct pfi_error *err);

/* Fits a model on `features` (NULL: the default) to the true PFI of the
 * jobs that have one and a features row. Release with pfi_model_release(). */
int pfi_jobset_fit_model(const struct pfi_jobset *js, const char *features,
                         struct pfi_model *m, struct pfi_error *err);

/* ---- fits evaluated in and out of sample ----------------------------------
 */

/*
 * The rows a model is fitted and evaluated on, with their LOCO folds. From
 * the curves: jobs with a features row and a defined PFI (counted in
 * no_features and undefined otherwise); from a PFI column of the features
 * (`pfi_column`): every features row.
 */
struct pfi_fitrows {
  size_t n;
  size_t *row;  /* features rows */
  size_t *job;  /* curve index of each row ((size_t)-1 with a PFI column) */
  double *y;    /* PFI */
  size_t *fold; /* LOCO fold of each row, 0..nfolds-1 */
  size_t nfolds;
  const char **fold_name; /* nfolds names (static or in the table) */
  size_t *fold_n;         /* rows per fold */
  char loco_why[160];     /* why LOCO is undefined, when nfolds < 2 */
  struct pfi_clusters clusters;
  size_t no_features, undefined, no_curve;
};

/*
 * Builds the rows from `js` (`select`: cs.n flags, NULL: every job; with
 * `pfi_column` the features rows, select ignored). A named cluster column
 * that is absent is PFI_EPARSE; pooled without arch and task is
 * PFI_EPARSE; the default without them leaves LOCO undefined (loco_why).
 * Release with pfi_fitrows_release().
 */
int pfi_fitrows_build(const struct pfi_jobset *js, const char *pfi_column,
                      const unsigned char *select,
                      const struct pfi_clusters *clusters,
                      struct pfi_fitrows *r, struct pfi_error *err);
void pfi_fitrows_release(struct pfi_fitrows *r);

enum { PFI_EVAL_LOO = 1, PFI_EVAL_LOCO = 2 };

struct pfi_fit_result {
  int ok;             /* 0: a predictor is absent (see absent) */
  char absent[300];   /* absent predictors, comma-separated */
  struct pfi_model m; /* in-sample fit; release with pfi_fit_result_release */
  struct pfi_eval loo, loco; /* why says "not requested" when not asked */
};

/*
 * Fits the k predictors `exprs` on the rows (in sample) and evaluates the
 * ones in `what` (PFI_EVAL_LOO | PFI_EVAL_LOCO). `pred_loo`, `pred_loco`
 * (r->n each, may be NULL) receive the out-of-sample predictions. A
 * predictor absent from the features is not an error: res->ok stays 0.
 * Returns 0 or an error (PFI_ENOMEM, a fit that fails).
 */
int pfi_fitrows_evaluate(const struct pfi_features *f,
                         const struct pfi_fitrows *r, const char *const *exprs,
                         size_t k, unsigned what, struct pfi_fit_result *res,
                         double *pred_loo, double *pred_loco,
                         struct pfi_error *err);
void pfi_fit_result_release(struct pfi_fit_result *res);

/* ---- allocation inputs ----------------------------------------------------
 */

/*
 * What the strategies of alloc.h read, built from a job set for the
 * strategies in a mask (1u << enum pfi_strategy): the allocation problem of
 * every curve; PFI estimates for pfi-aware and pfi-curve (by `est` opts);
 * the DRAM copy product for dram-copy; the MoE fine-tuning flags for
 * moe-ft-weighted; with `need_mix`, each job's fine-tuning flag and GPU
 * count for a production mix.
 */
struct pfi_jobset_inputs {
  struct pfi_problem prob;
  struct pfi_alloc_inputs in; /* points into the arrays below */
  double *pfi;                /* NULL when not needed */
  double *dram_copy;
  int *moe_ft;
  int *is_ft; /* need_mix */
  int *gpus;  /* need_mix */
};

/*
 * Fills `a` (release with pfi_jobset_inputs_release(), also after a
 * failure). Fails on the first missing or bad input: features a strategy
 * needs, a PFI the estimate cannot give, totals beyond the floating-point
 * range (PFI_EPARSE naming the curves file).
 */
int pfi_jobset_inputs_build(const struct pfi_jobset *js, unsigned strategies,
                            int need_mix, const struct pfi_estimate_opts *est,
                            struct pfi_jobset_inputs *a, struct pfi_error *err);
void pfi_jobset_inputs_release(struct pfi_jobset_inputs *a);

/*
 * The problem the strategies solve under objective `o` (objective.h) from
 * `raw`, the job set's own problem (one job per curve, as
 * pfi_jobset_inputs_build makes it): pfi_objective_problem() with each
 * job's GPU count by pfi_jobset_gpus() (read only for the work objective;
 * a job without one counts as unknown), T_i its throughput at its highest
 * cap, its name in messages. `out` initialized by the caller.
 */
int pfi_jobset_objective_problem(const struct pfi_jobset *js,
                                 const struct pfi_objective *o,
                                 const struct pfi_problem *raw,
                                 struct pfi_problem *out, int *gpus_known,
                                 struct pfi_error *err);

/* Fails (PFI_EPARSE, naming the curves file) when the uncapped powers or
 * the throughputs of `p`, summed, exceed the floating-point range. */
int pfi_jobset_check_totals(const struct pfi_jobset *js,
                            const struct pfi_problem *p, struct pfi_error *err);

/* ---- the population compared with the paper -------------------------------
 */

/*
 * Which of the paper's published groups the jobs are: the 25 H200
 * headline groups (data/paper/h200_headline_groups.csv) are the population
 * of every published headline number (the predictor ablation, Figure 8);
 * the held-out and H100 groups are not. `paper` is 1 when the jobs are
 * exactly the 25 headline groups (each once), so that a published number
 * may be shown beside ours.
 */
struct pfi_population {
  size_t n;              /* jobs */
  size_t headline;       /* of them, headline groups */
  size_t headline_total; /* headline groups the paper has (25) */
  size_t other;          /* jobs that are not headline groups */
  int paper;             /* the paper's population */
};

/* Returns 0, or PFI_ENOTFOUND when the published table is not installed
 * (p->paper 0), or a read error. `jobs` are the job ids. */
int pfi_population_of(const char *const *jobs, size_t n,
                      struct pfi_population *p, struct pfi_error *err);
int pfi_jobset_population(const struct pfi_jobset *js, struct pfi_population *p,
                          struct pfi_error *err);

/* A phrase saying which population was used: "the paper's 25 H200
 * headline groups" or "35 jobs, 10 of them not among the paper's 25 H200
 * headline groups". Written into buf (n bytes); returns buf. */
const char *pfi_population_describe(const struct pfi_population *p, char *buf,
                                    size_t n);

/*
 * A headline number the paper gives only in its text or figures, from
 * data/paper/published_headlines.csv (columns metric, value, unit,
 * population, where): "heldout_r2", "h100_transfer_r2",
 * "gap_closed_pct_production_30", "tokens_over_equal_production_30".
 * Returns 0 with *value, PFI_ENOTFOUND when the file or the metric is
 * absent, or a read error (PFI_EPARSE at a bad value).
 */
int pfi_paper_headline(const char *metric, double *value,
                       struct pfi_error *err);

/* Path of a data file (data/REL) when readable, for defaults; else NULL. */
const char *pfi_data_default(const char *rel, char *buf, size_t n);

#endif
