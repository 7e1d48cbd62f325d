/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfi-agent: one node's GPUs under pfid's assignments, over NATS. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nats_opt.h"
#include "opt.h"
#include "pfi/agent.h"
#include "pfi/duration.h"
#include "pfi/fleet.h"
#include "pfi/http.h"
#include "pfi/transport.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = sig; }

static char node[PFI_FLEET_NAME_MAX];

/* The options, bound to these (src/base/opt.h). */
static struct pfi_agent_opts ao;
static struct pfi_nats_opts no;
static const char *metrics, *cap_file, *cap_listen, *tlisten;
static int emulate, restore_on_exit;
static double period;
static struct pfi_node_meter_opts nmo;
/* The bounds of the HTTP endpoints (--metrics, --cap-listen,
 * --tput-listen). */
static struct pfi_http_limits hl;
static int per_client;
static struct pfi_http_tls tls; /* the endpoints' (--tls-*, --insecure) */

/* --node: the name, kept whole; a name too long is refused with the
 * others that are not names. */
static int set_node(const struct pfi_opt *o, const char *v, char *why,
                    size_t n) {
  snprintf(node, sizeof node, "%s", v);
  if (strlen(v) >= sizeof node)
    node[0] = '.'; /* rejected after parsing */
  return 0;
}

