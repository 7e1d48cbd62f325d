/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi grid bridge`: keeps pfid's events in step with the grid's timeline
 * (OpenADR 3 VTN, event and schedule files) and reports the fleet's power
 * back to the VTN. The work is libpfi's (include/pfi/bridge.h); this file
 * is the loop. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "cmd_grid.h"
#include "pfi/bridge.h"
#include "pfi/csv.h"
#include "pfi/meter.h"
#include "pfi/openadr.h"
#include "pfi/timeline.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int read_token(const char *path, char *buf, size_t n) {
  struct stat st;
  FILE *f = fopen(path, "re");
  if (!f || fstat(fileno(f), &st) < 0 || (st.st_mode & 077)) {
    fprintf(stderr, "pfi grid: %s: %s\n", path,
            !f ? "cannot read the pfid token"
               : "the pfid token is readable by others: chmod 600 it");
    if (f)
      fclose(f);
    return PFI_EXIT_USAGE;
  }
  if (!fgets(buf, (int)n, f))
    buf[0] = 0;
  fclose(f);
  buf[strcspn(buf, "\r\n")] = 0;
  if (!buf[0]) {
    fprintf(stderr, "pfi grid: %s: empty token\n", path);
    return PFI_EXIT_USAGE;
  }
  return 0;
}

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleeps up to s seconds, waking at once on a signal and, with fd >= 0,
 * when fd becomes readable (a notification waits): then 1. */
static int nap(double s, int fd) {
  while (s > 0 && !stop) {
    double d = s > 0.2 ? 0.2 : s;
    if (fd >= 0) {
      struct pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, (int)ceil(d * 1000)) > 0)
        return 1;
    } else {
      struct timespec ts = {(time_t)d, (long)((d - floor(d)) * 1e9)};
      nanosleep(&ts, NULL);
    }
    s -= d;
  }
  return 0;
}

static void make_cfg(const struct opts *o, double now,
                     struct pfi_oadr_config *cfg) {
  pfi_oadr_config_init(cfg, (int64_t)now);
  cfg->baseline_w = o->baseline;
  cfg->capacity_level = cfg->setpoint_level = o->level;
  cfg->seed = o->seed;
  if (o->have_simple)
    for (int i = 0; i < 3; i++)
      cfg->simple_frac[i + 1] = o->simple[i];
}

/* --listen's address ("PORT" alone is on loopback) and its host part, for
 * the default callback URL. 0, or a usage error's exit status. */
static int listen_addr(const char *l, char *addr, size_t n, char *host,
                       size_t hn) {
  if (l[0] && strspn(l, "0123456789") == strlen(l))
    snprintf(addr, n, "127.0.0.1:%s", l);
  else
    snprintf(addr, n, "%s", l);
  const char *colon = strrchr(addr, ':');
  if (!colon || !colon[1])
    return pfi__grid_usage("--listen: expected HOST:PORT or PORT, got '%s'",
                           l);
  snprintf(host, hn, "%.*s", (int)(colon - addr), addr);
  return 0;
}

/* Says what the listener took since the last call: each notification, and
 * requests refused since the last report. */
static void say_notes(struct pfi_oadr_listener *hook,
                      struct pfi_oadr_listener_stats *seen) {
  struct pfi_oadr_note notes[16];
  struct pfi_oadr_listener_stats st;
  size_t n = pfi_oadr_listener_take(hook, notes, 16, &st);
  for (size_t i = 0; i < n && i < 16; i++) {
    if (notes[i].undecoded) {
      puts("bridge: notification with our token, not decoded: polling the "
           "VTN now");
      continue;
    }
    printf("bridge: notification %s %s", notes[i].operation,
           notes[i].object_type);
    if (notes[i].event_id[0]) {
      fputc(' ', stdout);
      pfi_cli_put_name(stdout, notes[i].event_id, 0);
    }
    fputs(": polling the VTN now\n", stdout);
  }
  if (n > 16)
    printf("bridge: and %zu more notification(s)\n", n - 16);
  if (st.unauthorized > seen->unauthorized || st.malformed > seen->malformed)
    fprintf(stderr,
            "pfi grid bridge: webhook: %zu request(s) refused for their "
            "token, %zu malformed, since the start\n",
            st.unauthorized, st.malformed);
  *seen = st;
  fflush(stdout);
}

/* Reads every file source into `tl` (replacing its content). */
static int read_files(const struct opts *o, const struct pfi_oadr_config *cfg,
                      struct pfi_timeline *tl, struct pfi_error *err) {
  tl->n = 0;
  for (size_t i = 0; i < o->nevents; i++) {
    char *buf;
    size_t len;
    int rc = pfi_read_file(o->events[i], &buf, &len, err);
    if (rc < 0)
      return rc;
    rc = pfi_oadr_decode_events(o->events[i], buf, len, cfg, tl, NULL, err);
    free(buf);
    if (rc < 0)
      return rc;
  }
  for (size_t i = 0; i < o->nschedules; i++) {
    int rc = pfi_schedule_load(o->schedules[i], o->baseline, tl, err);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* A number of the log, or an empty cell where there is none (NaN) or it is
 * unbounded (a duration of any length). */
static void put_num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, ",%.6f", v);
  else
    fputc(',', f);
}

/* Appends one sample to DIR/series.csv and DIR/jobs.csv (headers when new):
 * the fleet's target and power, and pfid's live capacity quote at <=
 * shed_loss throughput loss (GET /v1/capacity: shed, its interval and the
 * longest event it holds for; empty cells while pfid has none, and an
 * empty duration for any length). */
static void log_sample(const char *dir, struct pfi_pfid_client *pc, double t,
                       double target_w, double power_w, double shed_loss) {
  char p[4200];
  snprintf(p, sizeof p, "%s/series.csv", dir);
  struct stat st;
  int fresh = stat(p, &st) != 0;
  double shed = NAN, lo = NAN, hi = NAN, dur = NAN;
  struct pfi_error ce;
  if (pfi_pfid_client_capacity(pc, shed_loss, &shed, &lo, &hi, &dur, &ce) <
          0 ||
      !isfinite(shed) || shed < 0)
    shed = lo = hi = dur = NAN;
  FILE *f = fopen(p, "ae");
  if (f) {
    if (fresh)
      fputs("t_s,target_w,power_w,shed_loss,shed_w,shed_lo_w,shed_hi_w,"
            "shed_duration_s\n",
            f);
    fprintf(f, "%.3f,%.6f,%.6f,%.6g", t, target_w, power_w, shed_loss);
    put_num(f, shed);
    put_num(f, lo);
    put_num(f, hi);
    put_num(f, isfinite(shed) ? dur : NAN);
    fputc('\n', f);
    fclose(f);
  }
  static char name[512][64];
  static double tput[512];
  static int held[512];
  struct pfi_error e;
  int n = pfi_pfid_client_jobs(pc, name, tput, held, 512, &e);
  snprintf(p, sizeof p, "%s/jobs.csv", dir);
  fresh = stat(p, &st) != 0;
  if (n < 0 || !(f = fopen(p, "ae")))
    return;
  if (fresh)
    fputs("t_s,job,tokens_per_s,held\n", f);
  /* held: pfid's word (docs/grid.md); empty when it gives none. */
  for (int i = 0; i < n; i++) {
    fprintf(f, "%.3f,", t);
    pfi_cli_put_csv_field(f, name[i]);
    fprintf(f, ",%.9g,%s\n", tput[i], held[i] < 0 ? "" : held[i] ? "1" : "0");
  }
  fclose(f);
}

int pfi__grid_bridge(const struct opts *o, struct pfi_ven *ven) {
  if (!o->pfid)
    return pfi__grid_usage("bridge: --pfid URL is required%s", "");
  char laddr[300], lhost[300], cb[1200];
  if (o->listen) {
    if (!ven)
      return pfi__grid_usage("bridge: --listen needs --vtn (the VTN that "
                             "sends the notifications)%s",
                             "");
    if (o->once)
      return pfi__grid_usage("bridge: --listen and --once: a single sync "
                             "takes no notification%s",
                             "");
    int u = listen_addr(o->listen, laddr, sizeof laddr, lhost, sizeof lhost);
    if (u)
      return u;
    if (!o->callback && (!lhost[0] || !strcmp(lhost, "0.0.0.0") ||
                         !strcmp(lhost, "[::]")))
      return pfi__grid_usage("bridge: --listen '%s' is on every address: "
                             "give --callback URL, the URL the VTN reaches "
                             "it by",
                             o->listen);
    if (o->callback && strncmp(o->callback, "http://", 7) != 0 &&
        strncmp(o->callback, "https://", 8) != 0)
      return pfi__grid_usage("--callback: '%s' is not an http(s) URL",
                             o->callback);
  } else if (o->callback)
    return pfi__grid_usage("bridge: --callback goes with --listen%s", "");
  char token[600];
  int status = 0;
  if (!o->pfid_token ||
      (status = read_token(o->pfid_token, token, sizeof token)) != 0)
    return status ? status
                  : pfi__grid_usage("bridge: --pfid-token-file FILE is "
                                    "required%s",
                                    "");
  struct pfi_meter_config mc;
  struct pfi_error err;
  pfi_error_clear(&err);
  if (o->config) {
    if (pfi_meter_config_load(o->config, &mc, &err) < 0)
      return pfi__grid_fail(&err);
  } else
    pfi_meter_config_init(&mc);
  if (o->logdir && mkdir(o->logdir, 0755) < 0 && errno != EEXIST) {
    fprintf(stderr, "pfi grid: %s: %s\n", o->logdir, strerror(errno));
    return PFI_EXIT_FAIL;
  }
  struct pfi_pfid_client *pc = NULL;
  if (pfi_pfid_client_open(o->pfid, token, &pc, &err) < 0 ||
      pfi_pfid_client_tls(pc, &o->pfid_tls, &err) < 0) {
    memset(token, 0, sizeof token);
    pfi_pfid_client_close(pc);
    return pfi__grid_fail(&err);
  }
  memset(token, 0, sizeof token);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  /* The webhook: a listener with a bearer token of its own (the
   * subscription's bearerToken, which the VTN sends on each notification),
   * subscribed to in the loop below. */
  struct pfi_oadr_listener *hook = NULL;
  struct pfi_oadr_listener_stats seen;
  memset(&seen, 0, sizeof seen);
  char bearer[PFI_OADR_BEARER_LEN] = "", sub_id[PFI_TIMELINE_ID_MAX] = "";
  if (o->listen) {
    struct pfi_oadr_config cfg;
    make_cfg(o, wall(), &cfg);
    if (pfi_oadr_bearer_new(bearer, &err) < 0 ||
        pfi_oadr_listen(laddr, "/notify", bearer, &cfg, &hook, &err) < 0) {
      pfi_pfid_client_close(pc);
      return pfi__grid_fail(&err);
    }
    if (o->callback)
      snprintf(cb, sizeof cb, "%s", o->callback);
    else
      snprintf(cb, sizeof cb, "http://%s:%u/notify", lhost,
               pfi_oadr_listener_port(hook));
    printf("bridge: listening for the VTN's notifications on %s port %u "
           "(callback %s)\n",
           lhost[0] ? lhost : "every address", pfi_oadr_listener_port(hook),
           cb);
    fflush(stdout);
  }
  struct pfi_timeline vtn, files, all;
  pfi_timeline_init(&vtn);
  pfi_timeline_init(&files);
  pfi_timeline_init(&all);
  double poll = o->interval > 0 ? o->interval : 30;
  double next_report = wall() + (o->report_s > 0 ? o->report_s : 900);
  double e_wh = 0, last_t = wall(), p_sum = 0;
  size_t p_n = 0;
  /* The nodes' state at the last poll, for the reports at the VTN's level
   * (--level): the fleet's GPU power through the meter chain. */
  double *gw = malloc(PFI_BRIDGE_MAX_NODES * sizeof *gw);
  double *ow = malloc(PFI_BRIDGE_MAX_NODES * sizeof *ow);
  double last_pw = NAN;
  int nn = 0;
  if (!gw || !ow) {
    free(gw);
    free(ow);
    gw = ow = NULL;
    fprintf(stderr, "pfi grid bridge: out of memory\n");
    stop = 1;
    status = PFI_EXIT_FAIL;
  }
  int have_vtn = 0;
  while (!stop) {
    double now = wall();
    struct pfi_oadr_config cfg;
    make_cfg(o, now, &cfg);
    /* The subscription, before the poll (no event slips between them):
     * made at the first pass, checked at every poll (GET, one request). */
    if (hook) {
      int k = pfi_ven_subscription_keep(ven, sub_id, cb, bearer, &err);
      char b[PFI_ERROR_MSG_MAX + 64];
      if (k < 0)
        fprintf(stderr,
                "pfi grid bridge: subscription: %s (trying again at the "
                "next poll, within 30 s)\n",
                pfi_error_format(&err, b, sizeof b));
      else if (k > 0) {
        printf("bridge: subscription ");
        pfi_cli_put_name(stdout, sub_id, 0);
        printf(" %s at the VTN\n", k == 2 ? "made" : "put back");
      }
      fflush(stdout);
    }
    if (read_files(o, &cfg, &files, &err) < 0) {
      status = pfi__grid_fail(&err);
      break;
    }
    if (ven) {
      struct pfi_timeline fresh;
      pfi_timeline_init(&fresh);
      if (pfi_ven_poll(ven, &cfg, &fresh, NULL, &err) < 0) {
        /* Keep acting on what the VTN said last; say why. */
        char b[PFI_ERROR_MSG_MAX + 64];
        fprintf(stderr, "pfi grid bridge: %s (keeping the last %zu span(s))\n",
                pfi_error_format(&err, b, sizeof b), vtn.n);
        pfi_timeline_release(&fresh);
      } else {
        pfi_timeline_release(&vtn);
        vtn = fresh;
        have_vtn = 1;
      }
    }
    all.n = 0;
    for (size_t i = 0; i < vtn.n; i++)
      pfi_timeline_add(&all, &vtn.spans[i], NULL);
    for (size_t i = 0; i < files.n; i++)
      pfi_timeline_add(&all, &files.spans[i], NULL);
    size_t posted, cancelled, infeasible = 0;
    if (pfi_bridge_sync(pc, &all, &mc, now, o->overlap >= 0 ? o->overlap : 2,
                        &posted, &cancelled, &infeasible, &err) < 0) {
      char b[PFI_ERROR_MSG_MAX + 64];
      fprintf(stderr, "pfi grid bridge: %s\n",
              pfi_error_format(&err, b, sizeof b));
      if (o->once) /* its one sync failed: say so by the exit status */
        status = PFI_EXIT_FAIL;
    } else if (posted || cancelled || infeasible)
      printf("bridge: %zu event(s) posted, %zu cancelled%s\n", posted,
             cancelled,
             infeasible ? ", infeasible target(s) posted at the "
                          "floors"
                        : "");
    fflush(stdout);
    /* Fleet power for the reports, integrated per poll. */
    double pw, tw;
    if (pfi_pfid_client_status(pc, &pw, &tw, &err) == 0) {
      if (o->logdir)
        log_sample(o->logdir, pc, wall(), tw, pw,
                   o->shed_loss > 0 ? o->shed_loss : 0.1);
      /* pfid's power is GPU power; the VTN's targets and --baseline are
       * at --level, and so is what it is told. */
      double pl = NAN;
      struct pfi_error le;
      pfi_error_clear(&le);
      if (o->level == PFI_LEVEL_GPU)
        pl = pw;
      else if ((nn = pfi_pfid_client_nodes(pc, &mc, gw, ow,
                                           PFI_BRIDGE_MAX_NODES, &le)) < 0 ||
               pfi_meter_power_at(&mc, gw, ow, (size_t)nn, o->level, pw, &pl,
                                  &le) < 0) {
        char b[PFI_ERROR_MSG_MAX + 64];
        fprintf(stderr,
                "pfi grid bridge: the fleet's power at the %s level: %s "
                "(this poll left out of the report)\n",
                pfi__grid_level_name(o->level),
                pfi_error_format(&le, b, sizeof b));
        nn = 0;
        pl = NAN;
      }
      if (isfinite(pl)) {
        double t = wall();
        e_wh += pl * (t - last_t) / 3600;
        last_t = t;
        p_sum += pl;
        p_n++;
        last_pw = pw;
      }
    }
    if (ven && have_vtn && wall() >= next_report && p_n > 0) {
      const struct pfi_target_span *s = pfi_timeline_at(&vtn, (int64_t)now);
      if (s) {
        double dur = o->report_s > 0 ? o->report_s : 900;
        struct pfi_ven_report_value v[4] = {
            {"USAGE", e_wh, "WH", "DIRECT_READ"},
            {"DEMAND", p_sum / p_n, "W", "MEAN"},
            {"BASELINE", o->baseline, "W", "BASELINE"},
            {"LOAD_SHED_DELTA_AVAILABLE", 0, "W", "FORECAST"}};
        size_t nv = 2;
        if (o->baseline > 0)
          nv++;
        /* What the fleet could shed now (pfid's live capacity, the central
         * quote at --shed-loss); left out while pfid has none. */
        double shed, slo, shi, sdur;
        struct pfi_error ce;
        if (pfi_pfid_client_capacity(pc, o->shed_loss > 0 ? o->shed_loss : 0.1,
                                     &shed, &slo, &shi, &sdur, &ce) == 0 &&
            isfinite(shed) && shed >= 0) {
          /* pfid quotes GPU power: at --level, what the meter chain loses
           * when the fleet's GPU power falls by that much. */
          double hi_w = last_pw, lo_w = NAN;
          if (o->level != PFI_LEVEL_GPU &&
              (!(isfinite(last_pw)) ||
               pfi_meter_power_at(&mc, gw, ow, (size_t)nn, o->level, last_pw,
                                  &hi_w, &ce) < 0 ||
               pfi_meter_power_at(&mc, gw, ow, (size_t)nn, o->level,
                                  fmax(last_pw - shed, 0), &lo_w, &ce) < 0))
            shed = NAN;
          else if (o->level != PFI_LEVEL_GPU)
            shed = hi_w - lo_w;
          if (isfinite(shed)) {
            v[nv] = v[3];
            v[nv++].value = shed;
          }
        }
        struct pfi_ven_report r = {.event_id = s->event,
                                   .report_name =
                                       o->level == PFI_LEVEL_GPU
                                           ? "pfi-gpu-power"
                                       : o->level == PFI_LEVEL_NODE
                                           ? "pfi-node-power"
                                           : "pfi-meter-power",
                                   .resource_name = NULL,
                                   .start_s = (int64_t)(now - dur),
                                   .duration_s = dur,
                                   .values = v,
                                   .nvalues = nv};
        if (pfi_ven_send_report(ven, &r, &err) < 0) {
          char b[PFI_ERROR_MSG_MAX + 64];
          fprintf(stderr, "pfi grid bridge: report: %s\n",
                  pfi_error_format(&err, b, sizeof b));
        }
      }
      next_report = wall() + (o->report_s > 0 ? o->report_s : 900);
      e_wh = p_sum = 0;
      p_n = 0;
    }
    if (o->once)
      break;
    /* Wake at the next span boundary if it comes before the next poll;
     * while the VTN holds no subscription of ours (it could not be made),
     * no notification can come: try again within 30 s. */
    double wake = now + poll;
    if (hook && !sub_id[0] && poll > 30)
      wake = now + 30;
    for (size_t i = 0; i < all.n; i++) {
      if (all.spans[i].start_s > now && all.spans[i].start_s < wake)
        wake = (double)all.spans[i].start_s;
      if (all.spans[i].end_s > now && all.spans[i].end_s < wake)
        wake = (double)all.spans[i].end_s;
    }
    if (nap(wake - wall(), hook ? pfi_oadr_listener_fd(hook) : -1))
      say_notes(hook, &seen); /* and at once the next pass polls */
  }
  if (hook) {
    /* Leave no subscription behind at the VTN (pfid keeps its events: the
     * grid commitment stands). */
    if (sub_id[0]) {
      if (pfi_ven_subscription_delete(ven, sub_id, &err) < 0) {
        char b[PFI_ERROR_MSG_MAX + 64];
        fprintf(stderr, "pfi grid bridge: subscription: %s\n",
                pfi_error_format(&err, b, sizeof b));
      } else {
        printf("bridge: subscription ");
        pfi_cli_put_name(stdout, sub_id, 0);
        printf(" deleted at the VTN\n");
      }
    }
    pfi_oadr_listener_close(hook);
    memset(bearer, 0, sizeof bearer);
  }
  free(gw);
  free(ow);
  pfi_timeline_release(&vtn);
  pfi_timeline_release(&files);
  pfi_timeline_release(&all);
  pfi_pfid_client_close(pc);
  return status;
}
