/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fleet at scale (EMULATED GPUs): N agents of G emulated GPUs each, many
 * in this one process, on one NATS server, against a pfid started by
 * scripts/fleet-bench.sh. An event is submitted through pfid's API; each
 * agent notes when it applied (and read back) its first assignment of the
 * event. Prints the latency from the submission to every cap applied
 * (p50, p99, max over agents), and pfid's CPU per control period and
 * memory from /proc.
 *
 *   bench_fleet --nats URL --user U --password-file F --api URL
 *               --token-file F --pfid-pid PID --dir DIR [--nodes N]
 *               [--gpus G] [--period S] [--hold S]
 *
 * --hold S keeps the event (and the agents' telemetry) S seconds longer,
 * for more control periods in pfid's period figures.
 *
 * Without --nats it prints how to run it and exits 0 (make bench runs
 * every bench_* without arguments).
 */
#include <curl/curl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pfi/agent.h"
#include "pfi/fleet.h"
#include "pfi/transport.h"

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* utime + stime of a process, s; and its resident memory, MiB. */
static int proc_usage(long pid, double *cpu_s, double *rss_mib) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *fp = fopen(path, "r");
  if (!fp || !fgets(buf, sizeof buf, fp)) {
    if (fp)
      fclose(fp);
    return -1;
  }
  fclose(fp);
  char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                   &ut, &st) != 2)
    return -1;
  *cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  *rss_mib = NAN;
  if ((fp = fopen(path, "r"))) {
    while (fgets(buf, sizeof buf, fp))
      if (strncmp(buf, "VmRSS:", 6) == 0)
        *rss_mib = strtod(buf + 6, NULL) / 1024.0;
    fclose(fp);
  }
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static size_t sink(char *p, size_t s, size_t n, void *u) { return s * n; }

/* Appends a response to a fixed buffer (u: struct page). */
struct page {
  char s[65536];
  size_t n;
};
static size_t keep(char *p, size_t s, size_t n, void *u) {
  struct page *pg = u;
  size_t k = s * n;
  if (pg->n + k < sizeof pg->s) {
    memcpy(pg->s + pg->n, p, k);
    pg->n += k;
    pg->s[pg->n] = 0;
  }
  return k;
}

/* A number after "key": in text, NAN when absent. */
static double field(const char *text, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = text ? strstr(text, k) : NULL;
  return p ? strtod(p + strlen(k), NULL) : NAN;
}

/* pfid's own measure of each period's work (lease, bucket, control module
 * over every GPU, publishing every node's assignment), from /v1/status. */
static void period_work(const char *api, const char *what) {
  static struct page pg;
  pg.n = 0;
  pg.s[0] = 0;
  char u[600];
  snprintf(u, sizeof u, "%s/v1/status", api);
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, u);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &pg);
  if (curl_easy_perform(h) == CURLE_OK) {
    const char *w = strstr(pg.s, "\"period_work_s\"");
    printf("pfid period work (lease, bucket, control module, publishing) over "
           "%.0f periods, %s: p50 %.3f s, p99 %.3f s, max %.3f s\n",
           field(w, "n"), what, field(w, "p50"), field(w, "p99"),
           field(w, "max"));
  }
  curl_easy_cleanup(h);
}