static const struct pfi_opt opts[] = {
    PFI_OPT_CALLBACK("node", NULL, set_node, "NAME",
                     "this node's name (default: the host name)"),
    NATS_OPTS(&no, "NATS user (default agent-NODE with --password-file; "
                   "with --nats-nkey the nkey's public key)"),
    {.lng = "backend", .arg = PFI_ARG_REQ, .argname = "emu|nvml",
     .help = "device backend", .type = PFI_OT_STRING, .var = &ao.backend,
     .def = "nvml"},
    PFI_OPT_STRING("params", 0, &ao.params, "P", "backend parameters"),
    PFI_OPT_FLAG("emulate", 0, &emulate,
                 "the emulator in real time (backend emu)"),
    PFI_OPT_STRING("emu-job", 0, &ao.emu_job, "ID",
                   "emulate: run this job-library job on the GPUs"),
    {.lng = "record", .arg = PFI_ARG_REQ, .argname = "PATH",
     .help = "local record", .type = PFI_OT_STRING, .var = &ao.record,
     .def = "/var/lib/pfi/agent.db"},
    PFI_OPT_STRING("jobmap-dir", 0, &ao.jobmap_dir, "DIR",
                   "GPU -> job files (Slurm prolog, dcgm format)"),
    PFI_OPT_STRING("tput-dir", 0, &ao.tput_dir, "DIR",
                   "per-job throughput, DIR/JOB.jsonl"),
    {.lng = "tput-max-age", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "a JOB.jsonl line older than S s (its \"t\", else the file's "
             "time) is no throughput: the job stopped writing",
     .type = PFI_OT_NUMBER, .var = &ao.tput_max_age_s, .lo = 1, .hi = 86400,
     .def = "30"},
    PFI_OPT_STRING("tier-dir", 0, &ao.tier_dir, "DIR",
                   "per-job tier, DIR/JOB: "
                   "max_loss[,max_event_s[,notice_s[,deadline]]]"),
    {.lng = "period", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "telemetry period, s", .type = PFI_OT_NUMBER, .var = &period,
     .lo = 0.1, .hi = 60, .def = "1"},
    PFI_OPT_STRING("metrics", 0, &metrics, "HOST:PORT",
                   "serve Prometheus /metrics there (and /v1/cap)"),
    PFI_OPT_STRING("cap-file", 0, &cap_file, "PATH",
                   "write the node's caps and their reason there, JSON, "
                   "every period (atomic rename): what a job reads"),
    PFI_OPT_STRING("cap-listen", 0, &cap_listen, "HOST:PORT",
                   "serve the same at GET /v1/cap (e.g. 127.0.0.1:9401)"),
    PFI_OPT_STRING("tput-listen", 0, &tlisten, "ADDR",
                   "accept POST /v1/jobs/JOB/throughput there: HOST:PORT or "
                   "unix:PATH (a Unix socket)"),
    PFI_OPT_STRING("tls-cert", 0, &tls.cert, "FILE",
                   "serve --metrics over HTTPS with this PEM certificate "
                   "(chain), with --tls-key, and --cap-listen and "
                   "--tput-listen when not on loopback (the jobs' plain "
                   "HTTP stays there)"),
    PFI_OPT_STRING("tls-key", 0, &tls.key, "FILE",
                   "the certificate's PEM private key (mode 0600)"),
    PFI_OPT_STRING("tls-client-ca", 0, &tls.client_ca, "FILE",
                   "with --tls-cert, refuse clients without a certificate "
                   "this PEM CA signed (mutual TLS)"),
    PFI_OPT_FLAG("insecure", 0, &tls.insecure,
                 "allow plain HTTP on an endpoint address that is not "
                 "loopback (without it the agent refuses to start)"),
    PFI_OPT_STRING("powercap", 0, &nmo.powercap, "DIR|none",
                   "node power: the GPUs plus RAPL packages and DRAM (DIR: a "
                   "powercap root, e.g. /sys/class/powercap)"),
    PFI_OPT_STRING("bmc", 0, &nmo.bmc, "TOOL|none",
                   "node power: the BMC's DCMI reading (ipmitool, ipmi-dcmi, "
                   "TOOL:PROGRAM), read off the loop (default: emulated node "
                   "power with --emulate, else none; 'none' turns either "
                   "off)"),
    {.lng = "bmc-period", .arg = PFI_ARG_REQ, .argname = "S",
     .help = "BMC reading every S s", .type = PFI_OT_NUMBER,
     .var = &nmo.bmc_period_s, .lo = 1, .hi = 3600, .def = "10"},
    {.lng = "tput-rate", .arg = PFI_ARG_REQ, .argname = "R",
     .help = "--tput-listen takes at most R reports a second of each job "
             "(more get 429)",
     .type = PFI_OT_NUMBER, .var = &ao.post_rate, .lo = 0.01, .hi = 10000,
     .def = "20"},
    {.lng = "tput-burst", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "beyond a burst of N reports of a job",
     .type = PFI_OT_NUMBER, .var = &ao.post_burst, .lo = 1, .hi = 100000,
     .def = "40"},
    {.lng = "request-deadline", .arg = PFI_ARG_REQ, .argname = "DURATION",
     .help = "the HTTP endpoints shut a connection down whose request is "
             "not received and answered within this long of its accept or "
             "of its previous answer (docs/security.md)",
     .type = PFI_OT_DURATION, .var = &hl.deadline_s, .ival = PFI_DUR_ANY,
     .lo = 1, .hi = 600, .def = "10s"},
    {.lng = "max-conn-per-client", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "connections one client may hold open on each HTTP endpoint, "
             "a client being a local user (a Unix socket's or loopback "
             "peer) or a remote address; more are shut down as they are "
             "accepted (256 in all)",
     .type = PFI_OT_INT, .var = &per_client, .lo = 1, .hi = 256,
     .def = "16"},
    PFI_OPT_FLAG("restore-on-exit", 0, &restore_on_exit,
                 "restore the recorded limits on exit even during an event "
                 "(default: only outside one)"),
    {.lng = "help", .help = "this text", .type = PFI_OT_HELP},
    PFI_OPT_END};
static const struct pfi_opt_rule rules[] = {NATS_OPT_RULES, PFI_RULE_END};
static const struct pfi_cmd_help help = {
    .cmd = "pfi-agent",
    .usage = "usage: pfi-agent [options]\n",
    .about = "One node's GPUs under pfid's assignments over NATS: applies "
             "them all or none, reads the limits back, records each GPU's "
             "limit before its first change and restores that one "
             "(docs/fleet.md).",
    .opts = opts,
    .flags = PFI_OPT_PROGRAM | PFI_OPT_WRAP_ABOUT,
    .rules = rules,
    .args_min = 0,
    .args_max = 0};

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}


static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "pfi-agent %s: ", node);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* The newest page for /metrics and the newest cap status, built by the
 * main loop. */
static pthread_mutex_t mmu = PTHREAD_MUTEX_INITIALIZER;
static char *page, *cap_page;
static size_t page_len, cap_len;

