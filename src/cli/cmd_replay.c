/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi replay`: a grid event's power target replayed against a set of jobs,
 * step by step, by several allocation strategies and the exact oracle. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "curve_note.h"
#include "objective_opt.h"
#include "opt.h"
#include "pfi/alloc.h"
#include "pfi/fmt.h"
#include "pfi/jobset.h"
#include "pfi/monotone.h"
#include "pfi/oracle.h"
#include "pfi/replay.h"
#include "pfi/sim.h" /* PFI_STR */

enum show { SHOW_SUMMARY, SHOW_SERIES, SHOW_JOBS, SHOW_CAPS };

/* The options, bound to these (src/base/opt.h). */
static const char *curves, *features, *target, *time_col, *power_col, *base_s,
    *strat_s, *model_path, *pfeat, *map;
static int true_pfi, curve_fit, show, fmt;
static double event_min;
static struct obj_opt ob;

static const struct pfi_opt_word shows[] = {{"summary", SHOW_SUMMARY},
                                            {"series", SHOW_SERIES},
                                            {"jobs", SHOW_JOBS},
                                            {"caps", SHOW_CAPS},
                                            {NULL, 0}};

static struct noise_opt nopt; /* --noise */
static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("curves", 0, &curves, "FILE",
                   "curves CSV (job, cap_w, power_w, tokens_per_s)"),
    PFI_OPT_STRING("target", 0, &target, "TRACE",
                   "power trace CSV: a time and a power column"),
    PFI_OPT_STRING("time-col", 0, &time_col, "NAME",
                   "time column (default: timestamp, time or t)"),
    PFI_OPT_STRING("power-col", 0, &power_col, "NAME",
                   "power column in W (default: total, power_w or power)"),
    {.lng = "baseline", .arg = PFI_ARG_REQ, .argname = "W|auto",
     .help = "the pre-event power in W; auto: the median of the samples of "
             "the first 15 minutes",
     .type = PFI_OT_STRING, .var = &base_s, .def = "auto"},
    {.lng = "strategies", .arg = PFI_ARG_REQ, .argname = "LIST",
     .help = "comma-separated: oracle, equal, moe-ft-weighted, pfi-aware, "
             "dram-copy, pfi-curve, or all",
     .type = PFI_OT_STRING, .var = &strat_s, .def = "oracle,equal"},
    PFI_OPT_STRING("features", 0, &features, "FILE",
                   "features CSV (for strategies that need them)"),
    PFI_OPT_STRING("model", 0, &model_path, "FILE",
                   "PFI model saved by pfi fit --output"),
    PFI_OPT_FLAG("true-pfi", 0, &true_pfi,
                 "pfi-aware/pfi-curve use the curves' own PFI"),
    PFI_OPT_STRING("pfi-features", 0, &pfeat, "L",
                   "features of the fitted PFI model"),
    PFI_OPT_STRING("map", 0, &map, "MAP",
                   "curves column mapping NAME=COLUMN,..."),
    {.lng = "event-min-cut", .arg = PFI_ARG_REQ, .argname = "R",
     .help = "least cut of an event step (0.05 or 5%): steps closer to the "
             "baseline are not the event's",
     .type = PFI_OT_SHARE, .var = &event_min, .lo = 0, .hi = 1,
     .range = PFI_RANGE_LO_OPEN | PFI_RANGE_HI_OPEN,
     .def = PFI_STR(PFI_REPLAY_EVENT_MIN_CUT)},
    {.lng = "show", .arg = PFI_ARG_REQ, .argname = "WHAT",
     .help = "table and CSV output: summary (totals per strategy and per "
             "job), series (the time series) jobs (per job and strategy) or "
             "caps (each job's power and per-GPU cap at each step)",
     .type = PFI_OT_CHOICE, .var = &show, .words = shows, .def = "summary"},
    {.lng = "curve", .arg = PFI_ARG_REQ, .argname = "FIT",
     .help = "monotone (a curve whose power or throughput falls as the cap "
             "rises is decided on its monotone fit; the PFI stays the raw "
             "points') or raw",
     .type = PFI_OT_CHOICE, .var = &curve_fit, .words = obj_opt_curve_fits,
     .def = "monotone"},
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json (everything)", .type = PFI_OT_CHOICE,
     .var = &fmt, .words = pfi_opt_formats, .def = "table"},
    OBJ_OPTS_BOUND(&ob),
    NOISE_OPT_BOUND(&nopt),
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_REQUIRED("curves"), PFI_RULE_REQUIRED("target"),
    PFI_RULE_EXCLUSIVE("model", "true-pfi"), PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "replay",
    "usage: pfi replay --curves FILE --target TRACE [--features FILE]\n"
    "                  [--time-col NAME] [--power-col NAME]\n"
    "                  [--baseline W|auto] [--strategies LIST]\n"
    "                  [--model MODEL.json | --true-pfi] [--pfi-features L]\n"
    "                  [--map MAP] [--show summary|series|jobs|caps]\n"
    "                  [--objective O] [--weights FILE] [--min-share R]\n"
    "                  [--format table|csv|json]\n",
    "Replays a grid event: TRACE gives the cluster's power over time; the\n"
    "cut at each step is max(0, 1 - target / baseline), and each strategy\n"
    "splits that cut of the jobs' total uncapped power across the jobs, as\n"
    "pfi allocate does, at every step. A step whose cut goes below the\n"
    "jobs' floors is infeasible: every job runs at its floor and the watts\n"
    "above the budget are reported. The exact oracle always runs, for the\n"
    "gap to it.\n"
    "\n"
    "Objective (docs/predict-allocate.md), as in pfi allocate: by default\n"
    "the work kept, each job by its share of its uncapped throughput times\n"
    "its GPUs; --objective throughput sums raw throughput (the paper's),\n"
    "--objective jobs (or --normalize) counts each job once. The columns\n"
    "tokens_per_s and normalized, and every retained, count in the\n"
    "objective's unit (JSON key objective_unit; tokens/s only under\n"
    "--objective throughput).\n",
    opts,
    "Timestamps: 2025-05-04 14:40:00-07:00 (date, time, optional offset),\n"
    "14:00 or 14:00:30 (time of day), or seconds; one form per file, in\n"
    "strictly increasing order. Each sample holds until the next; the last\n"
    "one for the interval before it.\n"
    "\n"
    "Totals per strategy: retained = sum(dt * tokens/s) / sum(dt * uncapped\n"
    "tokens/s) over the trace, retained_event the same over the event steps\n"
    "(cut >= --event-min-cut), energy, max and mean cut, infeasible steps "
    "and the\n"
    "largest excess (W), gap to the oracle in percentage points.\n"
    "JSON keys: target, source, baseline_w, baseline_rule, steps,\n"
    "event_steps, uncapped_w, floor_w, max_cut, mean_cut, infeasible_steps,\n"
    "infeasible_max_w, jobs, strategies [{strategy, retained,\n"
    "retained_event, gap_to_oracle_pp, gap_to_oracle_event_pp, energy_kwh,\n"
    "mean_power_w, infeasible_steps, infeasible_max_w, jobs [{job,\n"
    "retained, retained_event, mean_power_w}], series [{time, t_s, cut,\n"
    "budget_w, power_w, tokens_per_s, normalized, feasible, short_w,\n"
    "job_power_w [..], job_cap_w [..] (in the order of jobs)}]}].\n"
    "Exit status 0 ok, 1 run-time failure, 2 bad usage or bad input.\n",
    0,
    NULL,
    rules,
    0,
    0,
    NULL};

/* Width of a job's column in the caps table. */
static int colw(const char *job) {
  size_t l = strlen(job);
  return l < 12 ? 12 : l > 64 ? 64 : (int)l;
}

/* Parses --strategies into a bit set; oracle is always added (for the
 * gap) but printed only when asked for. */
static int parse_strategies(const char *s, unsigned *asked) {
  *asked = 0;
  if (strcmp(s, "all") == 0) {
    *asked = (1u << PFI_STRAT__COUNT) - 1;
    return 0;
  }
  char buf[512];
  if (strlen(s) >= sizeof buf)
    return pfi_cli_usage("replay", "--strategies: list too long");
  strcpy(buf, s);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ')
      tok++;
    size_t l = strlen(tok);
    while (l > 0 && tok[l - 1] == ' ')
      tok[--l] = '\0';
    int k = pfi_strategy_parse(tok);
    if (k < 0)
      return pfi_cli_usage("replay", "unknown strategy '%s'", tok);
    *asked |= 1u << k;
  }
  if (!*asked)
    return pfi_cli_usage("replay", "--strategies: empty list");
  return 0;
}

/* One replay: the jobs and the trace as loaded, and each strategy's run. */
struct rp {
  unsigned asked; /* the strategies printed (the oracle always runs) */
  int base_auto;
  double base_given;
  struct pfi_jobset d;
  int have_d, have_model;
  struct pfi_jobset_inputs ai;
  struct pfi_target tg;
  struct pfi_model model;
  struct pfi_replay rep[PFI_STRAT__COUNT];
  char vunit[160], odesc[300];
  double sum_lo, sum_hi; /* the jobs' floors and uncapped power, W */
  double baseline;       /* W */
  double tot_dt;         /* the trace's duration, s */
};

/* The files given, --strategies and --baseline. 0 or PFI_EXIT_USAGE. */
static int check_options(struct rp *r) {
  if (pfi_cli_input("--curves", curves) || pfi_cli_input("--target", target) ||
      pfi_cli_input("--features", features) ||
      pfi_cli_input("--model", model_path))
    return PFI_EXIT_USAGE;
  if (parse_strategies(strat_s, &r->asked))
    return PFI_EXIT_USAGE;
  r->base_auto = strcmp(base_s, "auto") == 0;
  if (!r->base_auto && (pfi_cli_parse_double(base_s, &r->base_given) < 0 ||
                        !(r->base_given > 0)))
    return pfi_cli_usage("replay",
                         "--baseline: expected a positive power in W or "
                         "auto, got '%s'",
                         base_s);
  return 0;
}

/* The jobs, the target trace, the PFI estimates and the problem as the
 * objective counts it. 0 or -1 with err set. */
static int load_inputs(struct rp *r, struct pfi_error *err) {
  struct pfi_noise nz = nopt.nz;
  if (pfi_jobset_load(&r->d, curves, map, features, err) < 0)
    return -1;
  r->have_d = 1;
  if (nopt.given && pfi_jobset_set_noise(&r->d, &nz, err) < 0)
    return -1;
  if (pfi_target_load(&r->tg, target, time_col, power_col, err) < 0)
    return -1;
  const unsigned pfi_bits =
      (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE);
  struct pfi_estimate_opts eo;
  pfi_estimate_opts_init(&eo);
  eo.true_pfi = true_pfi;
  eo.features = pfeat;
  if ((r->asked & pfi_bits) && model_path) {
    if (pfi_jobset_require_features(&r->d, "PFI estimation", err) < 0 ||
        pfi_model_load(&r->model, model_path, err) < 0)
      return -1;
    r->have_model = 1;
    eo.model = &r->model;
  }
  r->d.curve_fit = curve_fit;
  if (pfi_jobset_inputs_build(&r->d, r->asked, 0, &eo, &r->ai, err) < 0)
    return -1;
  curve_note("replay", &r->d.cs, curve_fit);
  if (true_pfi && (r->asked & pfi_bits))
    undefined_note("replay", &r->d);
  /* The jobs as the objective counts them: every strategy and every total
   * below works on these values. */
  int gpus_known = 0;
  struct pfi_problem vp;
  pfi_problem_init(&vp);
  if (obj_opt_problem_js(&ob, &r->d, &r->ai.prob, &vp, &gpus_known, err) <
      0) {
    pfi_problem_release(&vp);
    return -1;
  }
  pfi_problem_release(&r->ai.prob);
  r->ai.prob = vp;
  pfi_objective_unit(&ob.obj, gpus_known, r->d.cs.unit, r->vunit,
                     sizeof r->vunit);
  pfi_objective_describe(&ob.obj, gpus_known, r->odesc, sizeof r->odesc);
  return 0;
}

/* The baseline, then every strategy asked for and the oracle over the
 * trace. 0 or -1 with err set. */
static int run(struct rp *r, struct pfi_error *err) {
  pfi_problem_bounds(&r->ai.prob, &r->sum_lo, &r->sum_hi);
  r->baseline =
      r->base_auto ? pfi_target_baseline_auto(&r->tg) : r->base_given;
  if (!(r->baseline > 0) || !isfinite(r->baseline))
    return pfi_error_setloc(err, PFI_EPARSE, r->tg.name, r->tg.line[0], 0,
                            "the baseline (median of the first 15 minutes) "
                            "is %g W; give --baseline W",
                            r->baseline);
  const struct pfi_alloc_inputs in = r->ai.in;
  unsigned runs = r->asked | (1u << PFI_STRAT_ORACLE);
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    if (!(runs & (1u << s)))
      continue;
    if (pfi_replay_run(&r->ai.prob, (enum pfi_strategy)s, &in, &r->tg,
                       r->baseline, event_min, &r->rep[s], err) < 0)
      return -1;
  }
  /* The trace's duration, for mean powers (positive: at least two samples
   * in strictly increasing time order). */
  for (size_t k = 0; k < r->tg.n; k++)
    r->tot_dt += pfi_target_dt(&r->tg, k);
  return 0;
}

static const char *baseline_rule(const struct rp *r) {
  return r->base_auto ? "median of the first 15 minutes" : "given";
}

/* The per-GPU cap of job i at power x under the curve fit in use, W. */
static double cap_at(const struct rp *r, size_t i, double x) {
  return pfi_curve_fit_cap_at(&r->d.cs.c[i], (enum pfi_curve_fit)r->d.curve_fit,
                              x);
}

/* One strategy's object of the JSON output: its totals, its jobs and its
 * series. */
static json_t *json_strategy(const struct rp *r, int s) {
  const struct pfi_replay *x = &r->rep[s], *orc = &r->rep[PFI_STRAT_ORACLE];
  size_t n = r->d.cs.n;
  const struct pfi_target *tg = &r->tg;
  json_t *e = json_object();
  json_object_set_new(e, "strategy", json_string(pfi_strategy_name(s)));
  json_object_set_new(e, "retained", json_real(x->retained));
  json_object_set_new(e, "retained_event", json_real(x->retained_event));
  json_object_set_new(e, "gap_to_oracle_pp",
                      json_real(100 * (orc->retained - x->retained)));
  json_object_set_new(
      e, "gap_to_oracle_event_pp",
      json_real(100 * (orc->retained_event - x->retained_event)));
  json_object_set_new(e, "energy_kwh", json_real(x->energy_j / 3.6e6));
  json_object_set_new(e, "mean_power_w", json_real(x->energy_j / r->tot_dt));
  json_object_set_new(e, "infeasible_steps",
                      json_integer((json_int_t)x->infeasible_steps));
  json_object_set_new(e, "infeasible_max_w", json_real(x->infeasible_max_w));
  json_t *ja = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *o2 = json_object();
    json_object_set_new(o2, "job", pfi_cli_json_str(r->d.cs.c[i].job));
    json_object_set_new(o2, "retained", json_real(x->job_retained[i]));
    json_object_set_new(o2, "retained_event",
                        json_real(x->job_retained_event[i]));
    json_object_set_new(o2, "mean_power_w", json_real(x->job_mean_power_w[i]));
    json_array_append_new(ja, o2);
  }
  json_object_set_new(e, "jobs", ja);
  json_t *se = json_array();
  for (size_t k = 0; k < tg->n; k++) {
    json_t *o2 = json_object();
    json_object_set_new(o2, "time", pfi_cli_json_str(tg->label[k]));
    json_object_set_new(o2, "t_s", json_real(tg->t_s[k] - tg->t_s[0]));
    json_object_set_new(o2, "cut", json_real(x->cut[k]));
    json_object_set_new(o2, "budget_w", json_real(x->budget_w[k]));
    json_object_set_new(o2, "power_w", json_real(x->power_w[k]));
    json_object_set_new(o2, "tokens_per_s", json_real(x->tokens_per_s[k]));
    json_object_set_new(o2, "normalized", json_real(x->normalized[k]));
    json_object_set_new(o2, "feasible", json_boolean(x->feasible[k]));
    json_object_set_new(o2, "short_w", json_real(x->short_w[k]));
    json_t *jp = json_array(), *jc = json_array();
    for (size_t i = 0; i < n; i++) {
      double w = x->job_power_w[k * n + i];
      json_array_append_new(jp, json_real(w));
      json_array_append_new(jc, json_real(cap_at(r, i, w)));
    }
    json_object_set_new(o2, "job_power_w", jp);
    json_object_set_new(o2, "job_cap_w", jc);
    json_array_append_new(se, o2);
  }
  json_object_set_new(e, "series", se);
  return e;
}

static int print_json(const struct rp *r) {
  const struct pfi_replay *orc = &r->rep[PFI_STRAT_ORACLE];
  json_t *j = json_object();
  json_object_set_new(j, "target", pfi_cli_json_str(r->tg.name));
  json_object_set_new(j, "source",
                      json_string(r->d.any_emulated ? "emulated" : "input"));
  json_object_set_new(j, "objective",
                      json_string(pfi_objective_name(ob.obj.kind)));
  json_object_set_new(j, "objective_text", json_string(r->odesc));
  json_object_set_new(j, "objective_unit", json_string(r->vunit));
  json_object_set_new(j, "baseline_w", json_real(r->baseline));
  json_object_set_new(j, "baseline_rule", json_string(baseline_rule(r)));
  json_object_set_new(j, "steps", json_integer((json_int_t)r->tg.n));
  json_object_set_new(j, "event_steps",
                      json_integer((json_int_t)orc->event_steps));
  json_object_set_new(j, "uncapped_w", json_real(r->sum_hi));
  json_object_set_new(j, "floor_w", json_real(r->sum_lo));
  json_object_set_new(j, "max_cut", json_real(orc->max_cut));
  json_object_set_new(j, "mean_cut", json_real(orc->mean_cut));
  json_object_set_new(j, "infeasible_steps",
                      json_integer((json_int_t)orc->infeasible_steps));
  json_object_set_new(j, "infeasible_max_w", json_real(orc->infeasible_max_w));
  json_t *jobs = json_array();
  for (size_t i = 0; i < r->d.cs.n; i++)
    json_array_append_new(jobs, pfi_cli_json_str(r->d.cs.c[i].job));
  json_object_set_new(j, "jobs", jobs);
  json_t *sa = json_array();
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    if (r->asked & (1u << s))
      json_array_append_new(sa, json_strategy(r, s));
  json_object_set_new(j, "strategies", sa);
  return pfi_cli_print_json(j) ? PFI_EXIT_FAIL : PFI_EXIT_OK;
}

/* The rows of one strategy in the CSV table of --show. */
static void csv_rows(struct pfi_restab *tab, const struct rp *r, int s) {
  const struct pfi_replay *x = &r->rep[s], *orc = &r->rep[PFI_STRAT_ORACLE];
  const struct pfi_target *tg = &r->tg;
  const char *sn = pfi_strategy_name(s);
  size_t n = r->d.cs.n;
  if (show == SHOW_SERIES) {
    for (size_t k = 0; k < tg->n; k++) {
      const double v[] = {x->cut[k], x->budget_w[k], x->power_w[k],
                          x->tokens_per_s[k], x->normalized[k]};
      pfi_restab_row(tab);
      pfi_restab_text(tab, 0, sn);
      pfi_restab_text(tab, 1, tg->label[k]);
      pfi_restab_num(tab, 2, tg->t_s[k] - tg->t_s[0]);
      for (size_t q = 0; q < 5; q++)
        pfi_restab_num(tab, 3 + q, v[q]);
      pfi_restab_int(tab, 8, x->feasible[k]);
      pfi_restab_num(tab, 9, x->short_w[k]);
    }
  } else if (show == SHOW_CAPS) {
    for (size_t k = 0; k < tg->n; k++)
      for (size_t i = 0; i < n; i++) {
        double w = x->job_power_w[k * n + i];
        pfi_restab_row(tab);
        pfi_restab_text(tab, 0, sn);
        pfi_restab_text(tab, 1, tg->label[k]);
        pfi_restab_num(tab, 2, tg->t_s[k] - tg->t_s[0]);
        pfi_restab_text(tab, 3, r->d.cs.c[i].job);
        pfi_restab_num(tab, 4, w);
        pfi_restab_num(tab, 5, cap_at(r, i, w));
        pfi_restab_num(tab, 6, pfi_problem_eval(&r->ai.prob, i, w));
      }
  } else if (show == SHOW_JOBS) {
    for (size_t i = 0; i < n; i++) {
      pfi_restab_row(tab);
      pfi_restab_text(tab, 0, sn);
      pfi_restab_text(tab, 1, r->d.cs.c[i].job);
      pfi_restab_num(tab, 2, x->job_retained[i]);
      pfi_restab_num(tab, 3, x->job_retained_event[i]);
      pfi_restab_num(tab, 4, x->job_mean_power_w[i]);
    }
  } else {
    const double v[] = {x->retained,
                        x->retained_event,
                        100 * (orc->retained - x->retained),
                        100 * (orc->retained_event - x->retained_event),
                        x->energy_j / 3.6e6,
                        x->energy_j / r->tot_dt,
                        x->max_cut,
                        x->mean_cut};
    pfi_restab_row(tab);
    pfi_restab_text(tab, 0, sn);
    for (size_t q = 0; q < 8; q++)
      pfi_restab_num(tab, 1 + q, v[q]);
    pfi_restab_int(tab, 9, (long long)x->event_steps);
    pfi_restab_int(tab, 10, (long long)x->infeasible_steps);
    pfi_restab_num(tab, 11, x->infeasible_max_w);
  }
}

/* One CSV table per --show; the timestamps always quoted (they may hold a
 * comma, and readers of these files expect them quoted). */
static int print_csv(const struct rp *r) {
#define F6(n) {.name = n, .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 6}
#define TXT(n) {.name = n, .kind = PFI_RESTAB_TEXT}
#define TIME {.name = "time", .kind = PFI_RESTAB_TEXT, .csv_quote = 1}
#define TS {.name = "t_s", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3}
  static const struct pfi_restab_col series[] = {
      TXT("strategy"), TIME, TS, F6("cut"), F6("budget_w"), F6("power_w"),
      F6("tokens_per_s"), F6("normalized"),
      {.name = "feasible", .kind = PFI_RESTAB_INT}, F6("short_w"),
  };
  static const struct pfi_restab_col caps[] = {
      TXT("strategy"), TIME,          TS,
      TXT("job"),      F6("power_w"), F6("cap_w"),
      F6("tokens_per_s"),
  };
  static const struct pfi_restab_col jobs[] = {
      TXT("strategy"), TXT("job"), F6("retained"), F6("retained_event"),
      F6("mean_power_w"),
  };
  static const struct pfi_restab_col summary[] = {
      TXT("strategy"),
      F6("retained"),
      F6("retained_event"),
      F6("gap_to_oracle_pp"),
      F6("gap_to_oracle_event_pp"),
      F6("energy_kwh"),
      F6("mean_power_w"),
      F6("max_cut"),
      F6("mean_cut"),
      {.name = "event_steps", .kind = PFI_RESTAB_INT},
      {.name = "infeasible_steps", .kind = PFI_RESTAB_INT},
      F6("infeasible_max_w"),
  };
#undef F6
#undef TXT
#undef TIME
#undef TS
#define NCOLS(a) (sizeof a / sizeof a[0])
  struct pfi_restab tab;
  if (show == SHOW_SERIES)
    pfi_restab_init(&tab, series, NCOLS(series));
  else if (show == SHOW_CAPS)
    pfi_restab_init(&tab, caps, NCOLS(caps));
  else if (show == SHOW_JOBS)
    pfi_restab_init(&tab, jobs, NCOLS(jobs));
  else
    pfi_restab_init(&tab, summary, NCOLS(summary));
#undef NCOLS
  for (int s = 0; s < PFI_STRAT__COUNT && !tab.failed; s++)
    if (r->asked & (1u << s))
      csv_rows(&tab, r, s);
  int status = pfi_cli_print_table(&tab, PFI_FMT_CSV) != PFI_EXIT_OK
                   ? PFI_EXIT_FAIL
                   : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  return status;
}

/* The lines above the tables: the trace, the baseline, the jobs, the
 * objective and the oracle's cuts. */
static void print_head(const struct rp *r) {
  const struct pfi_replay *orc = &r->rep[PFI_STRAT_ORACLE];
  const struct pfi_target *tg = &r->tg;
  /* Watts in fixed point, or %g beyond 1e15 W (a value near DBL_MAX would
   * be 309 digits). */
  char wb[3][PFI_FMT_MAX];
  pfi_fmt_fixed(wb[0], r->baseline, 1);
  pfi_fmt_fixed(wb[1], r->sum_hi, 1);
  pfi_fmt_fixed(wb[2], r->sum_lo, 1);
  printf("replay of %s: %zu steps, %s .. %s; baseline %s W (%s)%s\n", tg->name,
         tg->n, tg->label[0], tg->label[tg->n - 1], wb[0], baseline_rule(r),
         r->d.any_emulated ? " (emulated data)" : "");
  printf("%zu jobs: uncapped %s W, floors %s W (largest feasible cut "
         "%.1f %%)\n",
         r->d.cs.n, wb[1], wb[2],
         r->sum_hi > 0 ? 100 * (1 - r->sum_lo / r->sum_hi) : 0.0);
  printf("%s (%s)\n", r->odesc, r->vunit);
  printf(
      "cut: max %.1f %%, mean %.1f %% over %zu event steps (cut >= %.3g %%); "
      "infeasible steps: %zu",
      100 * orc->max_cut, 100 * orc->mean_cut, orc->event_steps,
      100 * event_min, orc->infeasible_steps);
  if (orc->infeasible_steps)
    printf(" (jobs at their floors, up to %s W above the budget)",
           (pfi_fmt_fixed(wb[0], orc->infeasible_max_w, 1), wb[0]));
  printf("\n\n");
}

/* --show caps: the per-GPU cap of each job at each step, what a controller
 * sets. */
static int print_caps(const struct rp *r) {
  size_t n = r->d.cs.n;
  char wb[PFI_FMT_MAX];
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    if (!(r->asked & (1u << s)))
      continue;
    const struct pfi_replay *x = &r->rep[s];
    printf("%s: per-GPU cap (W) of each job\n%-26s", pfi_strategy_name(s),
           "time");
    /* Each column as wide as its job's name (at least 12). */
    for (size_t i = 0; i < n; i++) {
      putchar(' ');
      pfi_cli_put_name(stdout, r->d.cs.c[i].job, colw(r->d.cs.c[i].job));
    }
    printf("\n");
    for (size_t k = 0; k < r->tg.n; k++) {
      pfi_cli_put_name(stdout, r->tg.label[k], 26);
      for (size_t i = 0; i < n; i++) {
        pfi_fmt_fixed(wb, cap_at(r, i, x->job_power_w[k * n + i]), 1);
        printf(" %-*s", colw(r->d.cs.c[i].job), wb);
      }
      printf("\n");
    }
    printf("\n");
  }
  return PFI_EXIT_OK;
}

/* --show series: one table of the time series per strategy. */
static int print_series(const struct rp *r) {
  static const struct pfi_restab_col cols[] = {
      {.name = "time", .kind = PFI_RESTAB_TEXT, .width = 26, .fixed = 1},
      {.name = "cut_%", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 2,
       .width = 8, .fixed = 1, .sep = 1},
      {.name = "budget_w", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
       .width = 12, .fixed = 1, .sep = 1},
      {.name = "power_w", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
       .width = 12, .fixed = 1, .sep = 1},
      {.name = "tokens_per_s", .kind = PFI_RESTAB_NUM, .style = 'f',
       .prec = 4, .width = 14, .fixed = 1, .sep = 1},
      {.name = "normalized", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 4,
       .width = 10, .fixed = 1, .sep = 1},
      {.name = "short_w", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
       .width = 10, .fixed = 1, .sep = 1},
  };
  int status = PFI_EXIT_OK;
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    if (!(r->asked & (1u << s)))
      continue;
    const struct pfi_replay *x = &r->rep[s];
    struct pfi_restab tab;
    pfi_restab_init(&tab, cols, 7);
    pfi_restab_title(&tab, pfi_strategy_name(s));
    for (size_t k = 0; k < r->tg.n && !tab.failed; k++) {
      pfi_restab_row(&tab);
      pfi_restab_text(&tab, 0, r->tg.label[k]);
      pfi_restab_num(&tab, 1, 100 * x->cut[k]);
      pfi_restab_num(&tab, 2, x->budget_w[k]);
      pfi_restab_num(&tab, 3, x->power_w[k]);
      pfi_restab_num(&tab, 4, x->tokens_per_s[k]);
      pfi_restab_num(&tab, 5, x->normalized[k]);
      pfi_restab_num(&tab, 6, x->short_w[k]);
    }
    if (pfi_cli_print_table(&tab, PFI_FMT_TABLE) != PFI_EXIT_OK)
      status = PFI_EXIT_FAIL;
    pfi_restab_release(&tab);
    printf("\n");
  }
  return status;
}

/* --show summary: the totals of each strategy. */
static int print_summary(const struct rp *r) {
  static const struct pfi_restab_col cols[] = {
      {.name = "strategy", .kind = PFI_RESTAB_TEXT},
      {.name = "retained_pct", .label = "retained", .unit = "%",
       .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3},
      {.name = "in_event_pct", .label = "in event", .unit = "%",
       .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3},
      {.name = "gap_pp", .label = "gap", .unit = "pp", .kind = PFI_RESTAB_NUM,
       .style = 'f', .prec = 3},
      {.name = "gap_ev_pp", .label = "gap in event", .unit = "pp",
       .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3},
      {.name = "energy_kwh", .label = "energy", .unit = "kWh",
       .kind = PFI_RESTAB_NUM, .qty = PFI_RESTAB_Q_ENERGY},
      {.name = "mean_power_w", .label = "mean power", .unit = "W",
       .kind = PFI_RESTAB_NUM, .qty = PFI_RESTAB_Q_POWER},
      {.name = "infeasible", .kind = PFI_RESTAB_INT},
  };
  const struct pfi_replay *orc = &r->rep[PFI_STRAT_ORACLE];
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, 8);
  for (int s = 0; s < PFI_STRAT__COUNT && !tab.failed; s++) {
    if (!(r->asked & (1u << s)))
      continue;
    const struct pfi_replay *x = &r->rep[s];
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, 0, pfi_strategy_name(s));
    pfi_restab_num(&tab, 1, 100 * x->retained);
    pfi_restab_num(&tab, 2, 100 * x->retained_event);
    pfi_restab_num(&tab, 3, 100 * (orc->retained - x->retained));
    pfi_restab_num(&tab, 4, 100 * (orc->retained_event - x->retained_event));
    pfi_restab_num(&tab, 5, x->energy_j / 3.6e6);
    pfi_restab_num(&tab, 6, x->energy_j / r->tot_dt);
    pfi_restab_int(&tab, 7, (long long)x->infeasible_steps);
  }
  int status = pfi_cli_print_table(&tab, PFI_FMT_TABLE) != PFI_EXIT_OK
                   ? PFI_EXIT_FAIL
                   : PFI_EXIT_OK;
  pfi_restab_release(&tab);
  printf("\n");
  return status;
}

/* Per job: the throughput retained during the event, a column per
 * strategy asked for. */
static int print_jobs(const struct rp *r) {
  struct pfi_restab_col jcols[1 + PFI_STRAT__COUNT];
  int jat[PFI_STRAT__COUNT];
  size_t jn = 0;
  jcols[jn++] = (struct pfi_restab_col){
      .name = "job", .kind = PFI_RESTAB_TEXT, .max_width = 32};
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    if (r->asked & (1u << s)) {
      jat[s] = (int)jn;
      jcols[jn++] = (struct pfi_restab_col){.name = pfi_strategy_name(s),
                                            .kind = PFI_RESTAB_NUM,
                                            .style = 'f',
                                            .prec = 2};
    }
  struct pfi_restab jt;
  pfi_restab_init(&jt, jcols, jn);
  pfi_restab_title(
      &jt, "throughput retained during the event (% of uncapped), per job");
  for (size_t i = 0; i < r->d.cs.n && !jt.failed; i++) {
    pfi_restab_row(&jt);
    pfi_restab_text(&jt, 0, r->d.cs.c[i].job);
    for (int s = 0; s < PFI_STRAT__COUNT; s++)
      if (r->asked & (1u << s))
        pfi_restab_num(&jt, (size_t)jat[s],
                       100 * r->rep[s].job_retained_event[i]);
  }
  int status = pfi_cli_print_table(&jt, PFI_FMT_TABLE) != PFI_EXIT_OK
                   ? PFI_EXIT_FAIL
                   : PFI_EXIT_OK;
  pfi_restab_release(&jt);
  return status;
}

/* The terminal output of --show. */
static int print_terminal(const struct rp *r) {
  print_head(r);
  if (show == SHOW_CAPS)
    return print_caps(r);
  if (show == SHOW_SERIES)
    return print_series(r);
  int status = show == SHOW_SUMMARY ? print_summary(r) : PFI_EXIT_OK;
  if (print_jobs(r) != PFI_EXIT_OK)
    status = PFI_EXIT_FAIL;
  return status;
}

int cmd_replay(int argc, char **argv) {
  obj_opt_init(&ob);
  struct pfi_optparse op;
  int st = pfi_opt_parse(&op, &help, argc, argv);
  if (st != PFI_OPT_GO)
    return st;
  struct rp rp, *r = &rp;
  memset(r, 0, sizeof *r);
  pfi_problem_init(&r->ai.prob);
  int status = check_options(r);
  if (status)
    return status;
  struct pfi_error err;
  pfi_error_clear(&err);
  if (load_inputs(r, &err) < 0 || run(r, &err) < 0) {
    status = pfi_cli_fail(&err);
  } else {
    status = fmt == PFI_FMT_JSON  ? print_json(r)
             : fmt == PFI_FMT_CSV ? print_csv(r)
                                  : print_terminal(r);
    if (fflush(stdout) != 0)
      status = PFI_EXIT_FAIL;
  }
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    pfi_replay_release(&r->rep[s]);
  if (r->have_model)
    pfi_model_release(&r->model);
  if (r->have_d)
    pfi_jobset_release(&r->d);
  pfi_jobset_inputs_release(&r->ai);
  obj_opt_release(&ob);
  pfi_target_release(&r->tg);
  return status;
}