int main(int argc, char **argv) {
  static const struct option lo[] = {{"nats", 1, 0, 'n'},
                                     {"user", 1, 0, 'u'},
                                     {"password-file", 1, 0, 'p'},
                                     {"api", 1, 0, 'a'},
                                     {"token-file", 1, 0, 't'},
                                     {"pfid-pid", 1, 0, 'P'},
                                     {"dir", 1, 0, 'd'},
                                     {"nodes", 1, 0, 'N'},
                                     {"gpus", 1, 0, 'G'},
                                     {"period", 1, 0, 'T'},
                                     {"hold", 1, 0, 'H'},
                                     {0, 0, 0, 0}};
  const char *url = NULL, *user = NULL, *pwf = NULL, *api = NULL, *tokf = NULL,
             *dir = NULL;
  long pfid_pid = 0;
  unsigned nodes = 1250, gpus = 8;
  double period = 1.0, hold = 0;
  int c;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 'n':
      url = optarg;
      break;
    case 'u':
      user = optarg;
      break;
    case 'p':
      pwf = optarg;
      break;
    case 'a':
      api = optarg;
      break;
    case 't':
      tokf = optarg;
      break;
    case 'P':
      pfid_pid = strtol(optarg, NULL, 10);
      break;
    case 'd':
      dir = optarg;
      break;
    case 'N':
      nodes = (unsigned)strtoul(optarg, NULL, 10);
      break;
    case 'G':
      gpus = (unsigned)strtoul(optarg, NULL, 10);
      break;
    case 'T':
      period = strtod(optarg, NULL);
      break;
    case 'H':
      hold = strtod(optarg, NULL);
      break;
    default:
      return 2;
    }
  }
  if (!url) {
    printf("bench_fleet: needs a NATS server and pfid; run "
           "scripts/fleet-bench.sh [NODES]\n");
    return 0;
  }
  if (!api || !tokf || !dir || nodes < 1 || gpus < 1 || gpus > 64 ||
      !(period >= 0.1) || !(hold >= 0 && hold <= 500)) {
    fprintf(stderr, "bench_fleet: bad arguments\n");
    return 2;
  }
  struct pfi_error err;
  struct pfi_nats_opts no = {url, user, pwf, "bench", 0, 0, 10};
  struct pfi_nats *nc = NULL;
  if (pfi_nats_open(&nc, &no, &err) < 0) {
    fprintf(stderr, "bench_fleet: %s\n", err.msg);
    return 1;
  }
  struct pfi_agent **ag = calloc(nodes, sizeof *ag);
  struct pfi_nats_sub **sub = calloc(nodes, sizeof *sub);
  double *done = calloc(nodes, sizeof *done);
  struct pfi_fleet_telemetry *t = malloc(sizeof *t);
  char *buf = malloc(PFI_FLEET_MSG_MAX + 1);
  if (!ag || !sub || !done || !t || !buf)
    return 1;
  double t_open = mono();
  for (unsigned i = 0; i < nodes; i++) {
    char name[32], params[600], rec[600], subj[64], st[540];
    snprintf(name, sizeof name, "b%05u", i);
    snprintf(st, sizeof st, "%s/emu.%s", dir, name);
    mkdir(st, 0700);
    snprintf(params, sizeof params, "gpus=%u,state=%s,realtime=1", gpus, st);
    snprintf(rec, sizeof rec, "%s/agent.%s.db", dir, name);
    struct pfi_agent_opts o = {name, "emu", params, rec,
                               NULL, NULL,  NULL,   NULL};
    if (pfi_agent_open(&ag[i], &o, wall(), &err) < 0 ||
        pfi_nats_subscribe(
            nc, (snprintf(subj, sizeof subj, "pfi.assign.%s", name), subj),
            &sub[i], &err) < 0) {
      fprintf(stderr, "bench_fleet: agent %u: %s\n", i, err.msg);
      return 1;
    }
  }
  printf("bench_fleet: %u emulated agents x %u GPUs = %u GPUs open in %.1f s\n",
         nodes, gpus, nodes * gpus, mono() - t_open);
  /* Telemetry until pfid knows every node, then the event. */
  double t0 = 0, cpu0 = 0, rss = NAN, t_cpu0 = 0, cpu_end = 0, t_cpu_end = 0;
  int submitted = 0, all_done = 0;
  unsigned ndone = 0;
  double next = mono(), t_start = mono(), t_sub = 0;
  while (mono() - t_start < 600 && !all_done) {
    /* Drain assignments (non-blocking per agent), then one tick each. */
    for (unsigned i = 0; i < nodes; i++) {
      char *d = NULL;
      size_t len = 0;
      while (pfi_nats_next(sub[i], 0.0005, &d, &len, NULL, 0, &err) == 1) {
        int r = pfi_agent_handle(ag[i], d, len, wall(), mono(), &err);
        free(d);
        struct pfi_agent_stats s;
        pfi_agent_stats(ag[i], &s);
        if (r == 1 && submitted && !done[i] && s.event_end_s > 0) {
          done[i] = mono() - t0;
          ndone++;
        }
      }
    }
    if (mono() < next)
      continue;
    next += period;
    for (unsigned i = 0; i < nodes; i++) {
      pfi_agent_tick(ag[i], wall(), mono(), t, &err);
      int k = pfi_fleet_telemetry_encode(t, buf, PFI_FLEET_MSG_MAX + 1, &err);
      char subj[96];
      snprintf(subj, sizeof subj, "pfi.telemetry.%s", t->node);
      if (k > 0)
        pfi_nats_publish(nc, subj, buf, (size_t)k, &err);
    }
    if (!submitted && mono() - t_start > 5 + nodes / 500.0) {
      period_work(api, "before the event");
      /* The event: a target far below the fleet's power (idle GPUs go to
       * their lowest limit), submitted through the API. */
      char body[512], auth[300], tok[256], u[600];
      struct pfi_fleet_event e = {"bench", wall(), wall() + 3600,
                                  100.0 * nodes * gpus, 0};
      if (pfi_read_secret(tokf, tok, sizeof tok, &err) < 0 ||
          pfi_fleet_event_encode(&e, body, sizeof body, &err) < 0) {
        fprintf(stderr, "bench_fleet: %s\n", err.msg);
        return 1;
      }
      snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
      snprintf(u, sizeof u, "%s/v1/events", api);
      CURL *h = curl_easy_init();
      struct curl_slist *hd = curl_slist_append(NULL, auth);
      curl_easy_setopt(h, CURLOPT_URL, u);
      curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
      t0 = mono();
      CURLcode cr = curl_easy_perform(h);
      curl_slist_free_all(hd);
      curl_easy_cleanup(h);
      if (cr != CURLE_OK) {
        fprintf(stderr, "bench_fleet: POST %s: %s\n", u,
                curl_easy_strerror(cr));
        return 1;
      }
      submitted = 1;
      t_sub = mono();
      if (pfid_pid)
        proc_usage(pfid_pid, &cpu0, &rss);
      t_cpu0 = mono();
    }
    all_done = submitted && ndone == nodes &&
               mono() - t_sub > 10 * period + hold;
  }
  if (pfid_pid)
    proc_usage(pfid_pid, &cpu_end, &rss);
  t_cpu_end = mono();
  if (ndone < nodes)
    printf("bench_fleet: only %u of %u agents applied the event\n", ndone,
           nodes);
  double *lat = calloc(ndone ? ndone : 1, sizeof *lat);
  unsigned k = 0;
  for (unsigned i = 0; i < nodes; i++)
    if (done[i] > 0)
      lat[k++] = done[i];
  qsort(lat, k, sizeof *lat, cmp);
  if (k)
    printf("event -> every cap applied and read back (EMULATED GPUs): p50 "
           "%.3f s, p99 %.3f s, max %.3f s over %u agents (%u GPUs)\n",
           lat[k / 2], lat[(size_t)(0.99 * (k - 1))], lat[k - 1], k, k * gpus);
  if (pfid_pid && t_cpu_end > t_cpu0)
    printf("pfid: %.3f CPU s per %.1f s control period (%.0f %% of one core) "
           "over %.0f s of the event; resident memory %.1f MiB\n",
           (cpu_end - cpu0) / ((t_cpu_end - t_cpu0) / period), period,
           100 * (cpu_end - cpu0) / (t_cpu_end - t_cpu0), t_cpu_end - t_cpu0,
           rss);
  period_work(api, "the newest periods of the run, mostly the event's");
  for (unsigned i = 0; i < nodes; i++) {
    pfi_agent_restore(ag[i], &err);
    pfi_nats_unsubscribe(sub[i]);
    pfi_agent_close(ag[i]);
  }
  pfi_nats_close(nc);
  free(lat);
  free(ag);
  free(sub);
  free(done);
  free(t);
  free(buf);
  return 0;
}
