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

/* The cluster, the event and what the runs of every seed gave. */
struct ctl_run {
  struct pfi_cluster_config cc;
  struct pfi_event ev, em_ev; /* em_ev: following Emerald's cut */
  struct pfi_emerald em;
  int have_em; /* --phoenix */
  /* Per seed: the gap closed (whole event, after 10 min), against the
   * tier-held oracle, that oracle's share of the gap, and the throughput
   * given away by following Emerald's cut. */
  double *gap, *gap10, *gapt, *gapt10, *ots, *ots10, *away;
  json_t *runs; /* per seed */
  struct pfi_run_result first, first_eq; /* the first seed's runs */
  struct pfi_records *rdb; /* --records */
  FILE *sfp;               /* --series */
  /* Their means and 95 % half-widths. */
  double gm, gh, g10m, g10h, tm, th, t10m, t10h, om, o10m, am, ah;
};

/* The cluster (--emulate) and the event (--target, or --phoenix's). 0 or
 * an exit status, the message printed. */
static int load_setting(struct ctl_run *c) {
  struct pfi_error err;
  pfi_error_clear(&err);
  pfi_cluster_config_init(&c->cc);
  /* A file (inline pairs have a '=' and name no file): exit 2 when it
   * cannot be read, as for a malformed one. */
  if (strcmp(cluster, "default") &&
      (!strchr(cluster, '=') || access(cluster, F_OK) == 0) &&
      pfi_cli_input("--emulate", cluster))
    return PFI_EXIT_USAGE;
  if (strcmp(cluster, "default") &&
      pfi_cluster_config_read(&c->cc, cluster, &err) < 0)
    return pfi_cli_fail(&err);
  if (!isnan(notice))
    c->cc.event_notice_s = notice;
  if (phoenix) {
    char path[1024];
    if (pfi_data_path("real/SRP_total_power.csv", path, sizeof path, &err) < 0)
      return pfi_cli_fail(&err);
    if (pfi_event_srp(&c->em_ev, path, "2025-05-04", "16:10", "19:30", 0.25,
                      &c->em, &err) < 0)
      return pfi_cli_fail(&err);
    c->em_ev.start_s = start;
    c->have_em = 1;
    hold = c->em_ev.hold_s - ramp;
    if (pfi_event_parse(&c->ev, "75%", start, ramp, hold, &err) < 0)
      return pfi_cli_fail(&err);
  } else if (pfi_event_parse(&c->ev, target, start, ramp, hold, &err) < 0) {
    return pfi_cli_fail(&err);
  }
  return 0;
}

/* The gaps closed of seed k from the controller's run r and the
 * equal-weight run eq, into c's arrays and the seed's JSON object. */
static void gaps_of(struct ctl_run *c, unsigned long k,
                    const struct pfi_run_result *r,
                    const struct pfi_run_result *eq, json_t *jr) {
  c->gap[k] =
      (r->value_event - eq->value_event) / (r->value_oracle - eq->value_event);
  c->gap10[k] = (r->value_after10 - eq->value_after10) /
                (r->value_oracle_after10 - eq->value_after10);
  json_object_set_new(jr, "gap_closed", jnum(c->gap[k]));
  json_object_set_new(jr, "gap_closed_after_10min", jnum(c->gap10[k]));
  /* Against the oracle held to the tiers (which the controller and
   * equal-weight cuts both keep): the gap any tier-keeping allocation
   * could close. */
  c->gapt[k] = (r->value_event - eq->value_event) /
               (r->value_oracle_tiers - eq->value_event);
  c->gapt10[k] = (r->value_after10 - eq->value_after10) /
                 (r->value_oracle_tiers_after10 - eq->value_after10);
  json_object_set_new(jr, "gap_closed_tiers", jnum(c->gapt[k]));
  json_object_set_new(jr, "gap_closed_tiers_after_10min", jnum(c->gapt10[k]));
  /* The share of the gap the tier-held oracle itself closes: the most
   * any tier-keeping controller can close of it. */
  c->ots[k] = (r->value_oracle_tiers - eq->value_event) /
              (r->value_oracle - eq->value_event);
  c->ots10[k] = (r->value_oracle_tiers_after10 - eq->value_after10) /
                (r->value_oracle_after10 - eq->value_after10);
  json_object_set_new(jr, "oracle_tiers_gap_share", jnum(c->ots[k]));
  json_object_set_new(jr, "oracle_tiers_gap_share_after_10min",
                      jnum(c->ots10[k]));
}

