/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi capacity`: how much power the jobs can shed for how much throughput
 * lost, by strategy and the exact oracle (capacity.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/fmt.h"
#include "curve_note.h"
#include "objective_opt.h"
#include "opt.h"
#include "pfi/capacity.h"
#include "pfi/index.h"
#include "pfi/jobcurves.h"
#include "pfi/jobset.h"
#include "pfi/model.h"
#include "pfi/monotone.h"
#include "pfi/report.h"

/* The options, bound to these (src/base/opt.h). */
static const char *curves, *strat_s, *map, *unit, *plot_path, *features,
    *model_path, *pfeat;
static int true_pfi, curve_fit, fmt;
static unsigned long steps, draws, seed;
static struct obj_opt ob;


static struct noise_opt nopt; /* --noise */
static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("curves", 0, &curves, "FILE",
                   "curves CSV (job, cap_w, power_w, tokens_per_s)"),
    PFI_OPT_FLAG("true-pfi", 0, &true_pfi,
                 "PFI of pfi-aware / pfi-curve: each curve's own ratio PFI, "
                 "with its Monte Carlo 95 % interval propagated: the loss and "
                 "the quote are given as the range over runs with every PFI "
                 "at its interval's ends. A job without a ratio PFI (no cap "
                 "bound beyond noise) gets PFI 0: nothing is taken from it "
                 "first."),
    PFI_OPT_STRING("features", 0, &features, "FILE",
                   "PFI of pfi-aware / pfi-curve estimated from these "
                   "telemetry features (a job column) by --model, or by a "
                   "model on --pfi-features fitted to the curves' own PFI; the "
                   "model's 95 % prediction interval is propagated as with "
                   "--true-pfi"),
    PFI_OPT_STRING("model", 0, &model_path, "FILE",
                   "a model saved by pfi fit --output"),
    PFI_OPT_STRING("pfi-features", 0, &pfeat, "L",
                   "features of the fitted model (comma-separated; default "
                   "dram_copy_product)"),
    PFI_OPT_STRING("strategy", 0, &strat_s, "LIST",
                   "comma-separated strategies (oracle, equal, pfi-aware, "
                   "pfi-curve)"),
    OBJ_OPTS_BOUND(&ob),
    {.lng = "steps", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "ladder steps from no cut to the largest", .type = PFI_OT_ULONG,
     .var = &steps, .lo = 1, .hi = 10000, .def = "20"},
    {.lng = "ci", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "Monte Carlo draws of the PFI interval", .type = PFI_OT_ULONG,
     .var = &draws, .lo = 1, .hi = 1000000, .def = "2000"},
    {.lng = "seed", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "seed of the draws", .type = PFI_OT_ULONG, .var = &seed,
     .def = "1"},
    PFI_OPT_STRING("map", 0, &map, "MAP",
                   "curves column mapping (docs/formats.md)"),
    PFI_OPT_STRING("unit", 0, &unit, "NAME",
                   "the throughput's unit in the output (default: as read, "
                   "e.g. tokens/s or 1/time_per_epoch)"),
    PFI_OPT_STRING("plot", 0, &plot_path, "FILE.svg",
                   "draw loss against shed (needs gnuplot)"),
    {.lng = "curve", .arg = PFI_ARG_REQ, .argname = "FIT",
     .help = "monotone (a curve whose power or throughput falls as the cap "
             "rises is decided on its monotone fit; the PFI stays the raw "
             "points') or raw",
     .type = PFI_OT_CHOICE, .var = &curve_fit, .words = obj_opt_curve_fits,
     .def = "monotone"},
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    NOISE_OPT_BOUND(&nopt),
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_REQUIRED("curves"), PFI_RULE_EXCLUSIVE("features", "true-pfi"),
    PFI_RULE_NEEDS("model", "features"),
    PFI_RULE_NEEDS("pfi-features", "features"),
    PFI_RULE_EXCLUSIVE("model", "pfi-features"), PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "capacity",
    "usage: pfi capacity --curves FILE [--true-pfi | --features FILE\n"
    "                    [--model MODEL.json | --pfi-features L]]\n"
    "                    [--strategy LIST]\n"
    "                    [--objective O] [--weights FILE] [--min-share R]\n"
    "                    [--steps N] [--ci N] [--seed S]\n"
    "                    [--map MAP] [--unit NAME] [--plot FILE.svg]\n"
    "                    [--format F]\n",
    "The flexibility capacity of the jobs of a curves file: the power the\n"
    "cluster sheds (W and % of the jobs' total uncapped power) against the\n"
    "throughput it loses (absolute and %), from no cut to the largest\n"
    "feasible one (every job at its lowest measured cap), for each strategy;\n"
    "and the quote for a utility: the power shed at <= 1, 2, 5, 10, 20 %\n"
    "throughput loss (the largest shed below which the loss never exceeds\n"
    "it). Strategies as in pfi allocate; default oracle,equal, and with\n"
    "--true-pfi or --features also pfi-aware,pfi-curve.\n"
    "\n"
    "Throughput lost is the objective's (docs/predict-allocate.md): by\n"
    "default the work kept, each job counted by its share of its uncapped\n"
    "throughput times its GPUs (curves' gpus column; without one, each job\n"
    "once), so the quote does not depend on the unit a job reports in;\n"
    "--objective throughput sums raw throughput (the paper's), --objective\n"
    "jobs (or --normalize) counts each job once.\n"
    "\n"
    "With --features, each job's PFI is the model's prediction from its\n"
    "features and its interval the 95 % prediction interval\n"
    "yhat +- t(0.975, n-k-1) sqrt(s^2 + x0' C x0) (s the residual standard\n"
    "error, C the coefficients' covariance; docs/capacity.md).\n"
    "\n"
    "No event length or tiers here: for the quote for an event of a given\n"
    "length with each job kept within its flexible tier (--duration,\n"
    "--notice, --tiers, --contract), see pfi grid capacity.\n",
    opts,
    "Exit status 0 ok, 1 run-time failure, 2 bad usage or bad input.\n",
    0,
    NULL,
    rules,
    0,
    0,
    NULL};

#define MAXS PFI_STRAT__COUNT

/* A percentage for the table: no "-0.00" for a loss of -1e-12. */
static double pct(double frac) {
  double v = 100 * frac;
  return fabs(v) < 5e-7 ? 0.0 : v;
}

static int plot(const char *path, const struct pfi_capacity *cap, size_t ns,
                const char *unit, struct pfi_error *err) {
  struct pfi_series ser[2 * MAXS];
  double *buf = malloc(ns * cap[0].n * 4 * sizeof *buf + 1);
  if (!buf)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  size_t nser = pfi_capacity_series(cap, ns, buf, ser);
  char ylabel[600];
  snprintf(ylabel, sizeof ylabel, "throughput lost, %% (%s)", unit);
  struct pfi_panel pan;
  pfi_panel_init(&pan);
  pan.title = "Flexibility capacity";
  pan.xlabel = "power shed, % of uncapped";
  pan.ylabel = ylabel;
  pan.series = ser;
  pan.nseries = nser;
  pan.key = 1;
  pan.key_pos = "top left";
  struct pfi_figure f = {720, 440, 0, 1, 1, &pan, 1};
  int rc = pfi_figure_write(&f, path, err);
  free(buf);
  return rc;
}

/* One run: the curves, the PFI the strategies read, the problem and each
 * strategy's capacity. */
struct run {
  int strat[MAXS];
  size_t ns;
  int have_pfi; /* --true-pfi or --features */
  struct pfi_jobcurves d;
  struct pfi_problem p;
  struct pfi_capacity cap[MAXS];
  struct pfi_jobset js;
  struct pfi_model model;
  int have_js, have_model;
  int approx; /* the prediction interval is residual only */
  double *est;
  const double *pfi, *pfi_lo, *pfi_hi; /* NULL without PFI */
  char tunit[200], odesc[300];
};

/* The input files and --strategies. 0 or PFI_EXIT_USAGE. */
static int check_options(struct run *r) {
  if (pfi_cli_input("--curves", curves) ||
      pfi_cli_input("--features", features) ||
      pfi_cli_input("--model", model_path))
    return PFI_EXIT_USAGE;
  r->have_pfi = true_pfi || features != NULL;
  if (pfi_cli_parse_strategies(strat_s, r->have_pfi, r->strat, &r->ns,
                               "capacity") < 0)
    return PFI_EXIT_USAGE;
  for (size_t k = 0; k < r->ns; k++)
    if ((r->strat[k] == PFI_STRAT_PFI_AWARE ||
         r->strat[k] == PFI_STRAT_PFI_CURVE) &&
        !r->have_pfi)
      return pfi_cli_usage("capacity",
                           "strategy %s needs each job's PFI: add --true-pfi "
                           "to use the curves' own PFI, or --features FILE "
                           "(with --model) to estimate it",
                           pfi_strategy_name(r->strat[k]));
    else if (r->strat[k] == PFI_STRAT_DRAM_COPY ||
             r->strat[k] == PFI_STRAT_MOE_FT_WEIGHTED)
      return pfi_cli_usage("capacity",
                           "strategy %s needs a features file, which "
                           "pfi capacity does not read; use pfi allocate",
                           pfi_strategy_name(r->strat[k]));
  return 0;
}

/* Estimated PFI (--features): the model's prediction and its prediction
 * interval (pfi_jobset_predict_interval). 0 or -1 with err set. */
static int load_estimates(struct run *r, const struct pfi_noise *nz,
                          struct pfi_error *err) {
  size_t n = r->d.cs.n;
  r->have_js = 1; /* released also after a failed load */
  if (pfi_jobset_load(&r->js, curves, map, features, err) < 0)
    return -1;
  if (nz && pfi_jobset_set_noise(&r->js, nz, err) < 0)
    return -1;
  if (r->js.cs.n != n)
    return pfi_error_set(err, PFI_EINVAL, "the curves read differently");
  if ((model_path ? pfi_model_load(&r->model, model_path, err)
                  : pfi_jobset_fit_model(&r->js, pfeat, &r->model, err)) < 0)
    return -1;
  r->have_model = 1;
  if (!(r->est = calloc(3 * n + 1, sizeof *r->est)))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (pfi_jobset_predict_interval(&r->js, &r->model, r->est, r->est + n,
                                  r->est + 2 * n, &r->approx, err) < 0)
    return -1;
  r->pfi = r->est;
  r->pfi_lo = r->est + n;
  r->pfi_hi = r->est + 2 * n;
  return 0;
}

/* The curves, the PFI and the problem as the objective counts it; then
 * each strategy's capacity. 0 or -1 with err set. */
static int compute(struct run *r, struct pfi_error *err) {
  struct pfi_noise nz = nopt.nz;
  if (pfi_jobcurves_load_noise(&r->d, curves, map, true_pfi, draws, seed,
                               nopt.given ? &nz : NULL, err) < 0)
    return -1;
  r->pfi = r->d.pfi;
  r->pfi_lo = r->d.pfi_lo;
  r->pfi_hi = r->d.pfi_hi;
  if (features && load_estimates(r, nopt.given ? &nz : NULL, err) < 0)
    return -1;
  if (!unit)
    unit = r->d.cs.unit ? r->d.cs.unit : "tokens/s";
  r->p.curve_fit = curve_fit;
  int gpus_known = 0;
  if (obj_opt_problem_cs(&ob, &r->d.cs, &r->p, &gpus_known, err) < 0)
    return -1;
  curve_note("capacity", &r->d.cs, curve_fit);
  pfi_objective_unit(&ob.obj, gpus_known, unit, r->tunit, sizeof r->tunit);
  pfi_objective_describe(&ob.obj, gpus_known, r->odesc, sizeof r->odesc);
  struct pfi_alloc_inputs in = {r->pfi, NULL, NULL};
  for (size_t k = 0; k < r->ns; k++)
    if (pfi_capacity_compute(&r->p, (enum pfi_strategy)r->strat[k], &in,
                             r->pfi_lo, r->pfi_hi, steps, &r->cap[k],
                             err) < 0)
      return -1;
  return 0;
}

/* One strategy's ladder and quotes, as JSON. */
static json_t *json_strategy(const struct pfi_capacity *c) {
  json_t *e = json_object(), *lad = json_array(), *q = json_array();
  json_object_set_new(e, "strategy", json_string(pfi_strategy_name(c->strategy)));
  json_object_set_new(e, "interval", json_boolean(c->has_interval));
  for (size_t i = 0; i < c->n; i++) {
    const struct pfi_capacity_point *pt = &c->pts[i];
    json_array_append_new(
        lad, json_pack("{sfsfsfsfsfsfsf}", "shed_w", pt->shed_w, "shed_frac",
                       pt->shed_frac, "tokens", pt->tokens, "loss", pt->loss,
                       "loss_frac", pt->loss_frac, "loss_lo_frac",
                       pt->loss_lo_frac, "loss_hi_frac", pt->loss_hi_frac));
  }
  for (int i = 0; i < PFI_CAPACITY_NQUOTE; i++)
    json_array_append_new(
        q, json_pack("{sfsfsfsf}", "max_loss_frac", pfi_capacity_quotes[i],
                     "shed_w", c->quote_w[i], "shed_lo_w", c->quote_lo_w[i],
                     "shed_hi_w", c->quote_hi_w[i]));
  json_object_set_new(e, "ladder", lad);
  json_object_set_new(e, "quotes", q);
  return e;
}

static int print_json(const struct run *r) {
  const struct pfi_capacity *cap = r->cap;
  json_t *j = json_object(), *arr = json_array();
  json_object_set_new(j, "curves", pfi_cli_json_str(curves));
  json_object_set_new(j, "source",
                      json_string(pfi_jobcurves_provenance(&r->d)));
  json_object_set_new(j, "jobs", json_integer((json_int_t)r->d.cs.n));
  json_object_set_new(j, "unit", pfi_cli_json_str(r->tunit));
  json_object_set_new(j, "normalized",
                      json_boolean(ob.obj.kind == PFI_OBJ_JOBS));
  json_object_set_new(j, "objective",
                      json_string(pfi_objective_name(ob.obj.kind)));
  json_object_set_new(j, "objective_text", json_string(r->odesc));
  json_object_set_new(j, "uncapped_w", json_real(cap[0].uncapped_w));
  json_object_set_new(j, "floor_w", json_real(cap[0].floor_w));
  json_object_set_new(j, "uncapped_tokens", json_real(cap[0].uncapped_tokens));
  json_object_set_new(j, "pfi_undefined",
                      json_integer((json_int_t)r->d.n_undefined));
  json_object_set_new(
      j, "pfi_source",
      json_string(features   ? (r->approx ? "model prediction, residual-only "
                                            "interval (no covariance)"
                                          : "model prediction interval")
                  : true_pfi ? "curves (Monte Carlo interval)"
                             : "none"));
  if (r->pfi) {
    json_t *jp = json_array();
    for (size_t i = 0; i < r->d.cs.n; i++)
      json_array_append_new(
          jp, json_pack("{s:o,s:f,s:f,s:f}", "job",
                        pfi_cli_json_str(r->d.cs.c[i].job), "pfi", r->pfi[i],
                        "pfi_lo", r->pfi_lo[i], "pfi_hi", r->pfi_hi[i]));
    json_object_set_new(j, "jobs_pfi", jp);
  }
  for (size_t k = 0; k < r->ns; k++)
    json_array_append_new(arr, json_strategy(&cap[k]));
  json_object_set_new(j, "strategies", arr);
  return pfi_cli_print_json(j) ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}

/* Ladder rows and quote rows in one table; a column a kind of row does
 * not have is blank. */
enum { C_KIND, C_STRAT, C_SHED, C_SFRAC, C_LOSS, C_LFRAC, C_LLO, C_LHI,
       C_SLO, C_SHI, C_OBJ, C_N };

/* One strategy's rows of the CSV table. */
static void csv_rows(struct pfi_restab *tab, const struct pfi_capacity *c) {
  const char *sn = pfi_strategy_name(c->strategy);
  for (size_t i = 0; i < c->n; i++) {
    const struct pfi_capacity_point *pt = &c->pts[i];
    pfi_restab_row(tab);
    pfi_restab_text(tab, C_KIND, "ladder");
    pfi_restab_text(tab, C_STRAT, sn);
    pfi_restab_num(tab, C_SHED, pt->shed_w);
    pfi_restab_num(tab, C_SFRAC, pt->shed_frac);
    pfi_restab_num(tab, C_LOSS, pt->loss);
    pfi_restab_num(tab, C_LFRAC, pt->loss_frac);
    pfi_restab_num(tab, C_LLO, pt->loss_lo_frac);
    pfi_restab_num(tab, C_LHI, pt->loss_hi_frac);
    pfi_restab_blank(tab, C_SLO);
    pfi_restab_blank(tab, C_SHI);
    pfi_restab_text(tab, C_OBJ, pfi_objective_name(ob.obj.kind));
  }
  for (int i = 0; i < PFI_CAPACITY_NQUOTE; i++) {
    pfi_restab_row(tab);
    pfi_restab_text(tab, C_KIND, "quote");
    pfi_restab_text(tab, C_STRAT, sn);
    pfi_restab_num(tab, C_SHED, c->quote_w[i]);
    pfi_restab_num(tab, C_SFRAC, c->quote_w[i] / c->uncapped_w);
    pfi_restab_blank(tab, C_LOSS);
    pfi_restab_num(tab, C_LFRAC, pfi_capacity_quotes[i]);
    pfi_restab_blank(tab, C_LLO);
    pfi_restab_blank(tab, C_LHI);
    pfi_restab_num(tab, C_SLO, c->quote_lo_w[i]);
    pfi_restab_num(tab, C_SHI, c->quote_hi_w[i]);
    pfi_restab_text(tab, C_OBJ, pfi_objective_name(ob.obj.kind));
  }
}

static int print_csv(const struct run *r) {
#define G10(n)                                                                 \
  { .name = n, .kind = PFI_RESTAB_NUM, .style = 'g', .prec = 10 }
  static const struct pfi_restab_col cols[C_N] = {
      [C_KIND] = {.name = "kind", .kind = PFI_RESTAB_TEXT},
      [C_STRAT] = {.name = "strategy", .kind = PFI_RESTAB_TEXT},
      [C_SHED] = G10("shed_w"),
      [C_SFRAC] = G10("shed_frac"),
      [C_LOSS] = G10("loss"),
      [C_LFRAC] = G10("loss_frac"),
      [C_LLO] = G10("loss_lo_frac"),
      [C_LHI] = G10("loss_hi_frac"),
      [C_SLO] = G10("shed_lo_w"),
      [C_SHI] = G10("shed_hi_w"),
      [C_OBJ] = {.name = "objective", .kind = PFI_RESTAB_TEXT},
  };
#undef G10
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, C_N);
  for (size_t k = 0; k < r->ns && !tab.failed; k++)
    csv_rows(&tab, &r->cap[k]);
  int status = pfi_cli_print_table(&tab, PFI_FMT_CSV) != PFI_EXIT_OK
                   ? PFI_EXIT_FAIL
                   : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  return status;
}

/* The lines above the tables: the jobs, the objective, where the PFI comes
 * from and the jobs without one. */
static void print_head(const struct run *r) {
  const struct pfi_jobcurves *d = &r->d;
  const struct pfi_capacity *cap = r->cap;
  printf("capacity of %zu jobs (%s, %s): uncapped %.1f W, floor %.1f W "
         "(largest cut %.1f %%)\n",
         d->cs.n, curves, pfi_jobcurves_provenance(d), cap[0].uncapped_w,
         cap[0].floor_w, 100 * (1 - cap[0].floor_w / cap[0].uncapped_w));
  printf("%s\n", r->odesc);
  printf("throughput %.6g %s uncapped\n", cap[0].uncapped_tokens, r->tunit);
  if (features)
    printf("PFI of pfi-aware and pfi-curve: %s on %s, with its 95 %% "
           "prediction interval%s\n",
           model_path ? model_path : "a model fitted to the curves' PFI",
           features,
           r->approx ? " (residual only: the model has no covariance)" : "");
  if (true_pfi) {
    char nz[200];
    printf("PFI and intervals at the noise %s\n",
           pfi_noise_describe(&d->noise, nz, sizeof nz));
  }
  if (true_pfi && d->n_undefined) {
    /* The first three with the index's reason. */
    printf("%zu jobs have no ratio PFI, counted as PFI 0 (the least "
           "flexible) by pfi-aware and pfi-curve:",
           d->n_undefined);
    for (size_t i = 0, k = 0; i < d->cs.n && k < 4; i++) {
      if (d->pfi_ok[i])
        continue;
      if (k++ == 3) {
        printf(", ...");
        break;
      }
      const char *why = pfi_index_undefined_reason(d->pfi_why[i]);
      printf("%s %s (%s)", k > 1 ? "," : "", d->cs.c[i].job,
             why && why[0] ? why : "no capped point beyond the noise");
    }
    printf("\n");
  }
}

/* The two tables, a column per strategy: the power each sheds at a
 * throughput loss (qt), and the loss at each step of power shed (lt). */
static void fill_tables(const struct run *r, struct pfi_restab *qt,
                        struct pfi_restab *lt) {
  const struct pfi_capacity *cap = r->cap;
  char w[PFI_FMT_MAX], lo[PFI_FMT_MAX], hi[PFI_FMT_MAX];
  for (int i = 0; i < PFI_CAPACITY_NQUOTE; i++) {
    pfi_restab_row(qt);
    pfi_restab_textf(qt, 0, "%g %%", 100 * pfi_capacity_quotes[i]);
    for (size_t k = 0; k < r->ns; k++) {
      pfi_restab_fmt_sig(w, cap[k].quote_w[i], 3);
      if (cap[k].has_interval) {
        pfi_restab_fmt_sig(lo, cap[k].quote_lo_w[i], 3);
        pfi_restab_fmt_sig(hi, cap[k].quote_hi_w[i], 3);
        pfi_restab_textf(qt, 1 + k, "%s W [%s, %s]", w, lo, hi);
      } else {
        pfi_restab_textf(qt, 1 + k, "%s W (%.1f %%)", w,
                         100 * cap[k].quote_w[i] / cap[k].uncapped_w);
      }
    }
  }
  for (size_t i = 0; i < cap[0].n; i++) {
    pfi_restab_row(lt);
    pfi_restab_fmt_sig(w, cap[0].pts[i].shed_w, 3);
    pfi_restab_textf(lt, 0, "%s W (%.1f %%)", w, 100 * cap[0].pts[i].shed_frac);
    for (size_t k = 0; k < r->ns; k++) {
      const struct pfi_capacity_point *pt = &cap[k].pts[i];
      if (cap[k].has_interval)
        pfi_restab_textf(lt, 1 + k, "%.2f [%.2f, %.2f]", pct(pt->loss_frac),
                         pct(pt->loss_lo_frac), pct(pt->loss_hi_frac));
      else
        pfi_restab_textf(lt, 1 + k, "%.2f", pct(pt->loss_frac));
    }
  }
}

static int print_terminal(const struct run *r) {
  print_head(r);
  struct pfi_restab_col qc[1 + PFI_STRAT__COUNT], lc[1 + PFI_STRAT__COUNT];
  qc[0] = (struct pfi_restab_col){.name = "Y", .kind = PFI_RESTAB_TEXT};
  lc[0] = (struct pfi_restab_col){.name = "shed", .kind = PFI_RESTAB_TEXT};
  for (size_t k = 0; k < r->ns; k++)
    qc[1 + k] = lc[1 + k] =
        (struct pfi_restab_col){.name = pfi_strategy_name(r->cap[k].strategy),
                                .kind = PFI_RESTAB_TEXT,
                                .align = PFI_RESTAB_RIGHT};
  struct pfi_restab qt, lt;
  pfi_restab_init(&qt, qc, 1 + r->ns);
  pfi_restab_init(&lt, lc, 1 + r->ns);
  pfi_restab_title(&qt, r->have_pfi ? "power shed at <= Y % throughput loss "
                                      "[range over the PFI intervals]"
                                    : "power shed at <= Y % throughput loss");
  pfi_restab_title(&lt, "throughput lost, % of uncapped, by power shed");
  fill_tables(r, &qt, &lt);
  int status = PFI_EXIT_OK;
  putchar('\n');
  if (pfi_cli_print_table(&qt, PFI_FMT_TABLE) != 0)
    status = PFI_EXIT_FAIL;
  putchar('\n');
  if (pfi_cli_print_table(&lt, PFI_FMT_TABLE) != 0)
    status = PFI_EXIT_FAIL;
  pfi_restab_release(&qt);
  pfi_restab_release(&lt);
  return status;
}

int cmd_capacity(int argc, char **argv) {
  obj_opt_init(&ob);
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct run run, *r = &run;
  memset(r, 0, sizeof *r);
  int status = check_options(r);
  if (status)
    return status;
  struct pfi_error err;
  pfi_error_clear(&err);
  pfi_problem_init(&r->p);
  if (compute(r, &err) < 0 ||
      (plot_path && plot(plot_path, r->cap, r->ns, r->tunit, &err) < 0)) {
    status = pfi_cli_fail(&err);
  } else {
    status = fmt == PFI_FMT_JSON  ? print_json(r)
             : fmt == PFI_FMT_CSV ? print_csv(r)
                                  : print_terminal(r);
    if (fflush(stdout) != 0)
      status = PFI_EXIT_FAIL;
  }
  for (size_t k = 0; k < MAXS; k++)
    pfi_capacity_release(&r->cap[k]);
  pfi_problem_release(&r->p);
  obj_opt_release(&ob);
  pfi_jobcurves_release(&r->d);
  if (r->have_model)
    pfi_model_release(&r->model);
  if (r->have_js)
    pfi_jobset_release(&r->js);
  free(r->est);
  return status;
}
