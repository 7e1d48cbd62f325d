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

int cmd_replay(int argc, char **argv) {
  obj_opt_init(&ob);
  struct pfi_optparse op;
  int st = pfi_opt_parse(&op, &help, argc, argv);
  if (st != PFI_OPT_GO)
    return st;
  struct pfi_noise nz = nopt.nz;
  int have_nz = nopt.given;
  if (pfi_cli_input("--curves", curves) || pfi_cli_input("--target", target) ||
      pfi_cli_input("--features", features) ||
      pfi_cli_input("--model", model_path))
    return PFI_EXIT_USAGE;
  unsigned asked;
  if (parse_strategies(strat_s, &asked))
    return PFI_EXIT_USAGE;
  double base_given = 0;
  int base_auto = strcmp(base_s, "auto") == 0;
  if (!base_auto &&
      (pfi_cli_parse_double(base_s, &base_given) < 0 || !(base_given > 0)))
    return pfi_cli_usage("replay",
                         "--baseline: expected a positive power in W or "
                         "auto, got '%s'",
                         base_s);

  int status = PFI_EXIT_OK;
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_jobset d;
  struct pfi_jobset_inputs ai;
  struct pfi_target tg;
  struct pfi_model model;
  struct pfi_replay rep[PFI_STRAT__COUNT];
  int have_model = 0;
  memset(rep, 0, sizeof rep);
  memset(&tg, 0, sizeof tg);
  memset(&ai, 0, sizeof ai);
  pfi_problem_init(&ai.prob);
  if (pfi_jobset_load(&d, curves, map, features, &err) < 0)
    return pfi_cli_fail(&err);
  size_t n = d.cs.n;
  const struct pfi_problem *pp = &ai.prob;
  if (have_nz && pfi_jobset_set_noise(&d, &nz, &err) < 0)
    goto fail;
  if (pfi_target_load(&tg, target, time_col, power_col, &err) < 0)
    goto fail;
  struct pfi_estimate_opts eo;
  pfi_estimate_opts_init(&eo);
  eo.true_pfi = true_pfi;
  eo.features = pfeat;
  if ((asked & ((1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE))) &&
      model_path) {
    if (pfi_jobset_require_features(&d, "PFI estimation", &err) < 0 ||
        pfi_model_load(&model, model_path, &err) < 0)
      goto fail;
    have_model = 1;
    eo.model = &model;
  }
  d.curve_fit = curve_fit;
  if (pfi_jobset_inputs_build(&d, asked, 0, &eo, &ai, &err) < 0)
    goto fail;
  curve_note("replay", &d.cs, curve_fit);
  if (true_pfi &&
      (asked & ((1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE))))
    undefined_note("replay", &d);
  /* The jobs as the objective counts them: every strategy and every total
   * below works on these values. */
  int gpus_known = 0;
  char vunit[160], odesc[300];
  {
    struct pfi_problem vp;
    pfi_problem_init(&vp);
    if (obj_opt_problem_js(&ob, &d, &ai.prob, &vp, &gpus_known, &err) < 0) {
      pfi_problem_release(&vp);
      goto fail;
    }
    pfi_problem_release(&ai.prob);
    ai.prob = vp;
  }
  pfi_objective_unit(&ob.obj, gpus_known, d.cs.unit, vunit, sizeof vunit);
  pfi_objective_describe(&ob.obj, gpus_known, odesc, sizeof odesc);
  double sum_lo, sum_hi;
  pfi_problem_bounds(pp, &sum_lo, &sum_hi);
  double baseline = base_auto ? pfi_target_baseline_auto(&tg) : base_given;
  if (!(baseline > 0) || !isfinite(baseline)) {
    pfi_error_setloc(&err, PFI_EPARSE, tg.name, tg.line[0], 0,
                     "the baseline (median of the first 15 minutes) is %g "
                     "W; give --baseline W",
                     baseline);
    goto fail;
  }
  const struct pfi_alloc_inputs in = ai.in;
  unsigned run = asked | (1u << PFI_STRAT_ORACLE);
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    if (!(run & (1u << s)))
      continue;
    if (pfi_replay_run(pp, (enum pfi_strategy)s, &in, &tg, baseline, event_min,
                       &rep[s], &err) < 0)
      goto fail;
  }
  const struct pfi_replay *orc = &rep[PFI_STRAT_ORACLE];
  int emulated = d.any_emulated;
  const char *rule = base_auto ? "median of the first 15 minutes" : "given";

  /* The trace's duration, for mean powers (positive: at least two samples
   * in strictly increasing time order). */
  double tot_dt = 0;
  for (size_t k = 0; k < tg.n; k++)
    tot_dt += pfi_target_dt(&tg, k);
  if (fmt == PFI_FMT_JSON) {
    json_t *j = json_object();
    json_object_set_new(j, "target", pfi_cli_json_str(tg.name));
    json_object_set_new(j, "source",
                        json_string(emulated ? "emulated" : "input"));
    json_object_set_new(j, "objective",
                        json_string(pfi_objective_name(ob.obj.kind)));
    json_object_set_new(j, "objective_text", json_string(odesc));
    json_object_set_new(j, "objective_unit", json_string(vunit));
    json_object_set_new(j, "baseline_w", json_real(baseline));
    json_object_set_new(j, "baseline_rule", json_string(rule));
    json_object_set_new(j, "steps", json_integer((json_int_t)tg.n));
    json_object_set_new(j, "event_steps",
                        json_integer((json_int_t)orc->event_steps));
    json_object_set_new(j, "uncapped_w", json_real(sum_hi));
    json_object_set_new(j, "floor_w", json_real(sum_lo));
    json_object_set_new(j, "max_cut", json_real(orc->max_cut));
    json_object_set_new(j, "mean_cut", json_real(orc->mean_cut));
    json_object_set_new(j, "infeasible_steps",
                        json_integer((json_int_t)orc->infeasible_steps));
    json_object_set_new(j, "infeasible_max_w",
                        json_real(orc->infeasible_max_w));
    json_t *jobs = json_array();
    for (size_t i = 0; i < n; i++)
      json_array_append_new(jobs, pfi_cli_json_str(d.cs.c[i].job));
    json_object_set_new(j, "jobs", jobs);
    json_t *sa = json_array();
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      if (!(asked & (1u << s)))
        continue;
      const struct pfi_replay *r = &rep[s];
      json_t *e = json_object();
      json_object_set_new(e, "strategy", json_string(pfi_strategy_name(s)));
      json_object_set_new(e, "retained", json_real(r->retained));
      json_object_set_new(e, "retained_event", json_real(r->retained_event));
      json_object_set_new(e, "gap_to_oracle_pp",
                          json_real(100 * (orc->retained - r->retained)));
      json_object_set_new(
          e, "gap_to_oracle_event_pp",
          json_real(100 * (orc->retained_event - r->retained_event)));
      json_object_set_new(e, "energy_kwh", json_real(r->energy_j / 3.6e6));
      json_object_set_new(e, "mean_power_w", json_real(r->energy_j / tot_dt));
      json_object_set_new(e, "infeasible_steps",
                          json_integer((json_int_t)r->infeasible_steps));
      json_object_set_new(e, "infeasible_max_w",
                          json_real(r->infeasible_max_w));
      json_t *ja = json_array();
      for (size_t i = 0; i < n; i++) {
        json_t *o2 = json_object();
        json_object_set_new(o2, "job", pfi_cli_json_str(d.cs.c[i].job));
        json_object_set_new(o2, "retained", json_real(r->job_retained[i]));
        json_object_set_new(o2, "retained_event",
                            json_real(r->job_retained_event[i]));
        json_object_set_new(o2, "mean_power_w",
                            json_real(r->job_mean_power_w[i]));
        json_array_append_new(ja, o2);
      }
      json_object_set_new(e, "jobs", ja);
      json_t *se = json_array();
      for (size_t k = 0; k < tg.n; k++) {
        json_t *o2 = json_object();
        json_object_set_new(o2, "time", pfi_cli_json_str(tg.label[k]));
        json_object_set_new(o2, "t_s", json_real(tg.t_s[k] - tg.t_s[0]));
        json_object_set_new(o2, "cut", json_real(r->cut[k]));
        json_object_set_new(o2, "budget_w", json_real(r->budget_w[k]));
        json_object_set_new(o2, "power_w", json_real(r->power_w[k]));
        json_object_set_new(o2, "tokens_per_s", json_real(r->tokens_per_s[k]));
        json_object_set_new(o2, "normalized", json_real(r->normalized[k]));
        json_object_set_new(o2, "feasible", json_boolean(r->feasible[k]));
        json_object_set_new(o2, "short_w", json_real(r->short_w[k]));
        json_t *jp = json_array(), *jc = json_array();
        for (size_t i = 0; i < n; i++) {
          double x = r->job_power_w[k * n + i];
          json_array_append_new(jp, json_real(x));
          json_array_append_new(
              jc, json_real(pfi_curve_fit_cap_at(
                      &d.cs.c[i], (enum pfi_curve_fit)d.curve_fit, x)));
        }
        json_object_set_new(o2, "job_power_w", jp);
        json_object_set_new(o2, "job_cap_w", jc);
        json_array_append_new(se, o2);
      }
      json_object_set_new(e, "series", se);
      json_array_append_new(sa, e);
    }
    json_object_set_new(j, "strategies", sa);
    if (pfi_cli_print_json(j))
      status = PFI_EXIT_FAIL;
    goto done;
  }

  if (fmt == PFI_FMT_CSV) {
    /* One table per --show; the timestamps always quoted (they may hold a
     * comma, and readers of these files expect them quoted). */
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
    for (int s = 0; s < PFI_STRAT__COUNT && !tab.failed; s++) {
      if (!(asked & (1u << s)))
        continue;
      const struct pfi_replay *r = &rep[s];
      const char *sn = pfi_strategy_name(s);
      if (show == SHOW_SERIES) {
        for (size_t k = 0; k < tg.n; k++) {
          const double v[] = {r->cut[k],          r->budget_w[k],
                              r->power_w[k],      r->tokens_per_s[k],
                              r->normalized[k]};
          pfi_restab_row(&tab);
          pfi_restab_text(&tab, 0, sn);
          pfi_restab_text(&tab, 1, tg.label[k]);
          pfi_restab_num(&tab, 2, tg.t_s[k] - tg.t_s[0]);
          for (size_t q = 0; q < 5; q++)
            pfi_restab_num(&tab, 3 + q, v[q]);
          pfi_restab_int(&tab, 8, r->feasible[k]);
          pfi_restab_num(&tab, 9, r->short_w[k]);
        }
      } else if (show == SHOW_CAPS) {
        for (size_t k = 0; k < tg.n; k++)
          for (size_t i = 0; i < n; i++) {
            double x = r->job_power_w[k * n + i];
            pfi_restab_row(&tab);
            pfi_restab_text(&tab, 0, sn);
            pfi_restab_text(&tab, 1, tg.label[k]);
            pfi_restab_num(&tab, 2, tg.t_s[k] - tg.t_s[0]);
            pfi_restab_text(&tab, 3, d.cs.c[i].job);
            pfi_restab_num(&tab, 4, x);
            pfi_restab_num(&tab, 5,
                           pfi_curve_fit_cap_at(
                               &d.cs.c[i], (enum pfi_curve_fit)d.curve_fit, x));
            pfi_restab_num(&tab, 6, pfi_problem_eval(pp, i, x));
          }
      } else if (show == SHOW_JOBS) {
        for (size_t i = 0; i < n; i++) {
          pfi_restab_row(&tab);
          pfi_restab_text(&tab, 0, sn);
          pfi_restab_text(&tab, 1, d.cs.c[i].job);
          pfi_restab_num(&tab, 2, r->job_retained[i]);
          pfi_restab_num(&tab, 3, r->job_retained_event[i]);
          pfi_restab_num(&tab, 4, r->job_mean_power_w[i]);
        }
      } else {
        const double v[] = {r->retained,
                            r->retained_event,
                            100 * (orc->retained - r->retained),
                            100 * (orc->retained_event - r->retained_event),
                            r->energy_j / 3.6e6,
                            r->energy_j / tot_dt,
                            r->max_cut,
                            r->mean_cut};
        pfi_restab_row(&tab);
        pfi_restab_text(&tab, 0, sn);
        for (size_t q = 0; q < 8; q++)
          pfi_restab_num(&tab, 1 + q, v[q]);
        pfi_restab_int(&tab, 9, (long long)r->event_steps);
        pfi_restab_int(&tab, 10, (long long)r->infeasible_steps);
        pfi_restab_num(&tab, 11, r->infeasible_max_w);
      }
    }
    if (pfi_cli_print_table(&tab, fmt) != PFI_EXIT_OK)
      status = PFI_EXIT_FAIL;
    pfi_restab_release(&tab);
    goto done;
  }

  /* Table. */
  /* Watts in fixed point, or %g beyond 1e15 W (a value near DBL_MAX would
   * be 309 digits). */
  char wb[3][PFI_FMT_MAX];
  pfi_fmt_fixed(wb[0], baseline, 1);
  pfi_fmt_fixed(wb[1], sum_hi, 1);
  pfi_fmt_fixed(wb[2], sum_lo, 1);
  printf("replay of %s: %zu steps, %s .. %s; baseline %s W (%s)%s\n", tg.name,
         tg.n, tg.label[0], tg.label[tg.n - 1], wb[0], rule,
         emulated ? " (emulated data)" : "");
  printf("%zu jobs: uncapped %s W, floors %s W (largest feasible cut "
         "%.1f %%)\n",
         n, wb[1], wb[2], sum_hi > 0 ? 100 * (1 - sum_lo / sum_hi) : 0.0);
  printf("%s (%s)\n", odesc, vunit);
  printf(
      "cut: max %.1f %%, mean %.1f %% over %zu event steps (cut >= %.3g %%); "
      "infeasible steps: %zu",
      100 * orc->max_cut, 100 * orc->mean_cut, orc->event_steps,
      100 * event_min, orc->infeasible_steps);
  if (orc->infeasible_steps)
    printf(" (jobs at their floors, up to %s W above the budget)",
           (pfi_fmt_fixed(wb[0], orc->infeasible_max_w, 1), wb[0]));
  printf("\n\n");
  if (show == SHOW_CAPS) {
    /* The per-GPU cap of each job at each step: what a controller sets. */
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      if (!(asked & (1u << s)))
        continue;
      const struct pfi_replay *r = &rep[s];
      printf("%s: per-GPU cap (W) of each job\n%-26s", pfi_strategy_name(s),
             "time");
      /* Each column as wide as its job's name (at least 12). */
      for (size_t i = 0; i < n; i++) {
        putchar(' ');
        pfi_cli_put_name(stdout, d.cs.c[i].job, colw(d.cs.c[i].job));
      }
      printf("\n");
      for (size_t k = 0; k < tg.n; k++) {
        pfi_cli_put_name(stdout, tg.label[k], 26);
        for (size_t i = 0; i < n; i++) {
          pfi_fmt_fixed(wb[0],
                        pfi_curve_fit_cap_at(&d.cs.c[i],
                                             (enum pfi_curve_fit)d.curve_fit,
                                             r->job_power_w[k * n + i]),
                        1);
          printf(" %-*s", colw(d.cs.c[i].job), wb[0]);
        }
        printf("\n");
      }
      printf("\n");
    }
    goto done;
  }
  if (show == SHOW_SERIES) {
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      if (!(asked & (1u << s)))
        continue;
      const struct pfi_replay *r = &rep[s];
      static const struct pfi_restab_col cols[] = {
          {.name = "time", .kind = PFI_RESTAB_TEXT, .width = 26, .fixed = 1},
          {.name = "cut_%", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 2,
           .width = 8, .fixed = 1, .sep = 1},
          {.name = "budget_w", .kind = PFI_RESTAB_NUM, .style = 'f',
           .prec = 1, .width = 12, .fixed = 1, .sep = 1},
          {.name = "power_w", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
           .width = 12, .fixed = 1, .sep = 1},
          {.name = "tokens_per_s", .kind = PFI_RESTAB_NUM, .style = 'f',
           .prec = 4, .width = 14, .fixed = 1, .sep = 1},
          {.name = "normalized", .kind = PFI_RESTAB_NUM, .style = 'f',
           .prec = 4, .width = 10, .fixed = 1, .sep = 1},
          {.name = "short_w", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 1,
           .width = 10, .fixed = 1, .sep = 1},
      };
      struct pfi_restab tab;
      pfi_restab_init(&tab, cols, 7);
      pfi_restab_title(&tab, pfi_strategy_name(s));
      for (size_t k = 0; k < tg.n && !tab.failed; k++) {
        pfi_restab_row(&tab);
        pfi_restab_text(&tab, 0, tg.label[k]);
        pfi_restab_num(&tab, 1, 100 * r->cut[k]);
        pfi_restab_num(&tab, 2, r->budget_w[k]);
        pfi_restab_num(&tab, 3, r->power_w[k]);
        pfi_restab_num(&tab, 4, r->tokens_per_s[k]);
        pfi_restab_num(&tab, 5, r->normalized[k]);
        pfi_restab_num(&tab, 6, r->short_w[k]);
      }
      if (pfi_cli_print_table(&tab, PFI_FMT_TABLE) != PFI_EXIT_OK)
        status = PFI_EXIT_FAIL;
      pfi_restab_release(&tab);
      printf("\n");
    }
    goto done;
  }
  if (show == SHOW_SUMMARY) {
    static const struct pfi_restab_col cols[] = {
        {.name = "strategy", .kind = PFI_RESTAB_TEXT},
        {.name = "retained_pct", .label = "retained", .unit = "%",
         .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3},
        {.name = "in_event_pct", .label = "in event", .unit = "%",
         .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3},
        {.name = "gap_pp", .label = "gap", .unit = "pp",
         .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3},
        {.name = "gap_ev_pp", .label = "gap in event", .unit = "pp",
         .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 3},
        {.name = "energy_kwh", .label = "energy", .unit = "kWh",
         .kind = PFI_RESTAB_NUM, .qty = PFI_RESTAB_Q_ENERGY},
        {.name = "mean_power_w", .label = "mean power", .unit = "W",
         .kind = PFI_RESTAB_NUM, .qty = PFI_RESTAB_Q_POWER},
        {.name = "infeasible", .kind = PFI_RESTAB_INT},
    };
    struct pfi_restab tab;
    pfi_restab_init(&tab, cols, 8);
    for (int s = 0; s < PFI_STRAT__COUNT && !tab.failed; s++) {
      if (!(asked & (1u << s)))
        continue;
      const struct pfi_replay *r = &rep[s];
      pfi_restab_row(&tab);
      pfi_restab_text(&tab, 0, pfi_strategy_name(s));
      pfi_restab_num(&tab, 1, 100 * r->retained);
      pfi_restab_num(&tab, 2, 100 * r->retained_event);
      pfi_restab_num(&tab, 3, 100 * (orc->retained - r->retained));
      pfi_restab_num(&tab, 4, 100 * (orc->retained_event - r->retained_event));
      pfi_restab_num(&tab, 5, r->energy_j / 3.6e6);
      pfi_restab_num(&tab, 6, r->energy_j / tot_dt);
      pfi_restab_int(&tab, 7, (long long)r->infeasible_steps);
    }
    if (pfi_cli_print_table(&tab, PFI_FMT_TABLE) != PFI_EXIT_OK)
      status = PFI_EXIT_FAIL;
    pfi_restab_release(&tab);
    printf("\n");
  }
  /* Per job: a column per strategy asked for. */
  struct pfi_restab_col jcols[1 + PFI_STRAT__COUNT];
  int jat[PFI_STRAT__COUNT];
  size_t jn = 0;
  jcols[jn++] = (struct pfi_restab_col){
      .name = "job", .kind = PFI_RESTAB_TEXT, .max_width = 32};
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    if (asked & (1u << s)) {
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
  for (size_t i = 0; i < n && !jt.failed; i++) {
    pfi_restab_row(&jt);
    pfi_restab_text(&jt, 0, d.cs.c[i].job);
    for (int s = 0; s < PFI_STRAT__COUNT; s++)
      if (asked & (1u << s))
        pfi_restab_num(&jt, (size_t)jat[s], 100 * rep[s].job_retained_event[i]);
  }
  if (pfi_cli_print_table(&jt, PFI_FMT_TABLE) != PFI_EXIT_OK)
    status = PFI_EXIT_FAIL;
  pfi_restab_release(&jt);
done:
  if (fflush(stdout) != 0)
    status = PFI_EXIT_FAIL;
  goto out;
fail:
  status = pfi_cli_fail(&err);
out:
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    pfi_replay_release(&rep[s]);
  if (have_model)
    pfi_model_release(&model);
  pfi_jobset_release(&d);
  pfi_jobset_inputs_release(&ai);
  obj_opt_release(&ob);
  pfi_target_release(&tg);
  return status;
}