/* Seed k: the controller, equal-weight cuts (--compare) and following
 * Emerald's cut (--phoenix). 0 or -1 with err set. */
static int run_seed(struct ctl_run *c, unsigned long k, FILE *sfp,
                    struct pfi_records *rdb, int tty, struct pfi_error *err) {
  struct pfi_run_result r, eq, tr;
  struct series ctx = {k == 0 ? sfp : NULL, rdb, ""};
  c->cc.seed = seed + k;
  cfg.seed = seed + k;
  snprintf(ctx.run, sizeof ctx.run, "seed%lu", c->cc.seed);
  progress(tty, k, nseeds, "controller");
  if (pfi_run_closed_loop(&c->cc, NULL, &cfg, &c->ev, tail, PFI_RUN_CONTROLLER,
                          on_period, &ctx, &r, err) < 0)
    goto fail;
  json_t *jr = json_object();
  json_array_append_new(c->runs, jr);
  json_object_set_new(jr, "seed", json_integer((json_int_t)c->cc.seed));
  json_object_set_new(jr, "controller", result_json(&r));
  if (compare) {
    progress(tty, k, nseeds, "equal-weight cuts");
    if (pfi_run_closed_loop(&c->cc, NULL, &cfg, &c->ev, tail, PFI_RUN_EQUAL,
                            NULL, NULL, &eq, err) < 0)
      goto fail;
    json_object_set_new(jr, "equal", result_json(&eq));
    gaps_of(c, k, &r, &eq, jr);
    if (k == 0)
      c->first_eq = eq;
  }
  if (c->have_em) {
    progress(tty, k, nseeds, "following Emerald's cut");
    if (pfi_run_closed_loop(&c->cc, NULL, &cfg, &c->em_ev, tail,
                            PFI_RUN_CONTROLLER, NULL, NULL, &tr, err) < 0)
      goto fail;
    c->away[k] = 1.0 - tr.tokens_event / r.tokens_event;
    json_object_set_new(jr, "following_emerald", result_json(&tr));
    json_object_set_new(jr, "throughput_given_away", jnum(c->away[k]));
  }
  if (k == 0)
    c->first = r;
  return 0;
fail:
  progress(tty, k, nseeds, NULL);
  return -1;
}

/* --records and --series, opened for the runs. 0 or an exit status, the
 * message printed. */
static int open_outputs(struct ctl_run *c) {
  struct pfi_error err;
  pfi_error_clear(&err);
  if (records && pfi_records_open(&c->rdb, records, 1, 0, &err) < 0) {
    if (err.code == PFI_EDB)
      err.code = PFI_EPARSE; /* not a records file, or one it cannot take */
    return pfi_cli_fail(&err);
  }
  if (series && !(c->sfp = fopen(series, "w"))) {
    pfi_error_set(&err, PFI_EIO, "%s: cannot write", series);
    return pfi_cli_fail(&err);
  }
  if (c->sfp)
    fputs("t_s,target_w,realized_w,aim_w\n", c->sfp);
  return 0;
}

/* Every seed, the first one's periods to --series and every one's to
 * --records. 0 or an exit status, the message printed. */
static int run_seeds(struct ctl_run *c) {
  struct pfi_error err;
  pfi_error_clear(&err);
  int tty = isatty(STDERR_FILENO);
  for (unsigned long k = 0; k < nseeds; k++)
    if (run_seed(c, k, c->sfp, c->rdb, tty, &err) < 0)
      return pfi_cli_fail(&err);
  if (tty)
    fprintf(stderr, "\rpfi control: %lu seed%s run%*s\n", nseeds,
            nseeds > 1 ? "s" : "", 30, "");
  return 0;
}

