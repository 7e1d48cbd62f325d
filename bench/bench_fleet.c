/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fleet at scale (EMULATED GPUs): N agents of G emulated GPUs each, many
 * in each of P worker processes, on one NATS server, against a pfid started
 * by scripts/fleet-bench.sh. Once pfid reports every node live, an event is
 * submitted through pfid's API; each agent notes when it applied (and read
 * back) its first assignment of the event. Prints the latency from the
 * submission to every cap applied (p50, p99, max over agents), and pfid's
 * CPU per control period and memory from /proc.
 *
 *   bench_fleet --nats URL --user U --password-file F --api URL
 *               --token-file F --pfid-pid PID --dir DIR [--nodes N]
 *               [--gpus G] [--period S] [--hold S] [--procs P] [--csv FILE]
 *   bench_fleet --plot FILE SVG
 *
 * --hold S keeps the event (and the agents' telemetry) S seconds longer,
 * for more control periods in pfid's period figures. --procs P (default 2)
 * spreads the agents over P processes, each with one NATS connection and
 * one subscription for its agents' assignments. --csv appends the run's
 * figures as a row; --plot draws such rows (one per fleet size) as an SVG
 * with the figure module (gnuplot).
 *
 * Without --nats it prints how to run it and exits 0 (make bench runs
 * every bench_* without arguments).
 */
#include <curl/curl.h>
#include <signal.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pfi/agent.h"
#include "pfi/fleet.h"
#include "pfi/report.h"
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
 * over every GPU, publishing every node's assignment), from /v1/status:
 * w[0..2] = p50, p99, max (NAN when not read). */
static void period_work(const char *api, const char *what, double w3[3]) {
  static struct page pg;
  pg.n = 0;
  pg.s[0] = 0;
  char u[600];
  w3[0] = w3[1] = w3[2] = NAN;
  snprintf(u, sizeof u, "%s/v1/status", api);
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, u);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &pg);
  if (curl_easy_perform(h) == CURLE_OK) {
    const char *w = strstr(pg.s, "\"period_work_s\"");
    w3[0] = field(w, "p50");
    w3[1] = field(w, "p99");
    w3[2] = field(w, "max");
    printf("pfid period work (lease, bucket, control module, publishing) over "
           "%.0f periods, %s: p50 %.3f s, p99 %.3f s, max %.3f s\n",
           field(w, "n"), what, w3[0], w3[1], w3[2]);
  }
  curl_easy_cleanup(h);
}

/* The event the bench submits lasts this long; an agent's event end minus
 * it is the submission's time. */
#define EVENT_S 3600.0

struct run {
  const char *url, *user, *pwf, *dir;
  unsigned nodes, gpus;
  double period, hold;
};

/* One worker process: agents lo..hi-1 of the run, their assignments on one
 * subscription of their subjects (as each pfi-agent has its own: a message
 * is handed to its agent as soon as it arrives), their telemetry every
 * period. Writes each
 * agent's latency from the event's submission to its event caps applied
 * and read back, s, one per line, to DIR/lat.W (absent agents: none).
 * Returns once every agent applied the event and 10 periods + hold passed,
 * or after 600 s. */