static void serve(void *arg, const struct pfi_http_req *rq,
                  struct pfi_http_resp *rs) {
  if (strcmp(rq->path, "/v1/cap") == 0 && strcmp(rq->method, "GET") == 0) {
    pthread_mutex_lock(&mmu);
    rs->body = cap_page ? malloc(cap_len + 1) : NULL;
    if (rs->body) {
      memcpy(rs->body, cap_page, cap_len + 1);
      rs->len = cap_len;
    } else {
      rs->status = 503;
    }
    pthread_mutex_unlock(&mmu);
    rs->type = "application/json";
    return;
  }
  /* arg non-NULL: the --cap-listen server, which serves /v1/cap only. */
  if (arg || strcmp(rq->path, "/metrics") != 0 ||
      strcmp(rq->method, "GET") != 0) {
    rs->status = 404;
    rs->body = strdup("not found\n");
    rs->len = rs->body ? strlen(rs->body) : 0;
    rs->type = "text/plain";
    return;
  }
  pthread_mutex_lock(&mmu);
  rs->body = page ? malloc(page_len + 1) : NULL;
  if (rs->body) {
    memcpy(rs->body, page, page_len + 1);
    rs->len = page_len;
  } else {
    rs->status = 503;
  }
  pthread_mutex_unlock(&mmu);
  rs->type = "text/plain; version=0.0.4";
}

/* The throughput endpoint: POST /v1/jobs/JOB/throughput with one line of
 * the throughput protocol. */
