/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi simulate`: strategies against the oracle over sampled workloads. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "curve_note.h"
#include "objective_opt.h"
#include "opt.h"
#include "pfi/alloc.h"
#include "pfi/jobset.h"
#include "pfi/monotone.h"
#include "pfi/report.h"
#include "pfi/sim.h"

/* The options, bound to these (src/base/opt.h). */
static const char *curves, *features, *mix, *cuts_s, *strat_s, *model_path,
    *pfeat, *plot_path, *map, *tcurves, *tfeatures, *cluster_s;
static unsigned long workloads, size, seed;
static int holdout, true_pfi, cluster_k, curve_fit, fmt;
static struct obj_opt ob;

static const struct pfi_opt_word holdouts[] = {
    {"job", 1}, {"cluster", 2}, {"", 1}, {NULL, 0}};
static const struct pfi_opt_word clusters[] = {
    {"archtask", 0}, {"pooled", 1}, {NULL, 0}};

static struct noise_opt nopt; /* --noise */
static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("curves", 0, &curves, "FILE",
                   "curves CSV (default data/jobs/curves.csv)"),
    PFI_OPT_STRING("features", 0, &features, "FILE",
                   "features CSV (default data/jobs/features.csv when "
                   "--curves is not given; with --curves: none unless given)"),
    {.lng = "workloads", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "workloads", .type = PFI_OT_ULONG, .var = &workloads, .lo = 2,
     .hi = 10000000, .def = PFI_STR(PFI_SIM_DEFAULT_WORKLOADS)},
    {.lng = "size", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "jobs per workload", .type = PFI_OT_ULONG, .var = &size,
     .lo = 1, .hi = 10000000, .def = PFI_STR(PFI_SIM_DEFAULT_SIZE)},
    {.lng = "mix", .arg = PFI_ARG_REQ, .argname = "M",
     .help = "random, production or a mix file", .type = PFI_OT_STRING,
     .var = &mix, .def = "random"},
    {.lng = "cuts", .arg = PFI_ARG_REQ, .argname = "LIST",
     .help = "reductions in percent", .type = PFI_OT_STRING, .var = &cuts_s,
     .def = PFI_SIM_DEFAULT_CUTS},
    {.lng = "strategies", .arg = PFI_ARG_REQ, .argname = "LIST",
     .help = "the strategies", .type = PFI_OT_STRING, .var = &strat_s,
     .def = "oracle,equal,moe-ft-weighted,pfi-aware,dram-copy,pfi-curve"},
    {.lng = "seed", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "random seed; same seed, same bytes", .type = PFI_OT_ULONG,
     .var = &seed, .def = "1"},
    PFI_OPT_STRING("plot", 0, &plot_path, "FILE",
                   "draw the gap chart with gnuplot (.svg or .png)"),
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
    {.lng = "holdout", .arg = PFI_ARG_OPT, .argname = "job|cluster",
     .help = "predict each job's PFI with a fit that did not see it (job, "
             "the default) or its cluster",
     .type = PFI_OT_CHOICE, .var = &holdout, .words = holdouts},
    {.lng = "cluster", .arg = PFI_ARG_REQ, .argname = "archtask|pooled",
     .help = "the clusters of --holdout=cluster (default archtask)",
     .type = PFI_OT_CHOICE, .var = &cluster_k, .var2 = &cluster_s,
     .words = clusters},
    PFI_OPT_STRING("model", 0, &model_path, "MODEL.json",
                   "PFI from a saved model (pfi fit --output)"),
    PFI_OPT_FLAG("true-pfi", 0, &true_pfi, "PFI of the curves themselves"),
    PFI_OPT_STRING("pfi-features", 0, &pfeat, "LIST",
                   "features of the telemetry model (default "
                   "dram_copy_product)"),
    PFI_OPT_STRING("test-curves", 0, &tcurves, "FILE",
                   "draw workloads from these jobs instead (with "
                   "--test-features)"),
    PFI_OPT_STRING("test-features", 0, &tfeatures, "FILE",
                   "features of the --test-curves jobs"),
    PFI_OPT_STRING("map", 0, &map, "NAME=COLUMN,...",
                   "read canonical curve column NAME from the file's COLUMN"),
    OBJ_OPTS_BOUND(&ob),
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_EXCLUSIVE("model", "true-pfi", "holdout"),
    PFI_RULE_TOGETHER("test-curves", "test-features"), PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "simulate",
    "usage: pfi simulate [--curves FILE] [--features FILE] [--workloads N]\n"
    "                    [--size N] [--mix random|production|FILE.csv]\n"
    "                    [--cuts LIST] [--strategies L]\n"
    "                    [--seed S] [--holdout[=job|cluster]]\n"
    "                    [--cluster archtask|pooled]\n"
    "                    [--model MODEL.json | --true-pfi]\n"
    "                    [--pfi-features L] [--plot FILE.svg|.png]\n"
    "                    [--test-curves FILE --test-features FILE]\n"
    "                    [--map MAP] [--objective O] [--weights FILE]\n"
    "                    [--min-share R] [--format F]\n",
    "Builds WORKLOADS workloads of SIZE jobs each, sampled with replacement\n"
    "from the library (the jobs of the curves file, joined with the features\n"
    "file by job id), cuts each workload's total uncapped power by every\n"
    "percentage of --cuts, and scores every strategy against the exact\n"
    "oracle: the throughput gap to the oracle in tokens/s per job (mean\n"
    "over workloads and its 95 % t-interval) and the share of the\n"
    "equal-to-oracle gap each strategy closes. Beside pfi-aware, each\n"
    "strategy's paired difference to pfi-aware (tokens/s per job, 95 %\n"
    "interval; positive = better than pfi-aware).\n"
    "\n"
    "Mixes: random draws every job alike; production draws pretraining and\n"
    "fine-tuning jobs by the proportions of Hu et al., NSDI 2024 (rule and\n"
    "source in data/mixes/README.md); FILE.csv is a mix file of the same\n"
    "columns.\n"
    "\n"
    "PFI for pfi-aware and pfi-curve: the telemetry model (--pfi-features,\n"
    "default dram_copy_product) fitted on the library's own PFI, as in the\n"
    "paper; --holdout predicts each job with a fit that did not see it\n"
    "(job, the default) or its cluster (cluster; --cluster archtask, the\n"
    "default and the paper's definition: the four architecture x task\n"
    "clusters dense-pt, dense-ft, moe-pt, moe-ft; --cluster pooled: the\n"
    "three classes dense, moe-pt, moe-ft);\n"
    "--model uses a saved model; --true-pfi the curves' own PFI.\n"
    "--test-curves/--test-features (beyond the paper): workloads are drawn\n"
    "from these jobs instead, whose PFI the model fitted on the library\n"
    "predicts from their features: jobs the model never saw (for example\n"
    "emulated jobs outside the published library).\n"
    "\n"
    "Without features (--curves given, no --features): the strategies that\n"
    "read them (dram-copy, moe-ft-weighted, the telemetry model, the\n"
    "production mix) cannot run. The default strategy list then keeps\n"
    "oracle and equal, and pfi-aware and pfi-curve with --true-pfi, and says\n"
    "which it skipped; asking for one by name is an error. With --true-pfi a\n"
    "job without a ratio PFI (no cap bound beyond noise) gets PFI 0, as in\n"
    "pfi capacity.\n"
    "\n"
    "Objective (docs/predict-allocate.md): the oracle and every gap count\n"
    "the work kept by default, each job by its share of its uncapped\n"
    "throughput times its GPUs (features' gpus column; without GPU counts,\n"
    "each job once), in GPU-equivalents; --objective throughput sums raw\n"
    "throughput (the paper's, tokens/s), --objective jobs (or --normalize)\n"
    "counts each job once (shown in % of a job's uncapped throughput).\n",
    opts,
    "JSON keys: cuts, workloads, size, mix, seed, strategies (object by\n"
    "name: gap_tokens_per_s_per_job, gap_ci95 [[lo, hi]...], gap_closed_pct\n"
    "(null where the equal-to-oracle gap is zero), vs_pfi_aware_tokens_per_s\n"
    "_per_job, vs_pfi_aware_ci95; a value is null at a cut fewer than 2\n"
    "workloads could take), source, unit (the objective's), normalized,\n"
    "objective, objective_text, skipped, pfi_undefined, infeasible_pct (per\n"
    "cut, the percent of workloads whose floors exceed its budget: they are\n"
    "left out of its values). The gaps count in the objective's unit\n"
    "whatever their key says.\n",
    0,
    NULL,
    rules,
    0,
    0,
    NULL};

/* A value for a one-decimal table: rounding noise of either sign around
 * zero prints as 0.0, not -0.0. */
static double t1(double v) { return fabs(v) < 0.05 ? 0.0 : v; }

/* Percent of the workloads that could not take cut c (its budget below
 * the sampled jobs' floors). */
static double infeasible_pct(const struct pfi_sim_result *r, size_t c) {
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    if (r->cell[s] && r->workloads)
      return 100.0 * (double)(r->workloads - r->cell[s][c].feasible) /
             (double)r->workloads;
  return 0.0;
}

/* "Infeasible workloads: ..." per cut, when any cut had one. */
static void print_infeasible(FILE *fp, const struct pfi_sim_result *r,
                             const double *cuts, size_t nc) {
  int any = 0;
  for (size_t c = 0; c < nc; c++)
    any |= infeasible_pct(r, c) > 0;
  if (!any)
    return;
  fprintf(fp, "Workloads that could not take the cut (its budget below the "
              "sampled jobs' floors), left out of its values:");
  for (size_t c = 0; c < nc; c++)
    fprintf(fp, "%s %g %%: %.1f %%", c ? "," : "", cuts[c],
            infeasible_pct(r, c));
  fprintf(fp, "\n");
}

/* A terminal table of one row per strategy and one column per cut, headed
 * "30%"; each table's cell column is `proto` with that header, printed
 * after an empty line (wrapped into panels on a narrow terminal). */
struct cut_table {
  struct pfi_restab tab;
  struct pfi_restab_col *cols;
  char (*lab)[24];
  const double *cuts;
  size_t nc;
};

static int cut_table_init(struct cut_table *ct, const double *cuts,
                          size_t nc) {
  memset(ct, 0, sizeof *ct);
  ct->cols = calloc(nc + 1, sizeof *ct->cols);
  ct->lab = calloc(nc + 1, sizeof *ct->lab);
  if (!ct->cols || !ct->lab) {
    free(ct->cols);
    free(ct->lab);
    return PFI_ENOMEM;
  }
  ct->cuts = cuts;
  ct->nc = nc;
  for (size_t c = 0; c < nc; c++)
    snprintf(ct->lab[c], sizeof ct->lab[c], "%.4g%%", cuts[c]);
  return 0;
}

static struct pfi_restab *cut_table_start(struct cut_table *ct,
                                          const struct pfi_restab_col *proto) {
  ct->cols[0] = (struct pfi_restab_col){.name = "strategy",
                                        .kind = PFI_RESTAB_TEXT};
  for (size_t c = 0; c < ct->nc; c++) {
    ct->cols[1 + c] = *proto;
    ct->cols[1 + c].name = ct->lab[c];
  }
  pfi_restab_init(&ct->tab, ct->cols, ct->nc + 1);
  return &ct->tab;
}

static void cut_table_row(struct cut_table *ct, const char *strategy) {
  pfi_restab_row(&ct->tab);
  pfi_restab_text(&ct->tab, 0, strategy);
}

/* Prints the table (after an empty line) and releases it; 0 or -1. */
static int cut_table_print(struct cut_table *ct) {
  putchar('\n');
  int rc = pfi_cli_print_table(&ct->tab, PFI_FMT_TABLE);
  pfi_restab_release(&ct->tab);
  return rc ? -1 : 0;
}

static void cut_table_release(struct cut_table *ct) {
  free(ct->cols);
  free(ct->lab);
}

static void progress(size_t done, size_t total, void *arg) {
  (void)arg;
  if (done == total || done % 50 == 0)
    fprintf(stderr, "\rsimulate: workload %zu/%zu%s", done, total,
            done == total ? "\n" : "");
}

/* The gap chart: one line per strategy (the oracle's is zero), with its
 * 95 % interval, through the figure module. */
static int plot(const char *path, const double *cuts, size_t nc,
                const struct pfi_sim_result *res, unsigned mask,
                const char *title, const char *ylabel, double sc,
                struct pfi_error *err) {
  struct pfi_series ser[PFI_STRAT__COUNT];
  double *buf = malloc((4 * nc + 1) * PFI_STRAT__COUNT * sizeof *buf);
  if (!buf)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  size_t ns = 0;
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    if (!(mask & (1u << s)) || s == PFI_STRAT_ORACLE || !res->cell[s])
      continue;
    double *y = buf + ns * 4 * nc, *lo = y + nc, *hi = lo + nc;
    /* A series ends before the first cut too few workloads could take. */
    size_t nd = 0;
    while (nd < nc && res->cell[s][nd].feasible >= 2)
      nd++;
    for (size_t c = 0; c < nd; c++) {
      y[c] = sc * res->cell[s][c].gap_mean;
      lo[c] = sc * res->cell[s][c].gap_lo;
      hi[c] = sc * res->cell[s][c].gap_hi;
    }
    memset(&ser[ns], 0, sizeof ser[ns]);
    ser[ns].title = pfi_strategy_name(s);
    ser[ns].x = cuts;
    ser[ns].y = y;
    ser[ns].ylo = lo;
    ser[ns].yhi = hi;
    ser[ns].n = nd;
    ser[ns].style = PFI_STYLE_ERRORLINES;
    /* One fixed colour per strategy, so that charts of different runs
     * compare. */
    ser[ns].color = s + 1;
    ns++;
  }
  struct pfi_panel pan;
  pfi_panel_init(&pan);
  pan.title = title;
  pan.xlabel = "Cluster power reduction (%)";
  pan.ylabel = ylabel;
  pan.xmin = cuts[0] - 1;
  pan.xmax = cuts[nc - 1] + 1;
  pan.series = ser;
  pan.nseries = ns;
  pan.key = 1;
  pan.key_pos = "top left";
  struct pfi_figure f = {800, 500, 12, 1, 1, &pan, 1};
  int rc = pfi_figure_write(&f, path, err);
  free(buf);
  return rc;
}

/* One run: the inputs as loaded, the strategies asked for and the result;
 * what the printers read. */
struct sim {
  char cbuf[4096], fbuf[4096], mbuf[4096]; /* default file names */
  double *cuts;                            /* percent */
  size_t nc;
  unsigned mask;    /* the strategies that run */
  unsigned skipped; /* dropped from the default list: no features */
  int need_pfi;     /* pfi-aware or pfi-curve runs */
  const char *mix_path;
  struct pfi_jobset d, td;
  struct pfi_jobset *sd; /* the jobs workloads are drawn from */
  int have_d, have_test, have_model;
  struct pfi_jobset_inputs ai;
  struct pfi_model model;
  struct pfi_estimate_opts eo;
  double *weight, *fcuts;
  struct pfi_sim_result res;
  /* What the output says about the values. */
  int gpus_known, normalize, emulated;
  char vunit[160], odesc[300];
  size_t no_pfi; /* library jobs without a ratio PFI (--true-pfi) */
  struct pfi_population pop;
  char pop_desc[160];
};

/* --strategies as a mask of the strategies that run; those that read
 * features are dropped from the default list when there are none
 * (s->skipped), an error when named. 0 or PFI_EXIT_USAGE. */
static int parse_strategies(struct sim *s, int strat_given) {
  const unsigned pfi_bits =
      (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE);
  unsigned needs_features = (1u << PFI_STRAT_DRAM_COPY) |
                            (1u << PFI_STRAT_MOE_FT_WEIGHTED) |
                            (true_pfi ? 0u : pfi_bits);
  struct pfi_error err;
  char **list;
  size_t ns;
  if (pfi_strlist_split(strat_s, &list, &ns, &err) < 0)
    return pfi_cli_usage("simulate", "--strategies: %s", err.msg);
  int rc = 0;
  for (size_t i = 0; i < ns && !rc; i++) {
    int st = pfi_strategy_parse(list[i]);
    if (st < 0) {
      rc = pfi_cli_usage("simulate", "unknown strategy '%s'", list[i]);
    } else if (!features && (needs_features & (1u << st))) {
      if (strat_given)
        rc = pfi_cli_usage("simulate",
                           "strategy %s needs a features file (--features)%s",
                           list[i],
                           (1u << st) & pfi_bits
                               ? ", or --true-pfi to use the curves' own PFI"
                               : "");
      else
        s->skipped |= 1u << st;
    } else {
      s->mask |= 1u << st;
    }
  }
  pfi_strlist_free(list);
  return rc ? PFI_EXIT_USAGE : 0;
}

/* The checks between options the rules cannot state, the default files,
 * --cuts, --strategies and --mix. 0 or PFI_EXIT_USAGE. */
static int check_options(struct sim *s, int strat_given) {
  if (cluster_s && holdout != 2)
    return pfi_cli_usage("simulate", "--cluster goes with --holdout=cluster");
  if (tcurves && (holdout || true_pfi))
    return pfi_cli_usage("simulate", "test jobs are out of sample already: "
                                     "drop --holdout and --true-pfi");
  /* The default features go with the default curves only: a curves file
   * of one's own is not joined with the library's features. */
  int default_files = !curves;
  if (!curves && !(curves = pfi_data_default("jobs/curves.csv", s->cbuf,
                                             sizeof s->cbuf)))
    return pfi_cli_usage("simulate", "--curves FILE is required (no "
                                     "data/jobs/curves.csv; 'pfi reproduce' "
                                     "writes OUT/curves.csv)");
  if (!features && default_files &&
      !(features =
            pfi_data_default("jobs/features.csv", s->fbuf, sizeof s->fbuf)))
    return pfi_cli_usage("simulate", "--features FILE is required (no "
                                     "data/jobs/features.csv; 'pfi "
                                     "reproduce' writes OUT/features.csv)");
  struct pfi_error err;
  pfi_error_clear(&err);
  if (pfi_cli_parse_numlist(cuts_s, &s->cuts, &s->nc, &err) < 0)
    return pfi_cli_usage("simulate", "--cuts: %s", err.msg);
  for (size_t c = 0; c < s->nc; c++)
    if (!(s->cuts[c] >= 0 && s->cuts[c] < 100))
      return pfi_cli_usage("simulate", "--cuts are percentages in [0, 100)");
  if (parse_strategies(s, strat_given))
    return PFI_EXIT_USAGE;
  if (!features &&
      (holdout || model_path || tcurves || strcmp(mix, "random") != 0))
    return pfi_cli_usage("simulate", "%s needs a features file (--features)",
                         holdout      ? "--holdout"
                         : model_path ? "--model"
                         : tcurves    ? "--test-curves"
                                      : "a mix other than random");
  if (strcmp(mix, "production") == 0) {
    if (!(s->mix_path = pfi_data_default("mixes/production.csv", s->mbuf,
                                         sizeof s->mbuf)))
      return pfi_cli_usage("simulate", "data/mixes/production.csv not found "
                                       "(set PFI_DATA)");
  } else if (strcmp(mix, "random") != 0) {
    s->mix_path = mix;
  }
  return 0;
}

/* The library (and the test jobs), the PFI estimates the strategies read,
 * the problem as the objective counts it and the mix's sampling weights.
 * 0 or -1 with err set. */
static int load_inputs(struct sim *s, struct pfi_error *err) {
  struct pfi_noise nz = nopt.nz;
  if (pfi_jobset_load(&s->d, curves, map, features, err) < 0)
    return -1;
  s->have_d = 1;
  s->d.curve_fit = curve_fit;
  if (nopt.given && pfi_jobset_set_noise(&s->d, &nz, err) < 0)
    return -1;
  if (features &&
      pfi_jobset_require_features(&s->d, "the simulation", err) < 0)
    return -1;
  s->sd = &s->d;
  if (tcurves) {
    /* Out-of-sample jobs: the telemetry model is fitted on the library and
     * predicts the test jobs, which the workloads are drawn from. */
    if (pfi_jobset_load(&s->td, tcurves, map, tfeatures, err) < 0)
      return -1;
    s->td.curve_fit = curve_fit;
    s->have_test = 1;
    if (nopt.given && pfi_jobset_set_noise(&s->td, &nz, err) < 0)
      return -1;
    s->sd = &s->td;
    if (pfi_jobset_require_features(&s->td, "the simulation", err) < 0)
      return -1;
    if (!model_path) {
      if (pfi_jobset_fit_model(&s->d, pfeat, &s->model, err) < 0)
        return -1;
      s->have_model = 1;
    }
  }
  struct pfi_jobset *sd = s->sd;
  size_t n = sd->cs.n;
  s->weight = calloc(n + 1, sizeof *s->weight);
  s->fcuts = calloc(s->nc + 1, sizeof *s->fcuts);
  if (!s->weight || !s->fcuts)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  /* PFI estimates only where a requested strategy uses them (pfi-aware,
   * pfi-curve; the paired differences to pfi-aware come with them): a
   * library too small for the telemetry model still compares the others. */
  const unsigned pfi_bits =
      (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE);
  s->need_pfi = (s->mask & pfi_bits) != 0;
  pfi_estimate_opts_init(&s->eo);
  s->eo.true_pfi = true_pfi;
  s->eo.features = pfeat;
  s->eo.holdout = holdout;
  pfi_clusters_parse(&s->eo.clusters, cluster_s);
  if (s->need_pfi && model_path) {
    if (pfi_model_load(&s->model, model_path, err) < 0)
      return -1;
    s->have_model = 1;
  }
  if (s->have_model)
    s->eo.model = &s->model;
  /* Everything the strategies read (moe-ft-weighted, the production mix
   * and the telemetry model need the features read for every job). */
  if (pfi_jobset_inputs_build(sd, s->need_pfi ? s->mask : s->mask & ~pfi_bits,
                              s->mix_path != NULL, &s->eo, &s->ai, err) < 0)
    return -1;
  curve_note("simulate", &sd->cs, curve_fit);
  /* The library's jobs as the objective counts them: every sampled copy
   * of a job is counted alike. */
  struct pfi_problem vp;
  pfi_problem_init(&vp);
  if (obj_opt_problem_js(&ob, sd, &s->ai.prob, &vp, &s->gpus_known, err) <
      0) {
    pfi_problem_release(&vp);
    return -1;
  }
  pfi_problem_release(&s->ai.prob);
  s->ai.prob = vp;
  /* Values that are shares of one job's uncapped throughput are shown in
   * percent. */
  s->normalize = ob.obj.kind == PFI_OBJ_JOBS ||
                 (ob.obj.kind == PFI_OBJ_WORK && !s->gpus_known);
  pfi_objective_unit(&ob.obj, s->gpus_known,
                     sd->cs.unit ? sd->cs.unit : "tokens/s", s->vunit,
                     sizeof s->vunit);
  pfi_objective_describe(&ob.obj, s->gpus_known, s->odesc, sizeof s->odesc);
  if (true_pfi && s->need_pfi)
    for (size_t i = 0; i < n; i++)
      s->no_pfi += !sd->pfi_ok[i];
  size_t fallbacks = 0;
  if (s->mix_path && pfi_mix_weights(s->mix_path, s->ai.is_ft, s->ai.gpus, n,
                                     s->weight, &fallbacks, err) < 0)
    return -1;
  if (fallbacks)
    fprintf(stderr,
            "pfi simulate: %zu row(s) of mix %s matched no job by GPU count; "
            "their share went to every job of their task\n",
            fallbacks, s->mix_path);
  return 0;
}

/* Runs the simulation into s->res, then reads the population the output
 * names. 0 or -1 with err set. */
static int run(struct sim *s, struct pfi_error *err) {
  for (size_t c = 0; c < s->nc; c++)
    s->fcuts[c] = s->cuts[c] / 100.0;
  const struct pfi_alloc_inputs in = s->ai.in;
  struct pfi_sim_config cfg = {.workloads = workloads,
                               .size = size,
                               .cuts = s->fcuts,
                               .ncuts = s->nc,
                               .strategies = s->mask,
                               .seed = seed,
                               .sample_weight = s->mix_path ? s->weight : NULL,
                               .progress = isatty(2) ? progress : NULL,
                               .progress_arg = NULL};
  if (pfi_sim_run(&s->ai.prob, &in, &cfg, &s->res, err) < 0)
    return -1;
  s->emulated = s->d.any_emulated || (s->have_test && s->td.any_emulated);
  /* The paper's published figure is over its 25 H200 headline groups:
   * shown beside ours only on that population. */
  struct pfi_error perr;
  if (pfi_jobset_population(s->sd, &s->pop, &perr) < 0 &&
      perr.code == PFI_ENOMEM) {
    *err = perr;
    return -1;
  }
  pfi_population_describe(&s->pop, s->pop_desc, sizeof s->pop_desc);
  return 0;
}

/* A JSON array of one value per cut: get(cell) where ok(cell), else null. */
static json_t *json_per_cut(const struct sim *s, int st,
                            json_t *(*get)(const struct pfi_sim_cell *)) {
  json_t *a = json_array();
  for (size_t c = 0; c < s->nc; c++)
    json_array_append_new(a, get(&s->res.cell[st][c]));
  return a;
}

static json_t *j_gap(const struct pfi_sim_cell *e) {
  return e->feasible >= 2 ? json_real(e->gap_mean) : json_null();
}
static json_t *j_gap_ci(const struct pfi_sim_cell *e) {
  return e->feasible >= 2 ? json_pack("[f,f]", e->gap_lo, e->gap_hi)
                          : json_null();
}
static json_t *j_tokens(const struct pfi_sim_cell *e) {
  return e->feasible >= 2 ? json_real(e->tokens_mean) : json_null();
}
static json_t *j_closed(const struct pfi_sim_cell *e) {
  return e->closed_defined ? json_real(e->closed_pct) : json_null();
}
static json_t *j_vs(const struct pfi_sim_cell *e) {
  return e->vs_aware_defined ? json_real(e->vs_aware_mean) : json_null();
}
static json_t *j_vs_ci(const struct pfi_sim_cell *e) {
  return e->vs_aware_defined
             ? json_pack("[f,f]", e->vs_aware_lo, e->vs_aware_hi)
             : json_null();
}

static int print_json(const struct sim *s) {
  json_t *j = json_object(), *jc = json_array(), *js = json_object();
  for (size_t c = 0; c < s->nc; c++)
    json_array_append_new(jc, json_real(s->cuts[c]));
  json_object_set_new(j, "cuts", jc);
  json_object_set_new(j, "workloads", json_integer((json_int_t)workloads));
  json_object_set_new(j, "size", json_integer((json_int_t)size));
  json_object_set_new(j, "mix", json_string(mix));
  json_object_set_new(j, "seed", json_integer((json_int_t)seed));
  for (int st = 0; st < PFI_STRAT__COUNT; st++) {
    if (!s->res.cell[st])
      continue;
    json_t *o2 = json_object();
    json_object_set_new(o2, "gap_tokens_per_s_per_job",
                        json_per_cut(s, st, j_gap));
    json_object_set_new(o2, "tokens_per_job", json_per_cut(s, st, j_tokens));
    json_object_set_new(o2, "gap_ci95", json_per_cut(s, st, j_gap_ci));
    json_object_set_new(o2, "gap_closed_pct", json_per_cut(s, st, j_closed));
    json_object_set_new(o2, "vs_pfi_aware_tokens_per_s_per_job",
                        json_per_cut(s, st, j_vs));
    json_object_set_new(o2, "vs_pfi_aware_ci95", json_per_cut(s, st, j_vs_ci));
    json_object_set_new(js, pfi_strategy_name(st), o2);
  }
  json_object_set_new(j, "strategies", js);
  /* Provenance beside the required keys: emulated data say so. */
  json_object_set_new(j, "source",
                      json_string(s->emulated ? "emulated" : "input"));
  json_object_set_new(j, "unit", pfi_cli_json_str(s->vunit));
  json_object_set_new(j, "normalized", json_boolean(s->normalize));
  json_object_set_new(j, "objective",
                      json_string(pfi_objective_name(ob.obj.kind)));
  json_object_set_new(j, "objective_text", json_string(s->odesc));
  json_t *sk = json_array();
  for (int st = 0; st < PFI_STRAT__COUNT; st++)
    if (s->skipped & (1u << st))
      json_array_append_new(sk, json_string(pfi_strategy_name(st)));
  json_object_set_new(j, "skipped", sk);
  json_object_set_new(j, "pfi_undefined",
                      json_integer((json_int_t)s->no_pfi));
  json_t *inf = json_array();
  for (size_t c = 0; c < s->nc; c++)
    json_array_append_new(inf, json_real(infeasible_pct(&s->res, c)));
  json_object_set_new(j, "infeasible_pct", inf);
  return pfi_cli_print_json(j) ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}

/* Three values of a cell, or three blanks where it is not defined. */
static void csv_three(struct pfi_restab *tab, int col, int ok, double a,
                      double b, double c) {
  for (int k = 0; k < 3; k++) {
    if (ok)
      pfi_restab_num(tab, col + k, k == 0 ? a : k == 1 ? b : c);
    else
      pfi_restab_blank(tab, col + k);
  }
}

static int print_csv(const struct sim *s) {
  enum { C_STRAT, C_CUT, C_GAP, C_GLO, C_GHI, C_CLOSED, C_VS, C_VLO, C_VHI,
         C_TOK, C_N };
#define F6(n) {.name = n, .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 6}
  static const struct pfi_restab_col cols[C_N] = {
      [C_STRAT] = {.name = "strategy", .kind = PFI_RESTAB_TEXT},
      [C_CUT] = {.name = "cut_pct", .kind = PFI_RESTAB_NUM},
      [C_GAP] = F6("gap_tokens_per_s_per_job"),
      [C_GLO] = F6("gap_ci95_lo"),
      [C_GHI] = F6("gap_ci95_hi"),
      [C_CLOSED] = {.name = "gap_closed_pct", .kind = PFI_RESTAB_NUM,
                    .style = 'f', .prec = 4},
      [C_VS] = F6("vs_pfi_aware"),
      [C_VLO] = F6("vs_pfi_aware_lo"),
      [C_VHI] = F6("vs_pfi_aware_hi"),
      [C_TOK] = {.name = "tokens_per_job", .kind = PFI_RESTAB_NUM,
                 .style = 'g', .prec = 10},
  };
#undef F6
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, C_N);
  for (int st = 0; st < PFI_STRAT__COUNT && !tab.failed; st++) {
    if (!s->res.cell[st])
      continue;
    for (size_t c = 0; c < s->nc; c++) {
      const struct pfi_sim_cell *e = &s->res.cell[st][c];
      pfi_restab_row(&tab);
      pfi_restab_text(&tab, C_STRAT, pfi_strategy_name(st));
      pfi_restab_num(&tab, C_CUT, s->cuts[c]);
      csv_three(&tab, C_GAP, e->feasible >= 2, e->gap_mean, e->gap_lo,
                e->gap_hi);
      if (e->closed_defined)
        pfi_restab_num(&tab, C_CLOSED, e->closed_pct);
      else
        pfi_restab_blank(&tab, C_CLOSED);
      csv_three(&tab, C_VS, e->vs_aware_defined, e->vs_aware_mean,
                e->vs_aware_lo, e->vs_aware_hi);
      if (e->feasible >= 2)
        pfi_restab_num(&tab, C_TOK, e->tokens_mean);
      else
        pfi_restab_blank(&tab, C_TOK);
    }
  }
  int status = pfi_cli_print_table(&tab, PFI_FMT_CSV) != PFI_EXIT_OK
                   ? PFI_EXIT_FAIL
                   : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  print_infeasible(stderr, &s->res, s->cuts, s->nc);
  return status;
}

/* The lines above the tables: the setting, where the PFI comes from, the
 * objective, the jobs without PFI and the strategies skipped. */
static void print_setting(const struct sim *s) {
  const char *pfi_src = s->have_test
                            ? "telemetry model fitted on the library, "
                              "applied to the test jobs"
                        : true_pfi      ? "true PFI of the curves"
                        : s->have_model ? "saved model"
                        : holdout == 1  ? "telemetry model, held out by job"
                        : holdout == 2
                            ? "telemetry model, held out by cluster"
                            : "telemetry model fitted on the library";
  char cl_desc[96] = "";
  if (holdout == 2 && !s->have_test && !true_pfi && !s->have_model) {
    char d2[80];
    snprintf(cl_desc, sizeof cl_desc, " (%s)",
             pfi_clusters_describe(&s->eo.clusters, d2, sizeof d2));
  }
  printf("Simulation: %lu workloads x %lu jobs, mix %s, seed %lu; library "
         "%zu jobs%s (%s)\nPopulation: %s\nPFI estimates: %s%s\n",
         workloads, size, mix, seed, s->sd->cs.n,
         s->have_test ? " (test jobs)" : "",
         s->emulated ? "emulated" : "from the given files", s->pop_desc,
         pfi_src, cl_desc);
  printf("Throughput: %s (%s)\n", s->odesc, s->vunit);
  if (s->no_pfi) {
    char why[400];
    pfi_jobset_undefined_note(s->sd, why, sizeof why);
    printf("%zu library jobs have no ratio PFI, counted as PFI 0 (the least "
           "flexible) by pfi-aware and pfi-curve: %s\n",
           s->no_pfi, why);
  }
  if (s->skipped) {
    printf("Skipped (they read features; none given):");
    const char *sep = " ";
    for (int st = 0; st < PFI_STRAT__COUNT; st++)
      if (s->skipped & (1u << st)) {
        printf("%s%s", sep, pfi_strategy_name(st));
        sep = ", ";
      }
    printf("%s\n", true_pfi ? ""
                            : "; pfi-aware and pfi-curve run with "
                              "--true-pfi");
  }
}

/* The four tables of one row per strategy and one column per cut: the gap
 * to the oracle, the throughput, the share of the gap closed and the
 * difference to pfi-aware. PFI_EXIT_OK, PFI_EXIT_FAIL when one could not
 * be printed, or -1 with err set. */
static int print_cut_tables(const struct sim *s, struct pfi_error *err) {
  /* Job-equivalents per job are fractions: shown in percent. */
  double sc = s->normalize ? 100 : 1;
  const char *per =
      s->normalize ? "% of a job's uncapped throughput" : s->vunit;
  int dp = s->normalize ? 2 : ob.obj.kind == PFI_OBJ_WORK ? 3 : 1;
  struct cut_table ct;
  if (cut_table_init(&ct, s->cuts, s->nc) < 0)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  static const struct pfi_restab_col interval = {.kind = PFI_RESTAB_TEXT,
                                                 .align = PFI_RESTAB_RIGHT};
  static const struct pfi_restab_col tokens = {
      .kind = PFI_RESTAB_NUM, .qty = PFI_RESTAB_Q_THROUGHPUT};
  static const struct pfi_restab_col closed = {.kind = PFI_RESTAB_NUM,
                                               .qty = PFI_RESTAB_Q_SHARE};
  const struct pfi_sim_result *res = &s->res;
  struct pfi_restab *tab = cut_table_start(&ct, &interval);
  char title[256];
  snprintf(title, sizeof title,
           "Throughput gap to the oracle, %s per job: mean "
           "[95 %% interval]",
           per);
  pfi_restab_title(tab, title);
  for (int st = 0; st < PFI_STRAT__COUNT; st++) {
    if (!res->cell[st])
      continue;
    cut_table_row(&ct, pfi_strategy_name(st));
    for (size_t c = 0; c < s->nc; c++) {
      const struct pfi_sim_cell *e = &res->cell[st][c];
      if (e->feasible < 2)
        continue;
      pfi_restab_textf(tab, 1 + c, "%.*f [%.*f, %.*f]", dp,
                       t1(sc * e->gap_mean), dp, t1(sc * e->gap_lo), dp,
                       t1(sc * e->gap_hi));
    }
  }
  int prc = cut_table_print(&ct);
  tab = cut_table_start(&ct, &tokens);
  snprintf(title, sizeof title, "Throughput per job, %s: mean over workloads",
           per);
  pfi_restab_title(tab, title);
  for (int st = 0; st < PFI_STRAT__COUNT; st++) {
    if (!res->cell[st])
      continue;
    cut_table_row(&ct, pfi_strategy_name(st));
    for (size_t c = 0; c < s->nc; c++)
      if (res->cell[st][c].feasible >= 2)
        pfi_restab_num(tab, 1 + c, sc * res->cell[st][c].tokens_mean);
  }
  prc |= cut_table_print(&ct);
  tab = cut_table_start(&ct, &closed);
  pfi_restab_title(tab, "Share of the equal-to-oracle gap closed, %");
  for (int st = 0; st < PFI_STRAT__COUNT; st++) {
    if (!res->cell[st])
      continue;
    cut_table_row(&ct, pfi_strategy_name(st));
    for (size_t c = 0; c < s->nc; c++)
      if (res->cell[st][c].closed_defined)
        pfi_restab_num(tab, 1 + c, t1(res->cell[st][c].closed_pct));
  }
  prc |= cut_table_print(&ct);
  if (s->need_pfi) {
    tab = cut_table_start(&ct, &interval);
    snprintf(title, sizeof title,
             "Difference to pfi-aware, %s per job (positive: better "
             "than pfi-aware): mean [95 %% paired interval]",
             per);
    pfi_restab_title(tab, title);
    for (int st = 0; st < PFI_STRAT__COUNT; st++) {
      if (!res->cell[st] || st == PFI_STRAT_PFI_AWARE)
        continue;
      cut_table_row(&ct, pfi_strategy_name(st));
      for (size_t c = 0; c < s->nc; c++) {
        const struct pfi_sim_cell *e = &res->cell[st][c];
        if (e->vs_aware_defined)
          pfi_restab_textf(tab, 1 + c, "%.*f [%.*f, %.*f]", dp,
                           t1(sc * e->vs_aware_mean), dp,
                           t1(sc * e->vs_aware_lo), dp,
                           t1(sc * e->vs_aware_hi));
      }
    }
    prc |= cut_table_print(&ct);
  }
  cut_table_release(&ct);
  return prc ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}

/* The paper's one published simulation figure (Figure 8), beside ours
 * when this run has the same setting and the same population. */
static void print_figure8(const struct sim *s) {
  const struct pfi_sim_result *res = &s->res;
  for (size_t c = 0; c < s->nc; c++) {
    if (!(strcmp(mix, "production") == 0 && s->cuts[c] == 30 &&
          res->cell[PFI_STRAT_PFI_AWARE] && res->cell[PFI_STRAT_EQUAL] &&
          res->cell[PFI_STRAT_EQUAL][c].feasible >= 2))
      continue;
    const struct pfi_sim_cell *a = &res->cell[PFI_STRAT_PFI_AWARE][c],
                              *e = &res->cell[PFI_STRAT_EQUAL][c];
    printf("\nProduction mix, 30 %% cut: pfi-aware recovers %.0f tokens/s "
           "per job over equal, %.0f %% of the gap (%s).\n",
           e->gap_mean - a->gap_mean, a->closed_defined ? a->closed_pct : 0.0,
           s->emulated ? "emulated" : "these data");
    double ptok, pgap;
    struct pfi_error pe;
    if (s->pop.paper &&
        pfi_paper_headline("tokens_over_equal_production_30", &ptok, &pe) ==
            0 &&
        pfi_paper_headline("gap_closed_pct_production_30", &pgap, &pe) == 0 &&
        ptok >= 0 && ptok < 1e6) {
      /* Thousands with a separator, as the paper writes them. */
      char tok[32];
      int it = (int)ptok;
      if (it >= 1000)
        snprintf(tok, sizeof tok, "%d,%03d", it / 1000, it % 1000);
      else
        snprintf(tok, sizeof tok, "%d", it);
      printf("Published (paper, Figure 8, the same %zu groups): about %s "
             "tokens/s per job, %.0f %%.\n",
             s->pop.n, tok, pgap);
    } else
      printf("Published value not shown: the paper's figure is over its "
             "%zu H200 headline groups; this library is %s.\n",
             s->pop.headline_total ? s->pop.headline_total : (size_t)25,
             s->pop_desc);
  }
}

/* The terminal output: the setting, the tables and the notes below them.
 * A status, or -1 with err set. */
static int print_terminal(const struct sim *s, struct pfi_error *err) {
  print_setting(s);
  int status = print_cut_tables(s, err);
  if (status < 0)
    return -1;
  printf("\n'-': undefined (no gap to close at this cut, or fewer than 2 "
         "workloads could take it).\n");
  print_infeasible(stdout, &s->res, s->cuts, s->nc);
  print_figure8(s);
  return status;
}

/* --plot: the gap chart. 0 or -1 with err set. */
static int plot_gaps(const struct sim *s, struct pfi_error *err) {
  char title[256];
  snprintf(title, sizeof title, "Gap to oracle, %s mix, %lu x %lu jobs%s",
           s->mix_path && strcmp(mix, "production") != 0 ? "custom" : mix,
           workloads, size, s->emulated ? " (emulated library)" : "");
  char ylabel[200];
  snprintf(ylabel, sizeof ylabel, "Throughput gap to oracle (%s per job)",
           s->normalize ? "% of uncapped" : s->vunit);
  return plot(plot_path, s->cuts, s->nc, &s->res, s->mask, title, ylabel,
              s->normalize ? 100 : 1, err);
}

static void sim_release(struct sim *s) {
  pfi_sim_result_release(&s->res);
  if (s->have_model)
    pfi_model_release(&s->model);
  if (s->have_d)
    pfi_jobset_release(&s->d);
  if (s->have_test)
    pfi_jobset_release(&s->td);
  pfi_jobset_inputs_release(&s->ai);
  free(s->cuts);
  free(s->weight);
  free(s->fcuts);
}

int cmd_simulate(int argc, char **argv) {
  obj_opt_init(&ob);
  struct pfi_optparse op;
  int st = pfi_opt_parse(&op, &help, argc, argv);
  if (st != PFI_OPT_GO)
    return st;
  struct sim sim, *s = &sim;
  memset(s, 0, sizeof *s);
  pfi_problem_init(&s->ai.prob);
  int status = check_options(s, pfi_opt_given(&op, "strategies") > 0);
  if (status) {
    free(s->cuts);
    return status;
  }
  struct pfi_error err;
  pfi_error_clear(&err);
  if (load_inputs(s, &err) < 0)
    goto fail;
  if (run(s, &err) < 0) {
    if (err.code != PFI_EINFEASIBLE)
      goto fail;
    fprintf(stderr, "pfi simulate: %s\n", err.msg);
    status = PFI_EXIT_USAGE;
    goto out;
  }
  if (fmt == PFI_FMT_JSON)
    status = print_json(s);
  else if (fmt == PFI_FMT_CSV)
    status = print_csv(s);
  else if ((status = print_terminal(s, &err)) < 0)
    goto fail;
  if (fflush(stdout) != 0)
    status = PFI_EXIT_FAIL;
  if (plot_path && plot_gaps(s, &err) < 0)
    goto fail;
  goto out;
fail:
  status = pfi_cli_fail(&err);
out:
  sim_release(s);
  obj_opt_release(&ob);
  return status;
}
