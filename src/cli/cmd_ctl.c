/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi ctl`: a client of pfid's HTTP API. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cli.h"
#include "opt.h"
#include "pfi/apitoken.h"
#include "pfi/duration.h"
#include "pfi/fleet.h"
#include "pfi/http.h"
#include "pfi/pfid.h"
#include "pfi/restab.h"
#include "pfi/timeline.h"
#include "pfi/transport.h"
#include "../base/curl_dl.h"

/* The options, bound to these (src/base/opt.h). */
static const char *url, *tokf;
static int fmt; /* enum pfi_format */
static struct pfi_http_client_tls tls; /* --cacert, --cert, --key, --insecure */

static const struct pfi_opt opts[] = {
    {.lng = "url", .arg = PFI_ARG_REQ, .argname = "URL",
     .help = "pfid's API", .type = PFI_OT_STRING, .var = &url,
     .def = "http://127.0.0.1:8470"},
    PFI_OPT_STRING("token-file", 0, &tokf, "FILE",
                   "bearer token, needed for submit and cancel and sent with every "
                   "request when given (pfid --tokens) (mode 0600; default "
                   "$PFI_TOKEN_FILE)"),
    PFI_OPT_STRING("cacert", 0, &tls.cacert, "FILE",
                   "with an https --url, the PEM CA that pfid's certificate "
                   "must chain to (default: the system's CAs); the server "
                   "is always verified unless --insecure"),
    PFI_OPT_STRING("cert", 0, &tls.cert, "FILE",
                   "this client's PEM certificate, for a pfid that asks for "
                   "one (--tls-client-ca), with --key"),
    PFI_OPT_STRING("key", 0, &tls.key, "FILE",
                   "the client certificate's PEM private key (mode 0600)"),
    PFI_OPT_FLAG("insecure", 0, &tls.insecure,
                 "allow plain http to a host that is not loopback, and an "
                 "https server without verifying its certificate"),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "FMT",
     .help = "table (the answer's fields and lists as tables), json (pfid's "
             "answer as it is) or csv (a list's rows; an object's fields as "
             "field,value rows, nested ones as a.b)",
     .type = PFI_OT_CHOICE, .var = &fmt, .words = pfi_opt_formats,
     .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "ctl",
    "usage: pfi ctl [--url URL] [--token-file FILE] [--format FMT] COMMAND "
    "[ARGS]\n"
    "       pfi ctl audit [--since WHEN] [--who NAME] [--limit N]\n",
    "Talks to pfid's HTTP API (docs/fleet.md) and prints its answer as\n"
    "tables (--format json: the JSON answer as it is).\n"
    "\n"
    "Commands:\n"
    "  status                     leader, nodes, stale nodes, event, power;\n"
    "                             state: event, recovering, holding (the\n"
    "                             recovery waits, and why) or idle\n"
    "  nodes | jobs | events | tiers\n"
    "                             the lists pfid holds\n"
    "  capacity                   what the fleet could shed now, by loss\n"
    "                             and duration, with intervals\n"
    "  records [SINCE]            assignment records after row SINCE\n"
    "  submit ID START END WATTS [LEVEL]\n"
    "                             a grid event: the fleet's power at most\n"
    "                             WATTS from START to END, each a Unix time\n"
    "                             or +S (seconds from now), at LEVEL: gpu\n"
    "                             (default), node or meter (pfid\n"
    "                             --meter-config converts it each period)\n"
    "  cancel ID                  ends event ID now (recovery follows)\n"
    "  tier JOB TIER|LOSS         sets a job's tier: a named one (flex25) or\n"
    "                             its largest loss, a fraction 0..1\n"
    "  untier JOB                 removes the tier set for JOB\n"
    "  audit [--since WHEN] [--who NAME] [--limit N]\n"
    "                             the audit trail: each mutation (event,\n"
    "                             cancel, tier) with who, from where, when\n"
    "                             and pfid's answer (an admin token; 'pfi\n"
    "                             ctl audit --help')\n",
    opts,
    "Exit status: 0 answered 2xx, 1 pfid unreachable or refused (the HTTP\n"
    "status and pfid's message are printed), 2 bad usage (and a submit pfid\n"
    "refuses as bad input, HTTP 400: a node or meter level without\n"
    "--meter-config).\n",
    PFI_OPT_IN_ORDER,
    NULL,
    NULL,
    0,
    PFI_ARGS_ANY,
    NULL};

/* `pfi ctl audit`'s options. */
static double audit_after = NAN; /* Unix time; NaN: any */
static const char *audit_who;
static int audit_limit;

/* --since: a duration before now ("90s", "15m", "2h"), an RFC 3339
 * date-time or date, or "@T", a Unix time. */
static int set_since(const struct pfi_opt *o, const char *v, char *why,
                     size_t n) {
  (void)o;
  struct pfi_error e;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  if (v[0] == '@') {
    char *end;
    double t = strtod(v + 1, &end);
    if (!v[1] || *end || !(t >= 0 && t <= 1e11)) {
      snprintf(why, n, "'%s': expected @ and a Unix time, seconds", v);
      return -1;
    }
    audit_after = t;
  } else if (strlen(v) >= 5 && isdigit((unsigned char)v[0]) && v[4] == '-') {
    int64_t t;
    if (pfi_time_parse_rfc3339(v, &t, &e) < 0) {
      snprintf(why, n, "%s", e.msg);
      return -1;
    }
    audit_after = (double)t;
  } else {
    double d;
    if (pfi_parse_duration(v, PFI_DUR_ANY, &d, &e) < 0 || !(d <= 1e10)) {
      snprintf(why, n,
               "'%s': expected a duration before now (90s, 15m, 2h), a "
               "date-time (2025-05-04T16:10:00Z) or @UNIX_TIME",
               v);
      return -1;
    }
    audit_after = (double)tv.tv_sec + tv.tv_usec / 1e6 - d;
  }
  return 0;
}

static const struct pfi_opt audit_opts[] = {
    PFI_OPT_CALLBACK("since", NULL, set_since, "WHEN",
                     "mutations after WHEN: a duration before now (90s, 15m, "
                     "2h), a date-time (2025-05-04T16:10:00Z, or a date) or "
                     "@UNIX_TIME (default: any time)"),
    PFI_OPT_STRING("who", 0, &audit_who, "NAME",
                   "those of the token named NAME (pfid --tokens; "
                   "token-file for --token-file's)"),
    {.lng = "limit", .arg = PFI_ARG_REQ, .argname = "N",
     .help = "the newest N of them", .type = PFI_OT_INT, .var = &audit_limit,
     .lo = 1, .hi = 10000, .def = "1000"},
    /* No default: pfi ctl's --format stands unless this is given. */
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "FMT",
     .help = "table, csv (a row a mutation) or json (pfid's answer as it "
             "is); default pfi ctl's --format, table",
     .type = PFI_OT_CHOICE, .var = &fmt, .words = pfi_opt_formats},
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help audit_help = {
    .cmd = "ctl audit",
    .usage = "usage: pfi ctl [--url URL] [--token-file FILE] audit [--since "
             "WHEN] [--who NAME]\n"
             "                [--limit N] [--format FMT]\n",
    .about = "Prints pfid's audit trail, the mutations of its API "
             "(docs/security.md \"Audit\"): each event submitted or "
             "cancelled and each tier set or removed by a known token, "
             "refused ones included, oldest first, with its row id, time "
             "(UTC), the pfid that answered, who (the token's name) and its "
             "role, from where (address, port and, on this host, the user), "
             "the method and path, the "
             "HTTP status, pfid's error and the body's first bytes. Reading "
             "it needs an admin token (--token-file).",
    .opts = audit_opts,
    .footer = "Exit status: 0 answered, 1 pfid unreachable or refused (a\n"
              "token without the admin role: HTTP 403), 2 bad usage.\n",
    .flags = PFI_OPT_WRAP_ABOUT,
    .args_min = 0,
    .args_max = 0};

/* pfid's audit answer `body` as a table or CSV. Returns 0 or 1. */
static int print_audit(const char *body, enum pfi_format f) {
  struct pfi_restab t;
  struct pfi_error err;
  int rc = pfi_pfid_audit_table(body, strlen(body), &t, &err);
  if (rc < 0) {
    fprintf(stderr, "pfi ctl audit: %s\n", err.msg);
    return 1;
  }
  if (f == PFI_FMT_TABLE && audit_limit > 0 && t.nrows == (size_t)audit_limit)
    pfi_restab_note(&t, "The newest %d; --limit for more.", audit_limit);
  rc = pfi_cli_print_table(&t, f);
  pfi_restab_release(&t);
  return rc;
}

struct body {
  char *s;
  size_t n;
};

static size_t on_data(char *p, size_t sz, size_t nm, void *arg) {
  struct body *b = arg;
  size_t k = sz * nm;
  if (b->n + k > (1u << 26))
    return 0;
  char *ns = realloc(b->s, b->n + k + 1);
  if (!ns)
    return 0;
  memcpy(ns + b->n, p, k);
  b->s = ns;
  b->n += k;
  b->s[b->n] = 0;
  return k;
}

static int when(const char *s, double now, double *t) {
  char *end;
  double v = strtod(s + (s[0] == '+'), &end);
  if (!*s || *end || !(v >= 0) || v > 1e11)
    return -1;
  *t = s[0] == '+' ? now + v : v;
  return 0;
}

/* pfid's answer `body` in `fmt`: as it is for JSON (and for an answer
 * that is not JSON), else as tables. Returns 0 or 1. */
static int print_answer(const char *body, enum pfi_format fmt) {
  if (fmt == PFI_FMT_JSON) {
    fputs(body, stdout);
    return 0;
  }
  int rc = pfi_restab_print_doc(
      body, fmt == PFI_FMT_CSV ? PFI_RESTAB_CSV : PFI_RESTAB_TERM, stdout,
      pfi_cli_wide ? 0 : pfi_restab_term_width(stdout));
  if (rc == PFI_EPARSE) {
    fputs(body, stdout);
    return 0;
  }
  if (rc == PFI_ENOMEM)
    pfi_cli_err("out of memory");
  return rc != 0;
}

int cmd_ctl(int argc, char **argv) {
  tokf = getenv("PFI_TOKEN_FILE");
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  if (optind >= argc) {
    fprintf(stderr, "pfi ctl: a command is needed\n");
    pfi_opt_print_help(&help, stderr);
    return 2;
  }
  const char *cmd = argv[optind], *method = "GET";
  int nargs = argc - optind - 1;
  char path[256], data[1024] = "";
  struct timeval tv;
  gettimeofday(&tv, NULL);
  double now = (double)tv.tv_sec + tv.tv_usec / 1e6;
  if (!strcmp(cmd, "status") || !strcmp(cmd, "nodes") || !strcmp(cmd, "jobs") ||
      !strcmp(cmd, "events") || !strcmp(cmd, "tiers") ||
      !strcmp(cmd, "capacity")) {
    if (nargs) {
      fprintf(stderr, "pfi ctl %s: takes no arguments\n", cmd);
      return 2;
    }
    snprintf(path, sizeof path, "/v1/%s", cmd);
  } else if (!strcmp(cmd, "records") && nargs <= 1) {
    long since = 0;
    char *end = NULL;
    if (nargs && ((since = strtol(argv[optind + 1], &end, 10)) < 0 || *end)) {
      fprintf(stderr, "pfi ctl records: SINCE '%s': expected a row number\n",
              argv[optind + 1]);
      return 2;
    }
    snprintf(path, sizeof path, "/v1/records?since=%ld", since);
  } else if (!strcmp(cmd, "submit") && (nargs == 4 || nargs == 5)) {
    struct pfi_fleet_event e;
    struct pfi_error err;
    memset(&e, 0, sizeof e);
    char *end;
    const char *id = argv[optind + 1];
    if (!pfi_fleet_name_ok(id)) {
      fprintf(stderr,
              "pfi ctl submit: event id '%s': expected 1..63 letters, "
              "digits, _ or -\n",
              id);
      return 2;
    }
    snprintf(e.id, sizeof e.id, "%s", id);
    e.target_w = strtod(argv[optind + 4], &end);
    if (when(argv[optind + 2], now, &e.start_s) < 0 ||
        when(argv[optind + 3], now, &e.end_s) < 0 || *end ||
        !(e.target_w > 0) || e.target_w > 1e12 || !(e.end_s > e.start_s)) {
      fprintf(stderr,
              "pfi ctl submit: expected START < END (Unix times or +S) and "
              "WATTS > 0\n");
      return 2;
    }
    if (nargs == 5 &&
        (e.level = pfi_fleet_level_by_name(argv[optind + 5])) < 0) {
      fprintf(stderr,
              "pfi ctl submit: LEVEL '%s': expected gpu, node or meter\n",
              argv[optind + 5]);
      return 2;
    }
    if (pfi_fleet_event_encode(&e, data, sizeof data, &err) < 0) {
      fprintf(stderr, "pfi ctl submit: %s\n", err.msg);
      return 2;
    }
    method = "POST";
    snprintf(path, sizeof path, "/v1/events");
  } else if ((!strcmp(cmd, "tier") && nargs == 2) ||
             (!strcmp(cmd, "untier") && nargs == 1)) {
    const char *job = argv[optind + 1];
    if (!pfi_fleet_name_ok(job)) {
      fprintf(stderr,
              "pfi ctl %s: job '%s': expected 1..63 letters, digits, _ or -\n",
              cmd, job);
      return 2;
    }
    snprintf(path, sizeof path, "/v1/tiers/%s", job);
    if (nargs == 1) {
      method = "DELETE";
    } else {
      const char *t = argv[optind + 2];
      char *end;
      double loss = strtod(t, &end);
      method = "PUT";
      if (end != t && !*end) {
        if (!(loss >= 0 && loss <= 1)) {
          fprintf(stderr,
                  "pfi ctl tier: LOSS %s: expected a fraction 0..1 (0.25 "
                  "for 25 %%)\n",
                  t);
          return 2;
        }
        snprintf(data, sizeof data, "{\"max_loss\":%.17g}", loss);
      } else if (pfi_fleet_name_ok(t)) {
        snprintf(data, sizeof data, "{\"tier\":\"%s\"}", t);
      } else {
        fprintf(stderr,
                "pfi ctl tier: '%s': expected a tier name (flex25) or a "
                "fraction 0..1\n",
                t);
        return 2;
      }
    }
  } else if (!strcmp(cmd, "audit")) {
    struct pfi_optparse aop;
    int ast = pfi_opt_parse(&aop, &audit_help, argc - optind, argv + optind);
    if (ast != PFI_OPT_GO)
      return ast;
    if (audit_who) {
      size_t n = strlen(audit_who), ok = n > 0 && n < PFI_API_TOKEN_NAME_MAX;
      for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)audit_who[i]) ||
             strchr("_-.", audit_who[i]);
      if (!ok)
        return pfi_opt_usage(&audit_help,
                             "--who: '%s': expected a token's name, 1..63 "
                             "letters, digits, _, - or .",
                             audit_who);
    }
    int k = snprintf(path, sizeof path, "/v1/records?table=audit&limit=%d",
                     audit_limit);
    if (!isnan(audit_after))
      k += snprintf(path + k, sizeof path - (size_t)k, "&after=%.6f",
                    audit_after);
    if (audit_who)
      snprintf(path + k, sizeof path - (size_t)k, "&who=%s", audit_who);
  } else if (!strcmp(cmd, "cancel") && nargs == 1 &&
             pfi_fleet_name_ok(argv[optind + 1])) {
    method = "DELETE";
    snprintf(path, sizeof path, "/v1/events/%s", argv[optind + 1]);
  } else {
    fprintf(stderr, "pfi ctl: bad command or arguments: %s\n", cmd);
    pfi_opt_print_help(&help, stderr);
    return 2;
  }
  char auth[300] = "";
  int audit = !strcmp(cmd, "audit");
  if (strcmp(method, "GET") != 0 || tokf || audit) {
    char tok[256];
    struct pfi_error err;
    if (!tokf) {
      fprintf(stderr, "pfi ctl %s: needs --token-file (or PFI_TOKEN_FILE)%s\n",
              cmd, audit ? ", an admin token" : "");
      return 2;
    }
    if (pfi_read_secret(tokf, tok, sizeof tok, &err) < 0) {
      fprintf(stderr, "pfi ctl: %s\n", err.msg);
      return 2;
    }
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
    memset(tok, 0, sizeof tok);
  }
  char full[1024];
  snprintf(full, sizeof full, "%s%s", url, path);
  struct pfi__curl_tls ct;
  struct pfi_error terr;
  if (pfi__curl_tls_load(&ct, url, &tls, &terr) < 0) {
    fprintf(stderr, "pfi ctl: %s\n", terr.msg);
    return 2;
  }
  CURL *h = pfi__curl_easy_init();
  struct curl_slist *hdr = NULL;
  struct body b = {NULL, 0};
  long code = 0;
  if (!h) {
    fprintf(stderr, "pfi ctl: %s\n",
            pfi__curl_error() ? pfi__curl_error() : "cannot start libcurl");
    pfi__curl_tls_release(&ct);
    return 1;
  }
  pfi__curl_tls_apply(h, &ct);
  if (auth[0])
    hdr = pfi__curl_slist_append(hdr, auth);
  hdr = pfi__curl_slist_append(hdr, "Content-Type: application/json");
  pfi__curl_setopt_ptr(h, CURLOPT_URL, full);
  pfi__curl_setopt_ptr(h, CURLOPT_CUSTOMREQUEST, method);
  pfi__curl_setopt_ptr(h, CURLOPT_HTTPHEADER, hdr);
  pfi__curl_setopt_long(h, CURLOPT_TIMEOUT, 10L);
  pfi__curl_setopt_write(h, CURLOPT_WRITEFUNCTION, on_data);
  pfi__curl_setopt_ptr(h, CURLOPT_WRITEDATA, &b);
  pfi__curl_setopt_ptr(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (data[0])
    pfi__curl_setopt_ptr(h, CURLOPT_POSTFIELDS, data);
  CURLcode cr = pfi__curl_easy_perform(h);
  pfi__curl_getinfo_long(h, CURLINFO_RESPONSE_CODE, &code);
  memset(auth, 0, sizeof auth);
  pfi__curl_slist_free_all(hdr);
  pfi__curl_easy_cleanup(h);
  pfi__curl_tls_release(&ct);
  int rc = 0;
  if (cr != CURLE_OK) {
    fprintf(stderr, "pfi ctl: %s: %s\n", full, pfi__curl_easy_strerror(cr));
    rc = 1;
  } else if (code < 200 || code > 299) {
    fprintf(stderr, "pfi ctl: %s: HTTP %ld: %s", full, code, b.s ? b.s : "\n");
    rc = code == 400 && !strcmp(cmd, "submit") ? 2 : 1;
  } else if (b.s) {
    rc = audit && fmt != PFI_FMT_JSON ? print_audit(b.s, fmt)
                                      : print_answer(b.s, fmt);
  }
  free(b.s);
  return rc;
}