static void reply(struct pfi_http_resp *rs, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reply(struct pfi_http_resp *rs, int status, const char *fmt, ...) {
  struct pfi_buf b = {0};
  va_list ap;
  va_start(ap, fmt);
  char tmp[PFI_ERROR_MSG_MAX + 400];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  pfi_buf_printf(&b, "%s", tmp);
  rs->status = b.oom ? 500 : status;
  rs->type = "application/json";
  rs->body = b.s;
  rs->len = b.len;
}

/* A message as a JSON string's contents (quotes, backslashes, controls). */
static void json_text(char *out, size_t n, const char *in) {
  size_t k = 0;
  for (; *in && k + 7 < n; in++) {
    unsigned char c = (unsigned char)*in;
    if (c == '"' || c == '\\')
      k += (size_t)snprintf(out + k, n - k, "\\%c", c);
    else if (c < 0x20)
      k += (size_t)snprintf(out + k, n - k, "\\u%04x", c);
    else
      out[k++] = (char)c;
  }
  out[k] = 0;
}

static void serve_tput(void *arg, const struct pfi_http_req *rq,
                       struct pfi_http_resp *rs) {
  static const char pre[] = "/v1/jobs/", suf[] = "/throughput";
  const char *p = rq->path;
  size_t lp = strlen(p);
  char job[PFI_FLEET_NAME_MAX + 1];
  if (strncmp(p, pre, sizeof pre - 1) != 0 || lp < sizeof pre + sizeof suf - 1 ||
      strcmp(p + lp - (sizeof suf - 1), suf) != 0 ||
      lp - (sizeof pre - 1) - (sizeof suf - 1) >= sizeof job) {
    reply(rs, 404, "{\"error\":\"not found: POST /v1/jobs/JOB/throughput\"}\n");
    return;
  }
  size_t lj = lp - (sizeof pre - 1) - (sizeof suf - 1);
  memcpy(job, p + sizeof pre - 1, lj);
  job[lj] = 0;
  if (strcmp(rq->method, "POST") != 0) {
    reply(rs, 405, "{\"error\":\"method not allowed (POST)\"}\n");
    return;
  }
  struct pfi_error err;
  char msg[PFI_ERROR_MSG_MAX + 300], esc[2 * sizeof msg];
  double rate = -1;
  int r =
      pfi_agent_post_throughput(arg, job, rq->body, rq->body_len, rq->peer_pid,
                                rq->peer_uid, mono_now(), &rate, &err);
  if (r < 0) {
    json_text(esc, sizeof esc, pfi_error_format(&err, msg, sizeof msg));
    reply(rs,
          r == PFI_ENOTFOUND ? 404
          : r == PFI_ENOPERM ? 403
          : r == PFI_EBUSY   ? 429
                             : 400,
          "{\"error\":\"%s\"}\n", esc);
    return;
  }
  if (r == 1)
    reply(rs, 200, "{\"job\":\"%s\",\"tokens_per_s\":%.17g}\n", job, rate);
  else
    reply(rs, 200, "{\"job\":\"%s\",\"tokens_per_s\":null}\n", job);
}

/* The TLS of an endpoint the node's jobs use (--cap-listen,
 * --tput-listen): none on loopback or a Unix socket, where the trainers
 * on the node speak plain HTTP (python/pfi_trainer) and nothing crosses
 * the network; --tls-cert's elsewhere. */
static const struct pfi_http_tls *job_tls(const char *listen) {
  static struct pfi_http_tls plain;
  return pfi_http_listen_local(listen) ? &plain : &tls;
}

/* How an endpoint is served, for its start-up line. */
static const char *served(const struct pfi_http *h, const char *listen) {
  switch (pfi_http_tls_mode(h)) {
  case 2:
    return "HTTPS, client certificates required";
  case 1:
    return "HTTPS";
  default:
    return pfi_http_listen_local(listen)
               ? "plain HTTP (loopback or Unix socket)"
               : "plain HTTP on a non-loopback address (--insecure)";
  }
}

int main(int argc, char **argv) {
  char user[PFI_FLEET_NAME_MAX + 8], params[300];
  struct pfi_optparse op;
  if (gethostname(node, sizeof node) != 0)
    node[0] = 0;
  node[sizeof node - 1] = 0;
  node[strcspn(node, ".")] = 0;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  hl.per_client = (unsigned)per_client;
  if (!pfi_fleet_name_ok(node)) {
    fprintf(stderr,
            "pfi-agent: node name '%s': expected 1..63 letters, digits, _ "
            "or - (--node)\n",
            node);
    return 2;
  }
  if (emulate) {
    ao.backend = "emu";
    snprintf(params, sizeof params, "realtime=1%s%s", ao.params ? "," : "",
             ao.params ? ao.params : "");
    ao.params = params;
  }
  if (ao.emu_job && strcmp(ao.backend, "emu") != 0) {
    fprintf(stderr, "pfi-agent: --emu-job needs --emulate\n");
    return 2;
  }
  if (!no.user) {
    snprintf(user, sizeof user, "agent-%s", node);
    no.user = no.password_file ? user : NULL;
  }
  no.name = node;
  ao.node = node;
  no.timeout_s = 2;
  /* How it speaks to NATS, said at start-up (plain text to a server off
   * loopback refused unless asked). */
  char sec[512];
  struct pfi_error serr;
  if (pfi_nats_describe(&no, sec, sizeof sec, &serr) < 0)
    return pfi_opt_usage(&help, "%s", serr.msg);
  /* The hold and restore clock, the signals and the endpoints run whatever
   * NATS does: the connection comes in the background. */
  no.background = 1;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  struct pfi_error err;
  char msg[PFI_ERROR_MSG_MAX + 300];
  struct pfi_agent *ag = NULL;
  struct pfi_nats *nc = NULL;
  struct pfi_nats_sub *sub = NULL;
  struct pfi_http *http = NULL, *cap_http = NULL, *thttp = NULL;
  struct pfi_node_meter *nm = NULL;
  /* The endpoints' TLS options (plain HTTP off loopback, a key others may
   * read, a file that is not PEM): a usage error, before anything opens. */
  const char *eps[3] = {metrics, cap_listen, tlisten};
  for (int i = 0; i < 3; i++)
    if (eps[i] &&
        pfi_http_tls_check(eps[i], i ? job_tls(eps[i]) : &tls, &err) < 0) {
      fprintf(stderr, "pfi-agent: %s\n",
              pfi_error_format(&err, msg, sizeof msg));
      return 2;
    }
  nmo.emulated = emulate;
  int rc = pfi_node_meter_open(&nm, &nmo, &err);
  if (rc < 0) {
    fprintf(stderr, "pfi-agent: %s\n", pfi_error_format(&err, msg, sizeof msg));
    return rc == PFI_EINVAL || rc == PFI_ENOTFOUND ? 2 : 1;
  }
  rc = pfi_agent_open(&ag, &ao, wall_now(), &err);
  if (rc < 0) {
    fprintf(stderr, "pfi-agent: %s\n", pfi_error_format(&err, msg, sizeof msg));
    pfi_node_meter_close(nm);
    return rc == PFI_EINVAL || rc == PFI_EPARSE ? 2 : 1;
  }
  struct pfi_agent_stats st;
  pfi_agent_stats(ag, &st);
  logf_("started: %s, sequence %llu, node power %s",
        pfi_agent_mode_name(st.mode), (unsigned long long)st.seq,
        nm && pfi_node_meter_source(nm)[0] ? pfi_node_meter_source(nm)
                                           : "not measured");
  logf_("NATS %s: %s", no.url ? no.url : "nats://127.0.0.1:4222", sec);
  if ((rc = pfi_nats_open(&nc, &no, &err)) < 0 ||
      (rc = pfi_nats_subscribe_assign(nc, node, &sub, &err)) < 0 ||
      (metrics && (rc = pfi_http_start_tls(&http, metrics, &hl, &tls, serve,
                                           NULL, &err)) < 0) ||
      (cap_listen &&
       (rc = pfi_http_start_tls(&cap_http, cap_listen, &hl,
                                job_tls(cap_listen), serve,
                                (void *)cap_listen, &err)) < 0) ||
      (tlisten &&
       (rc = pfi_http_start_tls(&thttp, tlisten, &hl, job_tls(tlisten),
                                serve_tput, ag, &err)) < 0))
    goto out;
  if (!pfi_nats_connected(nc))
    logf_("NATS %s not reachable yet: connecting in the background",
          no.url ? no.url : "nats://127.0.0.1:4222");
  if (cap_http)
    logf_("cap status on %s (port %u, GET /v1/cap), %s", cap_listen,
          pfi_http_port(cap_http), served(cap_http, cap_listen));
  if (thttp)
    logf_("throughput endpoint on %s, %s", tlisten, served(thttp, tlisten));
  if (http)
    logf_("metrics on %s (port %u), %s", metrics, pfi_http_port(http),
          served(http, metrics));
  char tsubj[PFI_FLEET_NAME_MAX + 32];
  snprintf(tsubj, sizeof tsubj, "pfi.telemetry.%s", node);
  char *buf = malloc(PFI_FLEET_MSG_MAX + 1);
  char *cbuf = malloc(PFI_FLEET_MSG_MAX + 1);
  struct pfi_fleet_telemetry *t = malloc(sizeof *t);
  if (!buf || !t || !cbuf) {
    rc = pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    free(buf);
    free(cbuf);
    free(t);
    goto out;
  }
  int cap_failing = 0;
  enum pfi_agent_mode last_mode = st.mode;
  int last_cr = 0;
  unsigned last_stale = 0;
  int pub_failing = 0;
  double next = mono_now();
  while (!stop) {
    double left;
    while (!stop && (left = next - mono_now()) > 0) {
      char *d = NULL;
      size_t len = 0;
      int r = pfi_nats_next(sub, left, &d, &len, NULL, 0, &err);
      if (r == 1) {
        r = pfi_agent_handle(ag, d, len, wall_now(), mono_now(), &err);
        if (r < 0)
          logf_("assignment rejected: %s",
                pfi_error_format(&err, msg, sizeof msg));
        else if (r == 0)
          logf_("assignment ignored (old or replayed)");
        free(d);
      } else if (r < 0) {
        usleep(100000);
      }
    }
    next += period;
    if (next < mono_now())
      next = mono_now() + period;
    if ((rc = pfi_agent_tick(ag, wall_now(), mono_now(), t, &err)) < 0)
      logf_("%s", pfi_error_format(&err, msg, sizeof msg));
    unsigned steps = st.clock_steps;
    pfi_agent_stats(ag, &st);
    if (st.clock_steps != steps)
      logf_("the wall clock stepped %+.3f s: the hold and the lease run on "
            "the monotonic clock (%.0f s left of the event)",
            st.clock_step_s, pfi_agent_event_left(ag, mono_now()));
    if (st.cannot_record != last_cr) {
      if (st.cannot_record && pfi_agent_record_error(ag, &err))
        logf_("cannot write the record %s (%s): cuts only, the limits "
              "before the event kept in memory, written again when it can",
              ao.record, pfi_error_format(&err, msg, sizeof msg));
      else if (!st.cannot_record)
        logf_("the record %s is written again", ao.record);
      last_cr = st.cannot_record;
    }
    if (st.tput_stale_jobs != last_stale && st.tput_stale_jobs)
      logf_("%u job(s) with a throughput file whose newest line is older "
            "than %g s (--tput-max-age): reported with no throughput",
            st.tput_stale_jobs, ao.tput_max_age_s);
    else if (st.tput_stale_jobs != last_stale)
      logf_("no job's throughput file is stale now");
    last_stale = st.tput_stale_jobs;
    if (st.mode != last_mode)
      logf_("%s -> %s", pfi_agent_mode_name(last_mode),
            pfi_agent_mode_name(st.mode));
    last_mode = st.mode;
    pfi_node_meter_fill(nm, t, mono_now());
    if (pfi_node_meter_error(nm, &err))
      logf_("node power: %s", pfi_error_format(&err, msg, sizeof msg));
    rc = pfi_fleet_telemetry_encode(t, buf, PFI_FLEET_MSG_MAX + 1, &err);
    if (rc > 0 && pfi_nats_publish(nc, tsubj, buf, (size_t)rc, &err) < 0) {
      if (!pub_failing)
        logf_("telemetry not sent: %s",
              pfi_error_format(&err, msg, sizeof msg));
      pub_failing = 1;
    } else if (rc > 0) {
      pub_failing = 0;
    }
    if (cap_file || http || cap_http) {
      int k = pfi_agent_cap_json(ag, t, cbuf, PFI_FLEET_MSG_MAX + 1, &err);
      int w = k > 0 && cap_file
                  ? pfi_agent_cap_write(cap_file, cbuf, (size_t)k, &err)
                  : 0;
      if ((k < 0 || w < 0) && !cap_failing)
        logf_("cap status not written: %s",
              pfi_error_format(&err, msg, sizeof msg));
      cap_failing = k < 0 || w < 0;
      char *c = k > 0 ? strdup(cbuf) : NULL;
      if (c) {
        pthread_mutex_lock(&mmu);
        free(cap_page);
        cap_page = c;
        cap_len = (size_t)k;
        pthread_mutex_unlock(&mmu);
      }
    }
    if (http) {
      struct pfi_buf b = {0};
      pfi_fleet_metrics_agent(&b, t, &st);
      pthread_mutex_lock(&mmu);
      if (!b.oom) {
        free(page);
        page = b.s;
        page_len = b.len;
        b.s = NULL;
      }
      pthread_mutex_unlock(&mmu);
      pfi_buf_release(&b);
    }
  }
  free(buf);
  free(cbuf);
  free(t);
  rc = 0;
out:
  if (rc < 0)
    fprintf(stderr, "pfi-agent: %s\n", pfi_error_format(&err, msg, sizeof msg));
  pfi_agent_stats(ag, &st);
  if (restore_on_exit || !(pfi_agent_event_left(ag, mono_now()) > 0)) {
    /* Outside an event nothing of ours may stay on the GPUs. During one the
     * caps stay for the event (the grid was promised them): the record
     * keeps them, the next start resumes, and restores at the end. */
    if (st.mode != PFI_AGENT_IDLE && pfi_agent_restore(ag, &err) < 0)
      fprintf(stderr, "pfi-agent: restore: %s\n",
              pfi_error_format(&err, msg, sizeof msg));
  } else {
    logf_("exiting during event: caps held as recorded in %s", ao.record);
  }
  if (cap_file) {
    /* The job's file says what stays on the GPUs after the agent. */
    struct pfi_fleet_telemetry *ft = malloc(sizeof *ft);
    char *fb = malloc(PFI_FLEET_MSG_MAX + 1);
    int k = ft && fb && pfi_agent_tick(ag, wall_now(), mono_now(), ft, NULL) >= 0
                ? pfi_agent_cap_json(ag, ft, fb, PFI_FLEET_MSG_MAX + 1, &err)
                : -1;
    if (k <= 0 || pfi_agent_cap_write(cap_file, fb, (size_t)k, &err) < 0)
      logf_("cap status not written at exit");
    free(ft);
    free(fb);
  }
  pfi_http_stop(http);
  pfi_http_stop(cap_http);
  pfi_http_stop(thttp); /* before the agent it posts to */
  pfi_nats_unsubscribe(sub);
  pfi_nats_close(nc);
  pfi_agent_close(ag);
  pfi_node_meter_close(nm);
  free(page);
  free(cap_page);
  return rc < 0 ? 1 : 0;
}