/* The result as JSON: the setting, every seed's runs and the means over
 * the seeds (which it also leaves in c). */
static json_t *summary_json(struct ctl_run *c) {
  json_t *top = json_object();
  json_object_set_new(top, "emulated", json_true());
  json_object_set_new(top, "target",
                      json_string(phoenix ? "phoenix" : c->ev.desc));
  json_object_set_new(
      top, "gpus", json_integer((json_int_t)c->cc.nodes * c->cc.gpus_per_node));
  json_object_set_new(
      top, "objective",
      json_string(pfi_objective_name((enum pfi_objective_kind)cfg.objective)));
  json_object_set_new(top, "runs", c->runs);
  c->runs = NULL;
  c->gm = c->gh = c->g10m = c->g10h = c->am = c->ah = NAN;
  c->tm = c->th = c->t10m = c->t10h = c->om = c->o10m = NAN;
  if (compare) {
    pfi_stats_mean_t95(c->gap, nseeds, &c->gm, &c->gh);
    pfi_stats_mean_t95(c->gap10, nseeds, &c->g10m, &c->g10h);
    json_object_set_new(top, "gap_closed_mean", jnum(c->gm));
    json_object_set_new(top, "gap_closed_ci95", jnum(c->gh));
    json_object_set_new(top, "gap_closed_after_10min_mean", jnum(c->g10m));
    json_object_set_new(top, "gap_closed_after_10min_ci95", jnum(c->g10h));
    pfi_stats_mean_t95(c->gapt, nseeds, &c->tm, &c->th);
    pfi_stats_mean_t95(c->gapt10, nseeds, &c->t10m, &c->t10h);
    json_object_set_new(top, "gap_closed_tiers_mean", jnum(c->tm));
    json_object_set_new(top, "gap_closed_tiers_ci95", jnum(c->th));
    json_object_set_new(top, "gap_closed_tiers_after_10min_mean",
                        jnum(c->t10m));
    json_object_set_new(top, "gap_closed_tiers_after_10min_ci95",
                        jnum(c->t10h));
    double oh, o10h;
    pfi_stats_mean_t95(c->ots, nseeds, &c->om, &oh);
    pfi_stats_mean_t95(c->ots10, nseeds, &c->o10m, &o10h);
    json_object_set_new(top, "oracle_tiers_gap_share_mean", jnum(c->om));
    json_object_set_new(top, "oracle_tiers_gap_share_ci95", jnum(oh));
    json_object_set_new(top, "oracle_tiers_gap_share_after_10min_mean",
                        jnum(c->o10m));
    json_object_set_new(top, "oracle_tiers_gap_share_after_10min_ci95",
                        jnum(o10h));
  }
  if (c->have_em) {
    pfi_stats_mean_t95(c->away, nseeds, &c->am, &c->ah);
    const struct pfi_emerald *em = &c->em;
    json_t *e = json_object();
    json_object_set_new(e, "source",
                        json_string("published data: "
                                    "data/real/SRP_total_power.csv"));
    json_object_set_new(e, "baseline_w", jnum(em->baseline_w));
    json_object_set_new(e, "mean_cut", jnum(em->mean_cut));
    json_object_set_new(e, "minutes", jnum(em->minutes));
    json_object_set_new(e, "minutes_above_target", jnum(em->minutes_above));
    json_object_set_new(e, "throughput_given_away_emulated_mean", jnum(c->am));
    json_object_set_new(e, "throughput_given_away_emulated_ci95", jnum(c->ah));
    json_object_set_new(top, "emerald", e);
  }
  return top;
}

/* The terminal's account of the first seed's controller run. */
static void print_first(const struct ctl_run *c) {
  const struct pfi_run_result *r = &c->first;
  printf("EMULATED cluster: %u x %u %s, seed %lu%s; target %s\n", c->cc.nodes,
         c->cc.gpus_per_node, c->cc.profile, seed,
         nseeds > 1 ? " (first of the seeds below)" : "",
         phoenix ? "Phoenix 2025-05-04, 25 % cut" : c->ev.desc);
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
}

