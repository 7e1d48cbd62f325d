/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi control --emulate`: the controller against the emulated cluster in
 * virtual time, with equal-weight cuts and the oracle beside it. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"
#include "pfi/cluster.h"
#include "pfi/data.h"
#include "pfi/objective.h"
#include "pfi/records.h"
#include "pfi/stats.h"

/* The options, bound to these (src/base/opt.h); cfg holds the
 * controller's defaults (pfi_ctl_config_init()) before parsing. */
static const char *cluster, *target, *records, *series, *outfile;
static double start, ramp, hold, tail, notice = NAN;
static unsigned long seed, nseeds;
static int compare = 1, phoenix, format;
static struct pfi_ctl_config cfg;

static const struct pfi_opt_word objectives[] = {
    {"work", PFI_OBJ_WORK},
    {"throughput", PFI_OBJ_THROUGHPUT},
    {"jobs", PFI_OBJ_JOBS},
    {NULL, 0}};
static const struct pfi_opt_word bits[] = {{"0", 0}, {"1", 1}, {NULL, 0}};

/* A duration of the event's timeline. */
#define SPAN(l, v, an, h, d)                                                   \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_DURATION, .var = v, .ival = PFI_DUR_ANY, .def = d}
/* A margin: the controller's range (include/pfi/control.h). */
#define MARGIN(l, v, h)                                                        \
  PFI_OPT_NUMBER(l, v, PFI_CTL_MARGIN_MIN, PFI_CTL_MARGIN_MAX,                 \
                 PFI_RANGE_HI_OPEN, "M", h)

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("emulate", 0, &cluster, "CLUSTER",
                   "the emulated cluster: a file or inline pairs, or "
                   "'default' (above)"),
    PFI_OPT_STRING("target", 0, &target, "T",
                   "the event's power target (above)"),
    PFI_OPT_FLAG("phoenix", 0, &phoenix,
                 "the Phoenix event of 2025-05-04 instead of --target "
                 "(above)"),
    SPAN("start", &start, "S", "pre-event time (the baseline's median)",
         "15m"),
    SPAN("ramp", &ramp, "R", "ramp from the baseline to the target", "60s"),
    SPAN("hold", &hold, "H", "event length after the ramp", "3h"),
    SPAN("tail", &tail, "S", "after the event", "20m"),
    {.lng = "notice", .arg = PFI_ARG_REQ, .argname = "D",
     .help = "the notice the event gives (default 0; as event_notice_s)",
     .type = PFI_OT_DURATION, .var = &notice, .ival = PFI_DUR_ANY, .lo = 0,
     .hi = 1e7},
    {.lng = "seed", .arg = PFI_ARG_REQ, .argname = "N", .help = "first seed",
     .type = PFI_OT_ULONG, .var = &seed, .def = "1"},
    {.lng = "seeds", .arg = PFI_ARG_REQ, .argname = "K",
     .help = "seeds N..N+K-1", .type = PFI_OT_ULONG, .var = &nseeds, .lo = 1,
     .hi = 1000, .def = "1"},
    PFI_OPT_SET("no-compare", 0, &compare, 0,
                "the controller alone: no equal-weight run, no oracle"),
    PFI_OPT_STRING("records", 0, &records, "DB",
                   "SQLite records of the controller runs (pfi records)"),
    PFI_OPT_STRING("series", 0, &series, "F",
                   "per-second CSV of the first seed: t_s, target_w, "
                   "realized_w, aim_w (controller)"),
    PFI_OPT_STRING("out", 0, &outfile, "F", "the JSON summary also to F"),
    MARGIN("margin", &cfg.margin,
           "the controller's margin below the target (0.002)"),
    MARGIN("recovery-margin", &cfg.recovery_margin,
           "the recovery's raises aim this share of the ceiling under its "
           "ramp (0.004)"),
    PFI_OPT_NUMBER("recovery-ramp", &cfg.recovery_ramp_w_s, 0, 1e12,
                   PFI_RANGE_LO_OPEN, "W/S",
                   "after the event cluster power rises at most this fast "
                   "(default 5 % of the draw at the pre-event caps per "
                   "second)"),
    {.lng = "recovery-window", .arg = PFI_ARG_REQ, .argname = "D",
     .help = "every job back at its pre-event caps within this long",
     .type = PFI_OT_DURATION, .var = &cfg.recovery_s, .ival = PFI_DUR_ANY,
     .lo = 10, .hi = 86400, .def = "15m"},
    PFI_OPT_NUMBER("probe-horizon", &cfg.probe_horizon_s, 0, 1e6, 0, "S",
                   "probes: seconds a lesson is valued over (0: none, "
                   "default; 600)"),
    PFI_OPT_CHOICE("draw-learn", &cfg.draw_learn, bits, "0|1",
                   "1: the draw per cap learned per job (default); 0: one "
                   "smoothed ratio"),
    PFI_OPT_CHOICE("objective", &cfg.objective, objectives, "O",
                   "what the controller's split maximizes: work (default: "
                   "each job's share of its uncapped throughput x its GPUs, "
                   "unit-free), throughput (the sum of raw throughput) or "
                   "jobs (each job counts once)"),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table or json", .type = PFI_OT_CHOICE, .var = &format,
     .words = pfi_opt_formats_tj, .def = "table"},
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_REQUIRED("emulate"), PFI_RULE_REQUIRED("target", "phoenix"),
    PFI_RULE_EXCLUSIVE("target", "phoenix"), PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "control",
    "usage: pfi control --emulate CLUSTER --target T [--start S] [--ramp R]\n"
    "                   [--hold H] [--tail S] [--notice D] [--seed N]\n"
    "                   [--seeds K]\n"
    "                   [--records DB] [--series FILE] [--out FILE.json]\n"
    "                   [--margin M] [--recovery-margin M]\n"
    "                   [--recovery-ramp W/S] [--recovery-window D]\n"
    "                   [--probe-horizon S] [--draw-learn 0|1]\n"
    "                   [--objective O] [--no-compare] [--format F]\n"
    "       pfi control --emulate CLUSTER --phoenix [--seeds K] ...\n",
    "Runs the controller (docs/control.md) against an EMULATED cluster in\n"
    "virtual time: a pre-event period of --start, the event (--ramp down to\n"
    "the target, --hold), and --tail after it for the staggered recovery.\n"
    "Unless --no-compare, each seed also runs equal-weight cuts in the same\n"
    "closed loop, and the oracle with the true curves and perfect tracking\n"
    "is evaluated on the same seconds; the throughput retained is reported\n"
    "as the share of the gap between equal-weight and the oracle that the\n"
    "controller closes, with a 95 % interval over seeds (t interval).\n"
    "The throughput is valued by --objective (work by default: each job's\n"
    "tokens over its uncapped throughput times its GPUs; throughput: raw\n"
    "tokens), and the oracle maximizes that value (JSON value_*; tokens_*\n"
    "stay raw tokens).\n"
    "\n"
    "CLUSTER is a file of 'key = value' lines or inline pairs\n"
    "('nodes=4,gpus_per_node=8'); keys: nodes, gpus_per_node, profile,\n"
    "seed, library_share, fill, job_hours, eval_every_s, eval_s,\n"
    "ckpt_every_s, ckpt_s, faults, protect_share, tiered_share; the rest\n"
    "of the contract, kept live by the controller (docs/control.md\n"
    "\"Contract\"): tier_max_event_s (the tiered jobs' longest event, s),\n"
    "tier_notice_s (the notice their tiers need, s), deadline_share (share\n"
    "of jobs with a deadline), deadline_frac (their minimum mean throughput\n"
    "over the event as a share of the uncapped, 0.9), event_notice_s (the\n"
    "notice the event gives, s; --notice); announce_s (each trainer\n"
    "announces its next pause this long before it, s; 0, the default:\n"
    "none); announce_err_s (each announced start is off by up to this\n"
    "many seconds, uniform; 0: exact); cold_start (1: every job starts at\n"
    "t = 0, its 150 s start-up first); ckpt_wave_s (every job's\n"
    "checkpoints aligned so that one begins at this time, s: a wave; 0:\n"
    "none). 'default' is 125 nodes x 8 H200,\n"
    "all jobs drawn out of sample; pairs alone ('announce_s=10') change\n"
    "the default.\n"
    "\n"
    "T: a share of the pre-event baseline (75%, 0.75), a power (300kW), a\n"
    "timeline file ('start_s ramp_s hold_s target' on one line), or\n"
    "trace:FILE (a time,power CSV such as data/real/SRP_total_power.csv,\n"
    "scaled so that the median of its first 15 rows is the baseline).\n"
    "--phoenix: the Phoenix event of 2025-05-04, 25 % below the baseline\n"
    "16:10-19:30 local (data/real/SRP_total_power.csv, baseline the median\n"
    "of the file's first 15 minutes), run twice: at the 25 % target, and\n"
    "following Emerald's delivered power over the same window; prints\n"
    "Emerald's delivered cut (published data) beside ours (emulated) and the\n"
    "throughput the deeper delivered cut gives away on our cluster.\n",
    opts,
    "Everything is EMULATED. Exit status 0 ok, 1 run-time failure, 2 bad\n"
    "usage or input.\n",
    0,
    NULL,
    rules,
    0,
    0,
    NULL};

struct series {
  FILE *fp;
  struct pfi_records *rec;
  char run[64];
};

static int on_period(void *ctx, double t, double tgt, double P,
                     const struct pfi_ctl_output *out, struct pfi_error *err) {
  struct series *s = ctx;
  if (s->rec) {
    int rc = pfi_records_period(s->rec, s->run, out, err);
    if (rc < 0)
      return rc;
  }
  if (s->fp) {
    fprintf(s->fp, "%.0f,", t);
    if (isfinite(tgt))
      fprintf(s->fp, "%.1f", tgt);
    fprintf(s->fp, ",%.1f,", P);
    if (isfinite(out->aim_w))
      fprintf(s->fp, "%.1f", out->aim_w);
    fputc('\n', s->fp);
  }
  return 0;
}

/* Progress on a terminal: a run of the emulated cluster takes seconds to
 * tens of seconds, and a seed runs up to three. One line, rewritten; kept
 * off standard error when it is a file or a pipe. `what` NULL ends the
 * line (before an error message). */
static void progress(int on, unsigned long k, unsigned long n,
                     const char *what) {
  if (on && what)
    fprintf(stderr, "\rpfi control: seed %lu of %lu: %-26s", k + 1, n, what);
  else if (on)
    fputc('\n', stderr);
}

/* A time in seconds, "-" when there is none (never "nan s"). */
static void put_s(double v) {
  if (isfinite(v))
    printf("%.0f s", v);
  else
    fputs("-", stdout);
}

/* A mean of the seeds with its 95 % half-width when there is one; "-" for
 * a mean that is not a number (an event shorter than 10 minutes has no
 * "after 10 min"). */
static void put_mean(double m, double h) {
  if (!isfinite(m)) {
    fputs("-", stdout);
    return;
  }
  printf("%.3f", m);
  if (isfinite(h))
    printf(" +- %.3f", h);
}

static json_t *jnum(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *result_json(const struct pfi_run_result *r) {
  json_t *o = json_object();
  json_object_set_new(o, "baseline_w", jnum(r->baseline_w));
  json_object_set_new(o, "tracking_mean", jnum(r->track_mean));
  json_object_set_new(o, "tracking_p99", jnum(r->track_p99));
  json_object_set_new(o, "within_1pct", jnum(r->within_1pct));
  json_object_set_new(o, "seconds_above", jnum(r->secs_above));
  json_object_set_new(o, "seconds_above_1pct", jnum(r->secs_above_1pct));
  json_object_set_new(o, "ws_above", jnum(r->ws_above));
  json_object_set_new(o, "time_to_target_s", jnum(r->time_to_target_s));
  json_object_set_new(o, "mean_cut", jnum(r->mean_cut));
  json_object_set_new(o, "minutes_above_target", jnum(r->minutes_above));
  json_object_set_new(o, "tokens_event", jnum(r->tokens_event));
  json_object_set_new(o, "tokens_after_10min", jnum(r->tokens_after10));
  json_object_set_new(o, "tokens_oracle", jnum(r->tokens_oracle));
  json_object_set_new(o, "tokens_oracle_after_10min",
                      jnum(r->tokens_oracle_after10));
  json_object_set_new(o, "tokens_oracle_tiers", jnum(r->tokens_oracle_tiers));
  json_object_set_new(o, "tokens_oracle_tiers_after_10min",
                      jnum(r->tokens_oracle_tiers_after10));
  /* The same valued by the controller's objective (the gap closed). */
  json_object_set_new(o, "value_event", jnum(r->value_event));
  json_object_set_new(o, "value_after_10min", jnum(r->value_after10));
  json_object_set_new(o, "value_oracle", jnum(r->value_oracle));
  json_object_set_new(o, "value_oracle_after_10min",
                      jnum(r->value_oracle_after10));
  json_object_set_new(o, "value_oracle_tiers", jnum(r->value_oracle_tiers));
  json_object_set_new(o, "value_oracle_tiers_after_10min",
                      jnum(r->value_oracle_tiers_after10));
  json_object_set_new(o, "recovery_peak_w", jnum(r->recovery_peak_w));
  json_object_set_new(o, "recovery_s", jnum(r->recovery_s));
  json_object_set_new(o, "cap_changes_per_gpu_h",
                      jnum(r->cap_changes_per_gpu_h));
  json_object_set_new(o, "records", json_integer((json_int_t)r->records));
  json_object_set_new(o, "anomalies", json_integer((json_int_t)r->anomalies));
  json_object_set_new(o, "rollbacks", json_integer((json_int_t)r->rollbacks));
  json_object_set_new(o, "infeasible_s",
                      json_integer((json_int_t)r->infeasible_s));
  json_object_set_new(o, "floor_violations",
                      json_integer((json_int_t)r->floor_violations));
  json_object_set_new(o, "tier_violation_job_s",
                      json_integer((json_int_t)r->tier_violations));
  json_object_set_new(o, "contract_records",
                      json_integer((json_int_t)r->contract_records));
  json_object_set_new(o, "deadline_records",
                      json_integer((json_int_t)r->deadline_records));
  json_object_set_new(o, "deadline_jobs",
                      json_integer((json_int_t)r->deadline_jobs));
  json_object_set_new(o, "deadline_missed",
                      json_integer((json_int_t)r->deadline_missed));
  return o;
}

int cmd_control(int argc, char **argv) {
  struct pfi_error err;
  pfi_error_clear(&err);
  pfi_ctl_config_init(&cfg);
  struct pfi_optparse op;
  int st = pfi_opt_parse(&op, &help, argc, argv);
  if (st != PFI_OPT_GO)
    return st;
  struct pfi_cluster_config cc;
  pfi_cluster_config_init(&cc);
  /* A file (inline pairs have a '=' and name no file): exit 2 when it
   * cannot be read, as for a malformed one. */
  if (strcmp(cluster, "default") &&
      (!strchr(cluster, '=') || access(cluster, F_OK) == 0) &&
      pfi_cli_input("--emulate", cluster))
    return PFI_EXIT_USAGE;
  if (strcmp(cluster, "default") &&
      pfi_cluster_config_read(&cc, cluster, &err) < 0)
    return pfi_cli_fail(&err);
  if (!isnan(notice))
    cc.event_notice_s = notice;
  struct pfi_event ev, em_ev;
  struct pfi_emerald em;
  int have_em = 0;
  memset(&em_ev, 0, sizeof em_ev);
  if (phoenix) {
    char path[1024];
    if (pfi_data_path("real/SRP_total_power.csv", path, sizeof path, &err) < 0)
      return pfi_cli_fail(&err);
    if (pfi_event_srp(&em_ev, path, "2025-05-04", "16:10", "19:30", 0.25, &em,
                      &err) < 0)
      return pfi_cli_fail(&err);
    em_ev.start_s = start;
    have_em = 1;
    hold = em_ev.hold_s - ramp;
    if (pfi_event_parse(&ev, "75%", start, ramp, hold, &err) < 0)
      return pfi_cli_fail(&err);
  } else if (pfi_event_parse(&ev, target, start, ramp, hold, &err) < 0) {
    return pfi_cli_fail(&err);
  }
  int status = 0;
  struct pfi_records *rdb = NULL;
  FILE *sfp = NULL;
  double *gap = calloc(nseeds, sizeof *gap),
         *gap10 = calloc(nseeds, sizeof *gap10);
  double *away = calloc(nseeds, sizeof *away);
  double *gapt = calloc(nseeds, sizeof *gapt),
         *gapt10 = calloc(nseeds, sizeof *gapt10);
  double *ots = calloc(nseeds, sizeof *ots),
         *ots10 = calloc(nseeds, sizeof *ots10);
  json_t *runs = json_array();
  struct pfi_run_result first, first_eq;
  memset(&first, 0, sizeof first);
  memset(&first_eq, 0, sizeof first_eq);
  if (!gap || !gap10 || !away || !gapt || !gapt10 || !ots || !ots10) {
    pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    status = pfi_cli_fail(&err);
    goto out;
  }
  if (records && pfi_records_open(&rdb, records, 1, 0, &err) < 0) {
    if (err.code == PFI_EDB)
      err.code = PFI_EPARSE; /* not a records file, or one it cannot take */
    status = pfi_cli_fail(&err);
    goto out;
  }
  if (series && !(sfp = fopen(series, "w"))) {
    pfi_error_set(&err, PFI_EIO, "%s: cannot write", series);
    status = pfi_cli_fail(&err);
    goto out;
  }
  if (sfp)
    fputs("t_s,target_w,realized_w,aim_w\n", sfp);
  int tty = isatty(STDERR_FILENO);
  for (unsigned long k = 0; k < nseeds; k++) {
    struct pfi_run_result r, eq, tr;
    struct series ctx = {k == 0 ? sfp : NULL, rdb, ""};
    cc.seed = seed + k;
    cfg.seed = seed + k;
    snprintf(ctx.run, sizeof ctx.run, "seed%lu", cc.seed);
    progress(tty, k, nseeds, "controller");
    if (pfi_run_closed_loop(&cc, NULL, &cfg, &ev, tail, PFI_RUN_CONTROLLER,
                            on_period, &ctx, &r, &err) < 0) {
      progress(tty, k, nseeds, NULL);
      status = pfi_cli_fail(&err);
      goto out;
    }
    json_t *jr = json_object();
    json_object_set_new(jr, "seed", json_integer((json_int_t)cc.seed));
    json_object_set_new(jr, "controller", result_json(&r));
    if (compare) {
      progress(tty, k, nseeds, "equal-weight cuts");
      if (pfi_run_closed_loop(&cc, NULL, &cfg, &ev, tail, PFI_RUN_EQUAL, NULL,
                              NULL, &eq, &err) < 0) {
        progress(tty, k, nseeds, NULL);
        status = pfi_cli_fail(&err);
        goto out;
      }
      json_object_set_new(jr, "equal", result_json(&eq));
      gap[k] =
          (r.value_event - eq.value_event) / (r.value_oracle - eq.value_event);
      gap10[k] = (r.value_after10 - eq.value_after10) /
                 (r.value_oracle_after10 - eq.value_after10);
      json_object_set_new(jr, "gap_closed", jnum(gap[k]));
      json_object_set_new(jr, "gap_closed_after_10min", jnum(gap10[k]));
      /* Against the oracle held to the tiers (which the controller and
       * equal-weight cuts both keep): the gap any tier-keeping allocation
       * could close. */
      gapt[k] = (r.value_event - eq.value_event) /
                (r.value_oracle_tiers - eq.value_event);
      gapt10[k] = (r.value_after10 - eq.value_after10) /
                  (r.value_oracle_tiers_after10 - eq.value_after10);
      json_object_set_new(jr, "gap_closed_tiers", jnum(gapt[k]));
      json_object_set_new(jr, "gap_closed_tiers_after_10min", jnum(gapt10[k]));
      /* The share of the gap the tier-held oracle itself closes: the most
       * any tier-keeping controller can close of it. */
      ots[k] = (r.value_oracle_tiers - eq.value_event) /
               (r.value_oracle - eq.value_event);
      ots10[k] = (r.value_oracle_tiers_after10 - eq.value_after10) /
                 (r.value_oracle_after10 - eq.value_after10);
      json_object_set_new(jr, "oracle_tiers_gap_share", jnum(ots[k]));
      json_object_set_new(jr, "oracle_tiers_gap_share_after_10min",
                          jnum(ots10[k]));
      if (k == 0)
        first_eq = eq;
    }
    if (have_em) {
      progress(tty, k, nseeds, "following Emerald's cut");
      if (pfi_run_closed_loop(&cc, NULL, &cfg, &em_ev, tail, PFI_RUN_CONTROLLER,
                              NULL, NULL, &tr, &err) < 0) {
        progress(tty, k, nseeds, NULL);
        status = pfi_cli_fail(&err);
        goto out;
      }
      away[k] = 1.0 - tr.tokens_event / r.tokens_event;
      json_object_set_new(jr, "following_emerald", result_json(&tr));
      json_object_set_new(jr, "throughput_given_away", jnum(away[k]));
    }
    json_array_append_new(runs, jr);
    if (k == 0)
      first = r;
  }
  if (tty)
    fprintf(stderr, "\rpfi control: %lu seed%s run%*s\n", nseeds,
            nseeds > 1 ? "s" : "", 30, "");
  json_t *top = json_object();
  json_object_set_new(top, "emulated", json_true());
  json_object_set_new(top, "target",
                      json_string(phoenix ? "phoenix" : ev.desc));
  json_object_set_new(top, "gpus",
                      json_integer((json_int_t)cc.nodes * cc.gpus_per_node));
  json_object_set_new(
      top, "objective",
      json_string(pfi_objective_name((enum pfi_objective_kind)cfg.objective)));
  json_object_set_new(top, "runs", runs);
  runs = NULL;
  double gm = NAN, gh = NAN, g10m = NAN, g10h = NAN, am = NAN, ah = NAN;
  double tm = NAN, th = NAN, t10m = NAN, t10h = NAN, om = NAN, o10m = NAN;
  if (compare) {
    pfi_stats_mean_t95(gap, nseeds, &gm, &gh);
    pfi_stats_mean_t95(gap10, nseeds, &g10m, &g10h);
    json_object_set_new(top, "gap_closed_mean", jnum(gm));
    json_object_set_new(top, "gap_closed_ci95", jnum(gh));
    json_object_set_new(top, "gap_closed_after_10min_mean", jnum(g10m));
    json_object_set_new(top, "gap_closed_after_10min_ci95", jnum(g10h));
    pfi_stats_mean_t95(gapt, nseeds, &tm, &th);
    pfi_stats_mean_t95(gapt10, nseeds, &t10m, &t10h);
    json_object_set_new(top, "gap_closed_tiers_mean", jnum(tm));
    json_object_set_new(top, "gap_closed_tiers_ci95", jnum(th));
    json_object_set_new(top, "gap_closed_tiers_after_10min_mean", jnum(t10m));
    json_object_set_new(top, "gap_closed_tiers_after_10min_ci95", jnum(t10h));
    double oh, o10h;
    pfi_stats_mean_t95(ots, nseeds, &om, &oh);
    pfi_stats_mean_t95(ots10, nseeds, &o10m, &o10h);
    json_object_set_new(top, "oracle_tiers_gap_share_mean", jnum(om));
    json_object_set_new(top, "oracle_tiers_gap_share_ci95", jnum(oh));
    json_object_set_new(top, "oracle_tiers_gap_share_after_10min_mean",
                        jnum(o10m));
    json_object_set_new(top, "oracle_tiers_gap_share_after_10min_ci95",
                        jnum(o10h));
  }
  if (have_em) {
    pfi_stats_mean_t95(away, nseeds, &am, &ah);
    json_t *e = json_object();
    json_object_set_new(e, "source",
                        json_string("published data: "
                                    "data/real/SRP_total_power.csv"));
    json_object_set_new(e, "baseline_w", jnum(em.baseline_w));
    json_object_set_new(e, "mean_cut", jnum(em.mean_cut));
    json_object_set_new(e, "minutes", jnum(em.minutes));
    json_object_set_new(e, "minutes_above_target", jnum(em.minutes_above));
    json_object_set_new(e, "throughput_given_away_emulated_mean", jnum(am));
    json_object_set_new(e, "throughput_given_away_emulated_ci95", jnum(ah));
    json_object_set_new(top, "emerald", e);
  }
  if (outfile) {
    if (json_dump_file(top, outfile, JSON_INDENT(2) | JSON_PRESERVE_ORDER) <
        0) {
      pfi_error_set(&err, PFI_EIO, "%s: cannot write", outfile);
      json_decref(top);
      status = pfi_cli_fail(&err);
      goto out;
    }
  }
  if (format == PFI_FMT_JSON) {
    status = pfi_cli_print_json(top);
    goto out;
  }
  json_decref(top);
  const struct pfi_run_result *r = &first;
  printf("EMULATED cluster: %u x %u %s, seed %lu%s; target %s\n", cc.nodes,
         cc.gpus_per_node, cc.profile, seed,
         nseeds > 1 ? " (first of the seeds below)" : "",
         phoenix ? "Phoenix 2025-05-04, 25 % cut" : ev.desc);
  printf("  controller objective        %s\n",
         pfi_objective_name((enum pfi_objective_kind)cfg.objective));
  printf("  baseline                    %12.0f W\n", r->baseline_w);
  printf("  tracking after the ramp     mean %.3f %%, p99 %.3f %%, within 1 %% "
         "in %.2f %% of seconds\n",
         100 * r->track_mean, 100 * r->track_p99, 100 * r->within_1pct);
  printf("  above target                %.0f s (%.0f W.s); above target + 1 %% "
         "%.0f s\n",
         r->secs_above, r->ws_above, r->secs_above_1pct);
  printf("  time to target              ");
  put_s(r->time_to_target_s);
  putchar('\n');
  printf("  recovery peak               %.4f x baseline, caps back after ",
         r->recovery_peak_w / r->baseline_w);
  if (isfinite(r->recovery_s))
    printf("%.0f s\n", r->recovery_s);
  else
    printf("- (not within --tail)\n");
  printf("  cap changes per GPU-hour    %.1f\n", r->cap_changes_per_gpu_h);
  printf("  records %zu, anomalies %zu, rollbacks %zu, infeasible %zu s, "
         "floor violations %zu, tier violations %zu job-s\n",
         r->records, r->anomalies, r->rollbacks, r->infeasible_s,
         r->floor_violations, r->tier_violations);
  if (compare) {
    printf("  tokens: controller %.4g, equal-weight %.4g, oracle %.4g\n",
           r->tokens_event, first_eq.tokens_event, r->tokens_oracle);
    printf("  gap closed (controller vs equal-weight, of oracle - equal): ");
    put_mean(gm, gh);
    printf(" whole event; ");
    put_mean(g10m, g10h);
    if (nseeds > 1)
      printf(" after 10 min (%lu seeds, 95 %% t interval)\n", nseeds);
    else
      printf(" after 10 min (1 seed, no interval: --seeds 2 or more gives "
             "one)\n");
    printf("  gap closed against the oracle held to the tiers: ");
    put_mean(tm, th);
    printf(" whole event; ");
    put_mean(t10m, t10h);
    printf(" after 10 min; that oracle closes ");
    put_mean(om, NAN);
    printf(" (");
    put_mean(o10m, NAN);
    printf(" after 10 min) of the gap above\n");
  }
  if (have_em) {
    printf("  Emerald AI, Phoenix (PUBLISHED data, 256 A100): mean cut %.1f "
           "%% over %.0f min, %.0f min above target\n",
           100 * em.mean_cut, em.minutes, em.minutes_above);
    printf("  ours (EMULATED, seed %lu): mean cut %.1f %%, %.0f min above "
           "target (minute means), %.0f s above target\n",
           seed, 100 * first.mean_cut, first.minutes_above, first.secs_above);
    printf("  throughput given away by following Emerald's delivered cut "
           "(EMULATED): %.2f %%",
           100 * am);
    if (isfinite(ah))
      printf(" +- %.2f %%", 100 * ah);
    printf("\n");
  }
out:
  json_decref(runs);
  if (sfp && fclose(sfp) != 0 && status == 0) {
    pfi_error_set(&err, PFI_EIO, "%s: write error", series);
    status = pfi_cli_fail(&err);
  }
  pfi_records_close(rdb);
  pfi_event_release(&ev);
  pfi_event_release(&em_ev);
  free(gap);
  free(gap10);
  free(gapt);
  free(gapt10);
  free(ots);
  free(ots10);
  free(away);
  return status;
}
