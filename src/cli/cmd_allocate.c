/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi allocate`: split a cluster-wide power cut across jobs. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_plan.h"
#include "cli.h"
#include "curve_note.h"
#include "objective_opt.h"
#include "opt.h"
#include "pfi/alloc.h"
#include "pfi/jobset.h"
#include "pfi/monotone.h"
#include "pfi/objective.h"
#include "pfi/oracle.h"

/* The options, bound to these (src/base/opt.h). */
static const char *curves, *features, *cut_s, *strat_s, *model_path, *pfeat,
    *map, *plan_path, *gpu_map, *budget_s;
static int true_pfi, curve_fit, fmt;
static struct obj_opt ob;


static struct noise_opt nopt; /* --noise */
static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("curves", 0, &curves, "FILE",
                   "curves CSV (job, cap_w, power_w, tokens_per_s)"),
    PFI_OPT_STRING("features", 0, &features, "FILE",
                   "features CSV with a job column"),
    PFI_OPT_STRING("cut", 0, &cut_s, "R", "the cut: 0.3 or 30%"),
    PFI_OPT_STRING("budget", 0, &budget_s, "P",
                   "instead of --cut: the jobs' total power, 150kW, 2.5MW or "
                   "90000W"),
    {.lng = "strategy", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "one of the strategies above", .type = PFI_OT_STRING,
     .var = &strat_s, .def = "oracle"},
    PFI_OPT_STRING("model", 0, &model_path, "FILE",
                   "a model saved by pfi fit --output"),
    PFI_OPT_FLAG("true-pfi", 0, &true_pfi, "use the curves' own PFI"),
    PFI_OPT_STRING("pfi-features", 0, &pfeat, "L",
                   "features of the fitted model (comma-separated)"),
    PFI_OPT_STRING("map", 0, &map, "MAP",
                   "curves column mapping NAME=COLUMN,..."),
    PFI_OPT_STRING("plan", 0, &plan_path, "FILE",
                   "also write the cap plan (docs/plan.md) to FILE, for pfi "
                   "cap --plan FILE --db STORE"),
    PFI_OPT_STRING("gpu-map", 0, &gpu_map, "FILE",
                   "CSV job,gpu_ids (e.g. 0;1;2;3 or 0-3): each job's GPUs in "
                   "the plan"),
    {.lng = "curve", .arg = PFI_ARG_REQ, .argname = "FIT",
     .help = "monotone (a curve whose power or throughput falls as the cap "
             "rises is decided on its monotone fit; the PFI stays the raw "
             "points') or raw",
     .type = PFI_OT_CHOICE, .var = &curve_fit, .words = obj_opt_curve_fits,
     .def = "monotone"},
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    OBJ_OPTS_BOUND(&ob),
    NOISE_OPT_BOUND(&nopt),
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_REQUIRED("curves"), PFI_RULE_ONE_OF("cut", "budget"),
    PFI_RULE_NEEDS("gpu-map", "plan"), PFI_RULE_EXCLUSIVE("model", "true-pfi"),
    PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "allocate",
    "usage: pfi allocate --curves FILE (--cut R | --budget P) [--strategy S]\n"
    "                    [--objective O] [--weights FILE] [--min-share R]\n"
    "                    [--features FILE] [--model MODEL.json | --true-pfi]\n"
    "                    [--pfi-features LIST] [--map MAP] [--format F]\n"
    "                    [--plan FILE [--gpu-map FILE]]\n",
    "Splits a power cut across jobs. R is a fraction (0.3) or a percentage\n"
    "(30%) of the jobs' total uncapped power; the budget is (1 - R) times\n"
    "that total, met exactly. Each job stays within [power at its lowest\n"
    "measured cap, uncapped power]; a job that reaches its floor keeps it\n"
    "and the rest of its share goes to the others. A cut below the floors\n"
    "fails with 'infeasible by X W'. --budget P gives the total power\n"
    "instead.\n"
    "\n"
    "Objective (docs/predict-allocate.md): by default the work kept, each\n"
    "job counted by its share of its own uncapped throughput times its GPU\n"
    "count (features' or curves' gpus column; without any, each job once):\n"
    "no plan depends on the unit a job reports in. --objective throughput\n"
    "sums raw throughput (the paper's), --objective jobs counts each job\n"
    "once (--normalize is the same). --weights scales any of them per job;\n"
    "--min-share R keeps every job at R of its uncapped throughput or more.\n"
    "\n"
    "Strategies:\n"
    "  oracle           the exact maximum of the objective (default)\n"
    "  equal            every job loses the same fraction of its power\n"
    "  moe-ft-weighted  equal, but MoE fine-tuning jobs give twice as much\n"
    "                   (needs features with arch and task)\n"
    "  pfi-aware        reduction ~ P_max * PFI / T_max (PFI estimated)\n"
    "  dram-copy        reduction ~ DRAM copy product (uncalibrated)\n"
    "  pfi-curve        estimated PFI -> whole-curve model -> water-filling\n"
    "                   by marginal throughput per watt\n"
    "\n"
    "PFI estimates (pfi-aware, pfi-curve): from --model, else from a linear\n"
    "model on --pfi-features (default dram_copy_product) fitted on the\n"
    "given jobs' own PFI, as the paper does; --true-pfi uses the PFI of the\n"
    "curves themselves (for analysis).\n",
    opts,
    "Output: per job its power (W), the per-GPU cap that realizes it (W, by\n"
    "inverse interpolation of its cap-to-power points) and its throughput\n"
    "read off its curve; then totals. JSON keys: strategy, cut, budget_w,\n"
    "total_power_w, total_tokens_per_s, jobs [{job, power_w, cap_w,\n"
    "tokens_per_s, retained}], objective, objective_unit, value,\n"
    "value_uncapped, retained (the objective's value kept, fraction of\n"
    "uncapped). The CSV has a column objective. Exit status 0 ok, 1 run-time failure, 2 bad usage,\n"
    "bad input or an infeasible cut.\n",
    0,
    NULL,
    rules,
    0,
    0,
    NULL};

/* One allocation: the jobs, what the strategy reads, the budget and each
 * job's power. */
struct alloc {
  int s; /* the strategy */
  double cut, budget, hi; /* hi: the jobs' uncapped power, W */
  struct pfi_jobset d;
  struct pfi_jobset_inputs ai;
  struct pfi_model model;
  int have_model;
  struct pfi_problem vp; /* the values the strategies maximize */
  double *pw;            /* per job, W */
  /* Totals: power, throughput, the objective's value and its uncapped
   * value. */
  double tot_p, tot_t, tot_v, tot_vu;
  char vunit[160], odesc[300];
};

/* The input files, the strategy, --cut and --budget. 0 or
 * PFI_EXIT_USAGE. */
static int check_options(struct alloc *a) {
  if (pfi_cli_input("--curves", curves) ||
      pfi_cli_input("--features", features) ||
      pfi_cli_input("--model", model_path) ||
      pfi_cli_input("--gpu-map", gpu_map))
    return PFI_EXIT_USAGE;
  a->s = pfi_strategy_parse(strat_s);
  if (a->s < 0)
    return pfi_cli_usage("allocate", "unknown strategy '%s'", strat_s);
  if ((a->s == PFI_STRAT_PFI_AWARE || a->s == PFI_STRAT_PFI_CURVE) &&
      !true_pfi && !features)
    return pfi_cli_usage("allocate",
                         "strategy %s needs each job's PFI: give --features "
                         "FILE (telemetry features, with --model or a model "
                         "fitted on them), or --true-pfi to use the curves' "
                         "own PFI",
                         strat_s);
  struct pfi_error err;
  pfi_error_clear(&err);
  if (cut_s && pfi_cut_parse(cut_s, &a->cut, &err) < 0)
    return pfi_cli_usage("allocate", "%s", err.msg);
  if (budget_s && pfi_power_parse(budget_s, &a->budget, &err) < 0)
    return pfi_cli_usage("allocate", "--budget: %s", err.msg);
  return 0;
}

/* What the strategy reads (the PFI estimates where it needs them) and the
 * problem as the objective counts it. 0 or -1 with err set. */
static int load_inputs(struct alloc *a, struct pfi_error *err) {
  struct pfi_jobset *d = &a->d;
  struct pfi_noise nz = nopt.nz;
  if (nopt.given && pfi_jobset_set_noise(d, &nz, err) < 0)
    return -1;
  int needs_pfi = a->s == PFI_STRAT_PFI_AWARE || a->s == PFI_STRAT_PFI_CURVE;
  struct pfi_estimate_opts eo;
  pfi_estimate_opts_init(&eo);
  eo.true_pfi = true_pfi;
  eo.features = pfeat;
  if (needs_pfi && model_path) {
    if (pfi_jobset_require_features(d, "PFI estimation", err) < 0 ||
        pfi_model_load(&a->model, model_path, err) < 0)
      return -1;
    a->have_model = 1;
    eo.model = &a->model;
  }
  d->curve_fit = curve_fit;
  if (pfi_jobset_inputs_build(d, 1u << a->s, 0, &eo, &a->ai, err) < 0)
    return -1;
  curve_note("allocate", &d->cs, curve_fit);
  if (true_pfi && needs_pfi)
    undefined_note("allocate", d);
  int gpus_known = 0;
  if (obj_opt_problem_js(&ob, d, &a->ai.prob, &a->vp, &gpus_known, err) < 0)
    return -1;
  pfi_objective_unit(&ob.obj, gpus_known, d->cs.unit, a->vunit,
                     sizeof a->vunit);
  pfi_objective_describe(&ob.obj, gpus_known, a->odesc, sizeof a->odesc);
  return 0;
}

/* The budget of --cut or --budget, each job's power under it and the
 * totals. 0; -1 with err set; or, for a cut the jobs cannot take,
 * PFI_EXIT_USAGE with the message printed. */
static int allocate(struct alloc *a, struct pfi_error *err) {
  const struct pfi_problem *pp = &a->ai.prob;
  double lo;
  pfi_problem_bounds(pp, &lo, &a->hi);
  if (budget_s)
    a->cut = 1 - a->budget / a->hi;
  else
    a->budget = (1 - a->cut) * a->hi;
  const struct pfi_alloc_inputs in = a->ai.in;
  if (pfi_alloc_run(&a->vp, (enum pfi_strategy)a->s, a->budget, &in, a->pw,
                    err) < 0) {
    if (err->code != PFI_EINFEASIBLE)
      return -1;
    if (budget_s)
      fprintf(stderr, "pfi allocate: budget %.1f W is %s%s\n", a->budget,
              err->msg, ob.obj.min_share > 0 ? " (with --min-share)" : "");
    else
      fprintf(stderr, "pfi allocate: cut %g%% is %s%s\n", 100 * a->cut,
              err->msg, ob.obj.min_share > 0 ? " (with --min-share)" : "");
    return PFI_EXIT_USAGE;
  }
  for (size_t i = 0; i < a->d.cs.n; i++) {
    a->tot_p += a->pw[i];
    a->tot_t += pfi_problem_eval(pp, i, a->pw[i]);
    a->tot_v += pfi_problem_eval(&a->vp, i, a->pw[i]);
    a->tot_vu += pfi_problem_eval(&a->vp, i, pfi_problem_hi(&a->vp, i));
  }
  return 0;
}

/* Job i's per-GPU cap for its power, W. */
static double cap_of(const struct alloc *a, size_t i) {
  return pfi_curve_fit_cap_at(&a->d.cs.c[i], (enum pfi_curve_fit)a->d.curve_fit,
                              a->pw[i]);
}

/* Job i's throughput as a share of its uncapped throughput. */
static double retained_of(const struct alloc *a, size_t i) {
  const struct pfi_problem *pp = &a->ai.prob;
  return pfi_problem_eval(pp, i, a->pw[i]) /
         pfi_problem_eval(pp, i, pfi_problem_hi(pp, i));
}

static int print_json(const struct alloc *a) {
  json_t *j = json_object(), *arr = json_array();
  json_object_set_new(j, "strategy", json_string(pfi_strategy_name(a->s)));
  json_object_set_new(j, "cut", json_real(a->cut));
  json_object_set_new(j, "budget_w", json_real(a->budget));
  json_object_set_new(j, "total_power_w", json_real(a->tot_p));
  json_object_set_new(j, "total_tokens_per_s", json_real(a->tot_t));
  json_object_set_new(j, "objective",
                      json_string(pfi_objective_name(ob.obj.kind)));
  json_object_set_new(j, "objective_text", json_string(a->odesc));
  json_object_set_new(j, "objective_unit", json_string(a->vunit));
  json_object_set_new(j, "min_share", json_real(ob.obj.min_share));
  json_object_set_new(j, "value", json_real(a->tot_v));
  json_object_set_new(j, "value_uncapped", json_real(a->tot_vu));
  json_object_set_new(j, "retained", json_real(a->tot_v / a->tot_vu));
  for (size_t i = 0; i < a->d.cs.n; i++) {
    json_t *e = json_object();
    json_object_set_new(e, "job", pfi_cli_json_str(a->d.cs.c[i].job));
    json_object_set_new(e, "power_w", json_real(a->pw[i]));
    json_object_set_new(e, "cap_w", json_real(cap_of(a, i)));
    json_object_set_new(e, "tokens_per_s",
                        json_real(pfi_problem_eval(&a->ai.prob, i, a->pw[i])));
    json_object_set_new(e, "retained", json_real(retained_of(a, i)));
    json_array_append_new(arr, e);
  }
  json_object_set_new(j, "jobs", arr);
  /* Provenance beside the required keys: emulated data say so. */
  json_object_set_new(j, "source",
                      json_string(a->d.any_emulated ? "emulated" : "input"));
  return pfi_cli_print_json(j) ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}

/* One column list: the terminal shows retained as a percentage, the CSV
 * as a fraction (one column each, shown per format). */
enum { C_JOB, C_POW, C_CAP, C_TOK, C_RETP, C_RET, C_OBJ, C_N };
static const struct pfi_restab_col cols[C_N] = {
    [C_JOB] = {.name = "job", .kind = PFI_RESTAB_TEXT, .max_width = 40},
    [C_POW] = {.name = "power_w", .label = "power", .unit = "W",
               .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
               .csv_style = 'f', .csv_prec = 6, .qty = PFI_RESTAB_Q_POWER},
    [C_CAP] = {.name = "cap_w", .label = "cap", .unit = "W",
               .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
               .csv_style = 'f', .csv_prec = 6, .qty = PFI_RESTAB_Q_POWER},
    [C_TOK] = {.name = "tokens_per_s", .label = "tokens/s",
               .kind = PFI_RESTAB_NUM, .style = 'g', .prec = 6,
               .csv_style = 'f', .csv_prec = 6,
               .qty = PFI_RESTAB_Q_THROUGHPUT},
    [C_RETP] = {.name = "retained", .kind = PFI_RESTAB_TEXT,
                .align = PFI_RESTAB_RIGHT, .formats = PFI_RESTAB_IN_TERM},
    [C_RET] = {.name = "retained", .kind = PFI_RESTAB_NUM, .style = 'f',
               .prec = 6, .formats = PFI_RESTAB_IN_CSV},
    [C_OBJ] = {.name = "objective", .kind = PFI_RESTAB_TEXT,
               .formats = PFI_RESTAB_IN_CSV},
};

/* The terminal table or CSV: a row per job, then the totals. */
static int print_table(const struct alloc *a) {
  size_t n = a->d.cs.n;
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, C_N);
  char title[256];
  snprintf(title, sizeof title,
           "strategy %s, cut %.4g %% of %.1f W uncapped, budget %.1f W%s",
           pfi_strategy_name(a->s), 100 * a->cut, a->hi, a->budget,
           a->d.any_emulated ? " (emulated data)" : "");
  pfi_restab_title(&tab, title);
  pfi_restab_note(&tab, "%s; total retained: of the uncapped %s", a->odesc,
                  a->vunit);
  for (size_t i = 0; i <= n && !tab.failed; i++) {
    double p = i < n ? a->pw[i] : a->tot_p,
           t = i < n ? pfi_problem_eval(&a->ai.prob, i, a->pw[i]) : a->tot_t,
           r = i < n ? retained_of(a, i) : a->tot_v / a->tot_vu;
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, C_JOB,
                    i < n                 ? a->d.cs.c[i].job
                    : fmt == PFI_FMT_CSV ? "TOTAL"
                                          : "total");
    pfi_restab_num(&tab, C_POW, p);
    if (i < n)
      pfi_restab_num(&tab, C_CAP, cap_of(a, i));
    else
      pfi_restab_blank(&tab, C_CAP);
    pfi_restab_num(&tab, C_TOK, t);
    if (isfinite(100 * r))
      pfi_restab_textf(&tab, C_RETP, "%.2f%%", 100 * r);
    pfi_restab_num(&tab, C_RET, r);
    pfi_restab_text(&tab, C_OBJ, pfi_objective_name(ob.obj.kind));
  }
  int status = pfi_cli_print_table(&tab, fmt) != PFI_EXIT_OK ? PFI_EXIT_FAIL
                                                             : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  if (fmt == PFI_FMT_TABLE && plan_path)
    printf("plan written to %s\n", plan_path);
  return status;
}

int cmd_allocate(int argc, char **argv) {
  obj_opt_init(&ob);
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct alloc al, *a = &al;
  memset(a, 0, sizeof *a);
  int status = check_options(a);
  if (status)
    return status;
  struct pfi_error err;
  pfi_error_clear(&err);
  pfi_problem_init(&a->ai.prob);
  pfi_problem_init(&a->vp);
  if (pfi_jobset_load(&a->d, curves, map, features, &err) < 0) {
    obj_opt_release(&ob);
    return pfi_cli_fail(&err);
  }
  if (!(a->pw = calloc(a->d.cs.n + 1, sizeof *a->pw)))
    status = pfi_error_set(&err, PFI_ENOMEM, "out of memory");
  if (status < 0 || load_inputs(a, &err) < 0 ||
      (status = allocate(a, &err)) < 0 ||
      (!status && plan_path &&
       alloc_write_plan(&a->d, &a->ai.prob, a->pw, pfi_strategy_name(a->s),
                        pfi_objective_name(ob.obj.kind), a->cut, plan_path,
                        gpu_map, &err) < 0)) {
    status = pfi_cli_fail(&err);
  } else if (!status) {
    status = fmt == PFI_FMT_JSON ? print_json(a) : print_table(a);
    if (fflush(stdout) != 0)
      status = PFI_EXIT_FAIL;
  }
  if (a->have_model)
    pfi_model_release(&a->model);
  pfi_jobset_release(&a->d);
  pfi_jobset_inputs_release(&a->ai);
  pfi_problem_release(&a->vp);
  obj_opt_release(&ob);
  free(a->pw);
  return status;
}