/* The terminal's comparison with equal-weight cuts (the means over the
 * seeds). */
static void print_compare(const struct ctl_run *c) {
  printf("  tokens: controller %.4g, equal-weight %.4g, oracle %.4g\n",
         c->first.tokens_event, c->first_eq.tokens_event,
         c->first.tokens_oracle);
  printf("  gap closed (controller vs equal-weight, of oracle - equal): ");
  put_mean(c->gm, c->gh);
  printf(" whole event; ");
  put_mean(c->g10m, c->g10h);
  if (nseeds > 1)
    printf(" after 10 min (%lu seeds, 95 %% t interval)\n", nseeds);
  else
    printf(" after 10 min (1 seed, no interval: --seeds 2 or more gives "
           "one)\n");
  printf("  gap closed against the oracle held to the tiers: ");
  put_mean(c->tm, c->th);
  printf(" whole event; ");
  put_mean(c->t10m, c->t10h);
  printf(" after 10 min; that oracle closes ");
  put_mean(c->om, NAN);
  printf(" (");
  put_mean(c->o10m, NAN);
  printf(" after 10 min) of the gap above\n");
}

/* The terminal's comparison with Emerald AI's published Phoenix event. */
static void print_emerald(const struct ctl_run *c) {
  printf("  Emerald AI, Phoenix (PUBLISHED data, 256 A100): mean cut %.1f "
         "%% over %.0f min, %.0f min above target\n",
         100 * c->em.mean_cut, c->em.minutes, c->em.minutes_above);
  printf("  ours (EMULATED, seed %lu): mean cut %.1f %%, %.0f min above "
         "target (minute means), %.0f s above target\n",
         seed, 100 * c->first.mean_cut, c->first.minutes_above,
         c->first.secs_above);
  printf("  throughput given away by following Emerald's delivered cut "
         "(EMULATED): %.2f %%",
         100 * c->am);
  if (isfinite(c->ah))
    printf(" +- %.2f %%", 100 * c->ah);
  printf("\n");
}

/* The JSON to --output and, by --format, to standard output or the
 * terminal's account. An exit status. */
static int print_result(struct ctl_run *c) {
  json_t *top = summary_json(c);
  if (outfile &&
      json_dump_file(top, outfile, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
    struct pfi_error err;
    pfi_error_set(&err, PFI_EIO, "%s: cannot write", outfile);
    json_decref(top);
    return pfi_cli_fail(&err);
  }
  if (format == PFI_FMT_JSON)
    return pfi_cli_print_json(top);
  json_decref(top);
  print_first(c);
  if (compare)
    print_compare(c);
  if (c->have_em)
    print_emerald(c);
  return 0;
}

int cmd_control(int argc, char **argv) {
  pfi_ctl_config_init(&cfg);
  struct pfi_optparse op;
  int st = pfi_opt_parse(&op, &help, argc, argv);
  if (st != PFI_OPT_GO)
    return st;
  struct ctl_run run, *c = &run;
  memset(c, 0, sizeof *c);
  int status = load_setting(c);
  if (status)
    return status;
  double **arrays[] = {&c->gap,    &c->gap10, &c->away, &c->gapt,
                       &c->gapt10, &c->ots,   &c->ots10};
  int oom = 0;
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    oom |= !(*arrays[i] = calloc(nseeds, sizeof **arrays[i]));
  c->runs = json_array();
  if (oom) {
    struct pfi_error err;
    pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    status = pfi_cli_fail(&err);
  } else if ((status = open_outputs(c)) == 0 &&
             (status = run_seeds(c)) == 0) {
    status = print_result(c);
  }
  json_decref(c->runs);
  if (c->sfp && fclose(c->sfp) != 0 && status == 0) {
    struct pfi_error err;
    pfi_error_set(&err, PFI_EIO, "%s: write error", series);
    status = pfi_cli_fail(&err);
  }
  pfi_records_close(c->rdb);
  pfi_event_release(&c->ev);
  pfi_event_release(&c->em_ev);
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    free(*arrays[i]);
  return status;
}
