/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The objective's options, shared by the commands that allocate (allocate,
 * capacity, simulate, replay): --objective, --normalize (an alias of
 * --objective jobs), --weights FILE and --min-share R. The commands only
 * parse and pass; the objective itself is include/pfi/objective.h.
 */
#ifndef PFI_CLI_OBJECTIVE_OPT_H
#define PFI_CLI_OBJECTIVE_OPT_H

#include "opt.h"
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/objective.h"

#define OBJ_OPT_HELP_OBJECTIVE                                                 \
  "what the allocation maximizes: work (default: each job's share of its "     \
  "uncapped throughput x its GPUs, unit-free), throughput (the sum of raw "    \
  "throughput, the paper's) or jobs (each job counts once)"

/* The four rows of an option table, bound to `ob` (a struct obj_opt *),
 * for pfi_opt_parse(). */
#define OBJ_OPTS_BOUND(ob)                                                     \
  PFI_OPT_CALLBACK("objective", ob, obj_opt_cb, "O", OBJ_OPT_HELP_OBJECTIVE),  \
      {.lng = "normalize",                                                     \
       .arg = PFI_ARG_NONE,                                                    \
       .help = "the same as --objective jobs",                                 \
       .type = PFI_OT_CALLBACK,                                                \
       .var = ob,                                                              \
       .cb = obj_opt_cb},                                                      \
      PFI_OPT_CALLBACK(                                                        \
          "weights", ob, obj_opt_cb, "FILE",                                   \
          "per-job weights (a priority, a price per unit): CSV with columns "  \
          "job and weight (the curves file itself when it has them); they "    \
          "scale any objective"),                                              \
      PFI_OPT_CALLBACK(                                                        \
          "min-share", ob, obj_opt_cb, "R",                                    \
          "every job keeps at least R (0.5 or 50%) of its uncapped "           \
          "throughput")

struct pfi_opt;

/* The words of --curve (monotone, raw: enum pfi_curve_fit), for the
 * deciding commands' choice rows. */
extern const struct pfi_opt_word obj_opt_curve_fits[];
/* The rows' parser (pfi_opt_cb): row o's var is the struct obj_opt. */
int obj_opt_cb(const struct pfi_opt *o, const char *v, char *why, size_t n);

struct obj_opt {
  struct pfi_objective obj;
  int kind_given;      /* --objective or --normalize given */
  const char *weights; /* --weights FILE */
  double *w;           /* weights read (owned) */
};

void obj_opt_init(struct obj_opt *o);
void obj_opt_release(struct obj_opt *o);


/* Reads the weights file, if any, for the n jobs named `jobs`. */
int obj_opt_load(struct obj_opt *o, const char *const *jobs, size_t n,
                 struct pfi_error *err);

struct pfi_jobset;
struct pfi_curveset;

/*
 * The problem to solve under the objective: pfi_jobset_objective_problem
 * on the raw problem of a job set, or pfi_capacity_problem_objective on a
 * curve set; reads the weights file first.
 * `out` initialized by the caller.
 */
int obj_opt_problem_js(struct obj_opt *o, const struct pfi_jobset *d,
                       const struct pfi_problem *raw, struct pfi_problem *out,
                       int *gpus_known, struct pfi_error *err);
int obj_opt_problem_cs(struct obj_opt *o, const struct pfi_curveset *cs,
                       struct pfi_problem *out, int *gpus_known,
                       struct pfi_error *err);

#endif