static int worker(const struct run *r, unsigned w, unsigned lo, unsigned hi) {
  struct pfi_error err;
  char name[32];
  snprintf(name, sizeof name, "bench-%u", w);
  struct pfi_nats_opts no = {r->url, r->user, r->pwf, name, 0, 0, 10, 0, 0};
  struct pfi_nats *nc = NULL;
  struct pfi_nats_sub *sub = NULL;
  unsigned n = hi - lo;
  struct pfi_agent **ag = calloc(n ? n : 1, sizeof *ag);
  double *done = calloc(n ? n : 1, sizeof *done);
  struct pfi_fleet_telemetry *t = malloc(sizeof *t);
  char *buf = malloc(PFI_FLEET_MSG_MAX + 1);
  if (!ag || !done || !t || !buf)
    return 1;
  char(*subj)[32] = calloc(n ? n : 1, sizeof *subj);
  const char **sp = calloc(n ? n : 1, sizeof *sp);
  if (!subj || !sp)
    return 1;
  for (unsigned i = 0; i < n; i++) {
    snprintf(subj[i], sizeof subj[i], "pfi.assign.b%05u", lo + i);
    sp[i] = subj[i];
  }
  /* Its own agents' subjects only: every worker on pfi.assign.> would
   * have the server deliver each assignment to every worker. */
  if (pfi_nats_open(&nc, &no, &err) < 0 ||
      pfi_nats_subscribe_many(nc, sp, n, &sub, &err) < 0) {
    fprintf(stderr, "bench_fleet: worker %u: %s\n", w, err.msg);
    return 1;
  }
  for (unsigned i = 0; i < n; i++) {
    char params[600], rec[600], st[540];
    snprintf(name, sizeof name, "b%05u", lo + i);
    snprintf(st, sizeof st, "%s/emu.%s", r->dir, name);
    mkdir(st, 0700);
    snprintf(params, sizeof params, "gpus=%u,state=%s,realtime=1", r->gpus,
             st);
    snprintf(rec, sizeof rec, "%s/agent.%s.db", r->dir, name);
    struct pfi_agent_opts o = {name, "emu", params, rec,
                               NULL, NULL,  NULL,   NULL};
    if (pfi_agent_open(&ag[i], &o, wall(), &err) < 0) {
      fprintf(stderr, "bench_fleet: agent %u: %s\n", lo + i, err.msg);
      return 1;
    }
  }
  unsigned ndone = 0;
  double t_start = mono(), next = mono(), t_all = 0, ev_start = 0;
  while (mono() - t_start < 600 &&
         !(ndone == n && mono() - t_all > 10 * r->period + r->hold)) {
    /* Assignments until the next tick, then one tick each. */
    double left;
    while ((left = next - mono()) > 0) {
      char *d = NULL, subj[96];
      size_t len = 0;
      if (pfi_nats_next(sub, left, &d, &len, subj, sizeof subj, &err) != 1)
        continue;
      /* pfi.assign.bNNNNN, this worker's when lo <= NNNNN < hi */
      const char *nm = strncmp(subj, "pfi.assign.b", 12) == 0 ? subj + 12 : "";
      char *end = NULL;
      unsigned long i = strtoul(nm, &end, 10);
      if (*nm && end && !*end && i >= lo && i < hi) {
        i -= lo;
        int rc = pfi_agent_handle(ag[i], d, len, wall(), mono(), &err);
        struct pfi_agent_stats s;
        pfi_agent_stats(ag[i], &s);
        if (rc == 1 && !done[i] && s.event_end_s > 0) {
          ev_start = s.event_end_s - EVENT_S;
          done[i] = wall() - ev_start;
          if (++ndone == n)
            t_all = mono();
        }
      }
      free(d);
    }
    next += r->period;
    for (unsigned i = 0; i < n; i++) {
      pfi_agent_tick(ag[i], wall(), mono(), t, &err);
      int k = pfi_fleet_telemetry_encode(t, buf, PFI_FLEET_MSG_MAX + 1, &err);
      char subj[96];
      snprintf(subj, sizeof subj, "pfi.telemetry.%s", t->node);
      if (k > 0)
        pfi_nats_publish(nc, subj, buf, (size_t)k, &err);
    }
  }
  char path[600];
  snprintf(path, sizeof path, "%s/lat.%u", r->dir, w);
  FILE *fp = fopen(path, "w");
  for (unsigned i = 0; fp && i < n; i++)
    if (done[i] > 0)
      fprintf(fp, "%.6f\n", done[i]);
  if (fp)
    fclose(fp);
  for (unsigned i = 0; i < n; i++) {
    pfi_agent_restore(ag[i], &err);
    pfi_agent_close(ag[i]);
  }
  pfi_nats_unsubscribe(sub);
  pfi_nats_close(nc);
  free(subj);
  free(sp);
  free(ag);
  free(done);
  free(t);
  free(buf);
  return fp ? 0 : 1;
}

/* --plot CSV SVG: the rows the runs appended (--csv) as a figure. */
static int plot(const char *csv, const char *svg) {
  FILE *fp = fopen(csv, "r");
  if (!fp) {
    fprintf(stderr, "bench_fleet: %s: cannot read\n", csv);
    return 2;
  }
  enum { MAXR = 64 };
  double x[MAXR], p50[MAXR], p99[MAXR], wp50[MAXR], wp99[MAXR], cpu[MAXR];
  size_t n = 0;
  char line[512];
  unsigned ln = 0;
  while (fgets(line, sizeof line, fp) && n < MAXR) {
    ln++;
    if (ln == 1)
      continue; /* the header */
    double g, a, pr, q50, q99, mx, c, rss, w50, w99;
    if (sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &g, &a, &pr,
               &q50, &q99, &mx, &c, &rss, &w50, &w99) != 10) {
      fprintf(stderr, "bench_fleet: %s:%u: expected 10 numbers\n", csv, ln);
      fclose(fp);
      return 2;
    }
    x[n] = g;
    p50[n] = q50;
    p99[n] = q99;
    wp50[n] = w50;
    wp99[n] = w99;
    cpu[n] = c;
    n++;
  }
  fclose(fp);
  if (!n) {
    fprintf(stderr, "bench_fleet: %s: no rows\n", csv);
    return 2;
  }
  double aim_x[2] = {x[0], x[n - 1]}, aim_y[2] = {1, 1};
  struct pfi_series s1[] = {
      {"event -> every cap applied, p50", x, p50, NULL, NULL, n,
       PFI_STYLE_LINESPOINTS, 1, 0},
      {"event -> every cap applied, p99", x, p99, NULL, NULL, n,
       PFI_STYLE_LINESPOINTS, 2, 0},
      {"aim (10,000 GPUs): 1 s", aim_x, aim_y, NULL, NULL, 2, PFI_STYLE_LINES,
       3, 1}};
  struct pfi_series s2[] = {
      {"pfid period work, p50", x, wp50, NULL, NULL, n, PFI_STYLE_LINESPOINTS,
       1, 0},
      {"pfid period work, p99", x, wp99, NULL, NULL, n, PFI_STYLE_LINESPOINTS,
       2, 0},
      {"pfid CPU per 1 s period", x, cpu, NULL, NULL, n,
       PFI_STYLE_LINESPOINTS, 4, 0}};
  /* The fleet sizes as the axis's tics: "10k", "100k". */
  char lab[MAXR][16];
  const char *labp[MAXR];
  for (size_t i = 0; i < n; i++) {
    snprintf(lab[i], sizeof lab[i], "%gk", x[i] / 1000);
    labp[i] = lab[i];
  }
  struct pfi_panel pan[2];
  pfi_panel_init(&pan[0]);
  pfi_panel_init(&pan[1]);
  for (int k = 0; k < 2; k++) {
    pan[k].xtic_pos = x;
    pan[k].xtic_label = labp;
    pan[k].nxtics = n;
  }
  pan[0].title = "EMULATED GPUs on one 2-core machine: event to caps";
  pan[0].xlabel = "emulated GPUs (8 per agent)";
  pan[0].ylabel = "s";
  pan[0].series = s1;
  pan[0].nseries = 3;
  pan[0].key = 1;
  pan[0].key_pos = "top left";
  pan[0].ymin = 0;
  pan[1].title = "pfid's work per control period";
  pan[1].xlabel = "emulated GPUs (8 per agent)";
  pan[1].ylabel = "s";
  pan[1].series = s2;
  pan[1].nseries = 3;
  pan[1].key = 1;
  pan[1].key_pos = "top left";
  pan[1].ymin = 0;
  struct pfi_figure f = {960, 420, 0, 1, 2, pan, 2};
  struct pfi_error err;
  if (pfi_figure_write(&f, svg, &err) < 0) {
    fprintf(stderr, "bench_fleet: %s\n", err.msg);
    return 1;
  }
  printf("bench_fleet: %zu runs drawn in %s\n", n, svg);
  return 0;
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
                                     {"procs", 1, 0, 'W'},
                                     {"csv", 1, 0, 'C'},
                                     {"plot", 1, 0, 'L'},
                                     {0, 0, 0, 0}};
  const char *api = NULL, *tokf = NULL, *csv = NULL, *plot_csv = NULL;
  struct run r = {NULL, NULL, NULL, NULL, 1250, 8, 1.0, 0};
  long pfid_pid = 0;
  unsigned procs = 2;
  int c;
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress, also into a file */
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 'n':
      r.url = optarg;
      break;
    case 'u':
      r.user = optarg;
      break;
    case 'p':
      r.pwf = optarg;
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
      r.dir = optarg;
      break;
    case 'N':
      r.nodes = (unsigned)strtoul(optarg, NULL, 10);
      break;
    case 'G':
      r.gpus = (unsigned)strtoul(optarg, NULL, 10);
      break;
    case 'T':
      r.period = strtod(optarg, NULL);
      break;
    case 'H':
      r.hold = strtod(optarg, NULL);
      break;
    case 'W':
      procs = (unsigned)strtoul(optarg, NULL, 10);
      break;
    case 'C':
      csv = optarg;
      break;
    case 'L':
      plot_csv = optarg;
      break;
    default:
      return 2;
    }
  }
  if (plot_csv) {
    if (optind + 1 != argc) {
      fprintf(stderr, "bench_fleet: --plot CSV needs the SVG path after it\n");
      return 2;
    }
    return plot(plot_csv, argv[optind]);
  }
  if (!r.url) {
    printf("bench_fleet: needs a NATS server and pfid; run "
           "scripts/fleet-bench.sh [NODES]\n");
    return 0;
  }
  if (!api || !tokf || !r.dir || r.nodes < 1 || r.nodes > 99999 ||
      r.gpus < 1 || r.gpus > 64 || !(r.period >= 0.1) ||
      !(r.hold >= 0 && r.hold <= 500) || procs < 1 || procs > 64 ||
      procs > r.nodes) {
    fprintf(stderr, "bench_fleet: bad arguments\n");
    return 2;
  }
  /* The workers first: the NATS client's threads do not survive a fork. */
  pid_t pid[64];
  double t_open = mono();
  fflush(stdout);
  for (unsigned w = 0; w < procs; w++) {
    unsigned a = (unsigned)((unsigned long)r.nodes * w / procs),
             b = (unsigned)((unsigned long)r.nodes * (w + 1) / procs);
    if ((pid[w] = fork()) == 0)
      _exit(worker(&r, w, a, b));
    if (pid[w] < 0) {
      perror("bench_fleet: fork");
      return 1;
    }
  }
  printf("bench_fleet: %u emulated agents x %u GPUs = %u GPUs in %u "
         "processes\n",
         r.nodes, r.gpus, r.nodes * r.gpus, procs);
  /* Telemetry until pfid knows every node, then the event. */
  unsigned long want = r.nodes;
  double t_known = NAN;
  int early = 0; /* a worker that ended before the event failed */
  while (mono() - t_open < 300 && !early) {
    for (unsigned w = 0; w < procs; w++)
      if (pid[w] > 0 && waitpid(pid[w], NULL, WNOHANG) == pid[w]) {
        pid[w] = -1;
        early = 1;
      }
    static struct page pg;
    pg.n = 0;
    pg.s[0] = 0;
    char u[600];
    snprintf(u, sizeof u, "%s/v1/status", api);
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, u);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &pg);
    int ok = curl_easy_perform(h) == CURLE_OK;
    curl_easy_cleanup(h);
    double live =
        ok ? field(pg.s, "nodes") - field(pg.s, "stale_nodes") : NAN;
    if (live >= (double)want && !(t_known == t_known))
      t_known = mono();
    /* Three more periods for the control module to see them all. */
    if (t_known == t_known && mono() - t_known > 3 * r.period)
      break;
    usleep(200000);
  }
  if (early) {
    fprintf(stderr, "bench_fleet: a worker failed before the event\n");
    for (unsigned w = 0; w < procs; w++)
      if (pid[w] > 0) {
        kill(pid[w], SIGTERM);
        waitpid(pid[w], NULL, 0);
      }
    return 1;
  }
  printf("bench_fleet: pfid knows the nodes %.1f s after the start\n",
         (t_known == t_known ? t_known : mono()) - t_open);
  double wb[3], we[3];
  period_work(api, "before the event", wb);
  /* The event: a target far below the fleet's power (idle GPUs go to
   * their lowest limit), submitted through the API. */
  struct pfi_error err;
  char body[512], auth[300], tok[256], u[600];
  double ws = wall();
  struct pfi_fleet_event e = {
      "bench", ws, ws + EVENT_S, 100.0 * r.nodes * r.gpus, 0, 0, PFI_LEVEL_GPU};
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
  CURLcode cr = curl_easy_perform(h);
  curl_slist_free_all(hd);
  curl_easy_cleanup(h);
  if (cr != CURLE_OK) {
    fprintf(stderr, "bench_fleet: POST %s: %s\n", u, curl_easy_strerror(cr));
    return 1;
  }
  double cpu0 = 0, cpu_end = 0, rss = NAN, t_cpu0 = mono();
  if (pfid_pid)
    proc_usage(pfid_pid, &cpu0, &rss);
  int failed = 0;
  for (unsigned w = 0; w < procs; w++) {
    int st = 0;
    if (waitpid(pid[w], &st, 0) != pid[w] || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
      failed = 1;
  }
  if (pfid_pid)
    proc_usage(pfid_pid, &cpu_end, &rss);
  double t_cpu_end = mono();
  double *lat = calloc(r.nodes, sizeof *lat);
  unsigned k = 0;
  for (unsigned w = 0; lat && w < procs; w++) {
    char path[600];
    snprintf(path, sizeof path, "%s/lat.%u", r.dir, w);
    FILE *fp = fopen(path, "r");
    while (fp && k < r.nodes && fscanf(fp, "%lf", &lat[k]) == 1)
      k++;
    if (fp)
      fclose(fp);
  }
  if (failed || k < r.nodes)
    printf("bench_fleet: only %u of %u agents applied the event%s\n", k,
           r.nodes, failed ? " (a worker failed)" : "");
  if (lat)
    qsort(lat, k, sizeof *lat, cmp);
  double q50 = k ? lat[k / 2] : NAN, q99 = k ? lat[(size_t)(0.99 * (k - 1))]
                                             : NAN,
         mx = k ? lat[k - 1] : NAN;
  if (k)
    printf("event -> every cap applied and read back (EMULATED GPUs): p50 "
           "%.3f s, p99 %.3f s, max %.3f s over %u agents (%u GPUs)\n",
           q50, q99, mx, k, k * r.gpus);
  double cpu_per = NAN;
  if (pfid_pid && t_cpu_end > t_cpu0) {
    cpu_per = (cpu_end - cpu0) / ((t_cpu_end - t_cpu0) / r.period);
    printf("pfid: %.3f CPU s per %.1f s control period (%.0f %% of one core) "
           "over %.0f s of the event; resident memory %.1f MiB\n",
           cpu_per, r.period, 100 * (cpu_end - cpu0) / (t_cpu_end - t_cpu0),
           t_cpu_end - t_cpu0, rss);
  }
  period_work(api, "the newest periods of the run, mostly the event's", we);
  if (csv) {
    FILE *fp = fopen(csv, "a");
    if (fp && ftell(fp) == 0)
      fprintf(fp, "gpus,agents,procs,p50_s,p99_s,max_s,pfid_cpu_per_period_s,"
                  "pfid_rss_mib,period_work_p50_s,period_work_p99_s\n");
    if (fp) {
      fprintf(fp, "%u,%u,%u,%.4f,%.4f,%.4f,%.4f,%.1f,%.4f,%.4f\n",
              r.nodes * r.gpus, r.nodes, procs, q50, q99, mx, cpu_per, rss,
              we[0], we[1]);
      fclose(fp);
    }
  }
  free(lat);
  return failed || k < r.nodes ? 1 : 0;
}
