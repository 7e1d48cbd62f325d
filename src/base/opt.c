/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Option tables: getopt_long(), the bound variables and --help from one
 * table (see opt.h). */
#include "opt.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/duration.h"
#include "pfi/version.h"
#include "pfi/version.h"

/* The exit statuses every program uses (README.md): 0 ok, 1 failure at
 * run time, 2 bad usage or bad input. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

const struct pfi_opt_word pfi_opt_formats[] = {
    {"table", 0}, {"csv", 1}, {"json", 2}, {NULL, 0}};
const struct pfi_opt_word pfi_opt_formats_tc[] = {
    {"table", 0}, {"csv", 1}, {NULL, 0}};
const struct pfi_opt_word pfi_opt_formats_tj[] = {
    {"table", 0}, {"json", 2}, {NULL, 0}};
const struct pfi_opt_word pfi_opt_formats_cj[] = {
    {"csv", 1}, {"json", 2}, {NULL, 0}};

static const char *cur_cmd;

void pfi_opt_set_cmd(const char *cmd) { cur_cmd = cmd; }

const char *pfi_opt_cmd(void) { return cur_cmd; }

/* getopt's value for --version of a program of its own (PFI_OPT_PROGRAM):
 * above any option's character or enum value. */
#define OPT_VERSION 0x7f00

/* A usage error: pfi_cli_usage()'s, or for a program of its own
 * (PFI_OPT_PROGRAM) the same words under its name. */
static void usage_err(const struct pfi_cmd_help *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void usage_err(const struct pfi_cmd_help *h, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (h->flags & PFI_OPT_PROGRAM)
    fprintf(stderr, "%s: %s\nTry '%s --help'.\n", h->cmd, msg, h->cmd);
  else
    fprintf(stderr, "pfi %s: %s\nTry 'pfi %s --help'.\n", h->cmd, msg,
            h->cmd);
}

int pfi_opt_usage(const struct pfi_cmd_help *h, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  usage_err(h, "%s", msg);
  return EXIT_USAGE;
}

/* The help's layout: options indented by 2, their help at column
 * OPT_COL at most, lines of at most HELP_WIDTH characters. */
#define HELP_WIDTH 79
#define OPT_COL 24

static void opt_start(struct pfi_optparse *p, const struct pfi_cmd_help *help,
                      int argc, char **argv) {
  memset(p, 0, sizeof *p);
  p->h = help;
  p->argc = argc;
  p->argv = argv;
  if (!(help->flags & PFI_OPT_PROGRAM))
    pfi_opt_set_cmd(help->cmd);
  size_t n = 0, s = 0;
  if (help->flags & PFI_OPT_IN_ORDER)
    p->so[s++] = '+';
  /* A leading ':' makes a missing value ':' rather than '?'. */
  p->so[s++] = ':';
  for (const struct pfi_opt *o = help->opts; o && (o->lng || o->help); o++) {
    if (!o->lng)
      continue;
    if (n < PFI_OPT_MAX) {
      p->lo[n].name = o->lng;
      p->lo[n].has_arg = o->arg == PFI_ARG_REQ   ? required_argument
                         : o->arg == PFI_ARG_OPT ? optional_argument
                                                 : no_argument;
      p->lo[n].flag = NULL;
      p->lo[n].val = 0; /* pfi_opt_parse() numbers the rows */
      n++;
    }
    if (o->shrt && s + 3 < sizeof p->so) {
      p->so[s++] = o->shrt;
      if (o->arg == PFI_ARG_REQ)
        p->so[s++] = ':';
      else if (o->arg == PFI_ARG_OPT) {
        p->so[s++] = ':';
        p->so[s++] = ':';
      }
    }
  }
  p->so[s] = '\0';
  if ((help->flags & PFI_OPT_PROGRAM) && n < PFI_OPT_MAX) {
    p->lo[n].name = "version";
    p->lo[n].has_arg = no_argument;
    p->lo[n].flag = NULL;
    p->lo[n].val = OPT_VERSION;
  }
  /* 0, not 1: glibc then starts afresh (a command that parsed an action's
   * options before, a new argv). */
  optind = 0;
  opterr = 0;
}

const char *pfi_opt_suggest(const struct pfi_opt *opts, const char *name) {
  const char *best = NULL;
  size_t bd = (size_t)-1, len = strlen(name);
  for (const struct pfi_opt *o = opts; o && (o->lng || o->help); o++) {
    if (!o->lng)
      continue;
    size_t d = pfi_edit_distance(name, o->lng);
    if (d < bd) {
      bd = d;
      best = o->lng;
    }
  }
  /* A few edits, and fewer than half the name: "--fromat" is --format,
   * "--x" is nothing. */
  if (!best || bd == 0 || bd > 3 || 2 * bd >= len + (len < 4))
    return NULL;
  return best;
}

/* Prints the problem with the long option in `arg` ("--name[=value]"). */
static void bad_long(struct pfi_optparse *p, const char *arg, int missing) {
  const struct pfi_cmd_help *cmd = p->h;
  const char *name = arg + 2;
  size_t nl = strcspn(name, "=");
  char buf[128];
  if (nl >= sizeof buf)
    nl = sizeof buf - 1;
  memcpy(buf, name, nl);
  buf[nl] = '\0';
  /* The option it names: exact, or the options it is a prefix of. */
  const struct pfi_opt *exact = NULL;
  char cands[512] = "";
  size_t ncand = 0;
  for (const struct pfi_opt *o = p->h->opts; o && (o->lng || o->help); o++) {
    if (!o->lng)
      continue;
    if (strcmp(o->lng, buf) == 0)
      exact = o;
    else if (nl > 0 && strncmp(o->lng, buf, nl) == 0) {
      size_t used = strlen(cands);
      snprintf(cands + used, sizeof cands - used, "%s--%s", ncand ? ", " : "",
               o->lng);
      ncand++;
    }
  }
  if (missing) {
    usage_err(cmd, "option '--%s' needs a value", exact ? exact->lng : buf);
    return;
  }
  if (exact && exact->arg == PFI_ARG_NONE && name[nl] == '=') {
    usage_err(cmd, "option '--%s' takes no value", exact->lng);
    return;
  }
  if (!exact && ncand > 1) {
    usage_err(cmd, "option '--%s' is ambiguous (%s)", buf, cands);
    return;
  }
  const char *s = pfi_opt_suggest(p->h->opts, buf);
  if (s)
    usage_err(cmd, "unknown option '--%s'; did you mean '--%s'?", buf, s);
  else
    usage_err(cmd, "unknown option '--%s'", buf);
}

static int opt_next(struct pfi_optparse *p) {
  int c = getopt_long(p->argc, p->argv, p->so, p->lo, NULL);
  if (c == OPT_VERSION) {
    printf("%s %s\n", p->h->cmd, PFI_VERSION_STRING);
    exit(fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL);
  }
  if (c != '?' && c != ':')
    return c;
  int missing = c == ':';
  const char *arg =
      optind >= 1 && optind <= p->argc ? p->argv[optind - 1] : NULL;
  if (arg && strncmp(arg, "--", 2) == 0 && arg[2]) {
    bad_long(p, arg, missing);
  } else if (missing) {
    usage_err(p->h, "option '-%c' needs a value", optopt);
  } else if (optopt) {
    usage_err(p->h, "unknown option '-%c'", optopt);
  } else {
    usage_err(p->h, "unknown option '%s'", arg ? arg : "?");
  }
  return '?';
}

/* ---- Bound options (pfi_opt_parse()) ---- */

/* getopt's value for row i of a bound table: above any character. */
#define ROW_VAL 0x10000

/* A row without bounds of its own: lo, hi and range all 0. */
static int no_range(const struct pfi_opt *o) {
  return o->lo == 0 && o->hi == 0 && o->range == 0;
}

/* The row's bounds, with a duration's kind's and a share's own. */
static void bounds_of(const struct pfi_opt *o, double *lo, double *hi,
                      unsigned *range) {
  *lo = o->lo;
  *hi = o->hi;
  *range = o->range;
  if (!no_range(o))
    return;
  if (o->type == PFI_OT_DURATION) {
    *lo = pfi_duration_min((enum pfi_duration_kind)o->ival);
    *hi = pfi_duration_max((enum pfi_duration_kind)o->ival);
    if (!isfinite(*hi))
      *range = PFI_RANGE_NO_HI;
  } else if (o->type == PFI_OT_SHARE) {
    *hi = 1;
  } else {
    *range = PFI_RANGE_ANY;
  }
}

static int in_range(const struct pfi_opt *o, double x) {
  double lo, hi;
  unsigned r;
  bounds_of(o, &lo, &hi, &r);
  if (!(r & PFI_RANGE_NO_LO) && !((r & PFI_RANGE_LO_OPEN) ? x > lo : x >= lo))
    return 0;
  if (!(r & PFI_RANGE_NO_HI) && !((r & PFI_RANGE_HI_OPEN) ? x < hi : x <= hi))
    return 0;
  return 1;
}

/* A bound as the help writes it: a number (%g), or a duration with its
 * largest whole unit ("10s", "15m", "24h", "0.25s"). */
static void bound_text(const struct pfi_opt *o, double x, char *buf,
                       size_t n) {
  if (o->type != PFI_OT_DURATION || x == 0) {
    snprintf(buf, n, "%g", x);
    return;
  }
  if (fmod(x, 3600) == 0)
    snprintf(buf, n, "%gh", x / 3600);
  else if (fmod(x, 60) == 0)
    snprintf(buf, n, "%gm", x / 60);
  else
    snprintf(buf, n, "%gs", x);
}

void pfi_opt_range_text(const struct pfi_opt *o, char *buf, size_t n) {
  double lo, hi;
  unsigned r;
  char a[32], b[32];
  buf[0] = '\0';
  if (o->type != PFI_OT_INT && o->type != PFI_OT_ULONG &&
      o->type != PFI_OT_SIZE && o->type != PFI_OT_NUMBER &&
      o->type != PFI_OT_SHARE && o->type != PFI_OT_DURATION)
    return;
  bounds_of(o, &lo, &hi, &r);
  bound_text(o, lo, a, sizeof a);
  bound_text(o, hi, b, sizeof b);
  if ((r & PFI_RANGE_ANY) == PFI_RANGE_ANY)
    return;
  /* Written with the value's name: "0.1 <= S <= 60", "0 < M < 0.5". */
  const char *x = o->argname ? o->argname : "x";
  const char *lt = (r & PFI_RANGE_LO_OPEN) ? "<" : "<=";
  const char *gt = (r & PFI_RANGE_HI_OPEN) ? "<" : "<=";
  if (r & PFI_RANGE_NO_HI)
    snprintf(buf, n, "%s %s %s", x, (r & PFI_RANGE_LO_OPEN) ? ">" : ">=", a);
  else if (r & PFI_RANGE_NO_LO)
    snprintf(buf, n, "%s %s %s", x, gt, b);
  else
    snprintf(buf, n, "%s %s %s %s %s", a, lt, x, gt, b);
}

/* "table, csv or json": a choice's words, for its message. */
static void words_text(const struct pfi_opt *o, char *buf, size_t n) {
  size_t k = 0, nw = 0;
  buf[0] = '\0';
  /* An empty word (an optional value left out) is not listed. */
  for (const struct pfi_opt_word *w = o->words; w && w->word; w++)
    nw += w->word[0] != '\0';
  size_t i = 0;
  for (const struct pfi_opt_word *w = o->words; w && w->word && k < n; w++) {
    if (!w->word[0])
      continue;
    const char *sep = i == 0 ? "" : i + 1 == nw ? " or " : ", ";
    i++;
    int m = snprintf(buf + k, n - k, "%s%s", sep, w->word);
    if (m < 0)
      break;
    k += (size_t)m;
  }
}

/* Parses a whole number; 0 or -1. */
static int whole(const char *v, int is_unsigned, double *x, long long *sl,
                 unsigned long long *ul) {
  char *end;
  errno = 0;
  if (!*v)
    return -1;
  if (is_unsigned && v[strspn(v, " \t")] != '-') {
    *ul = strtoull(v, &end, 10);
    *x = (double)*ul;
  } else {
    *sl = strtoll(v, &end, 10);
    *x = (double)*sl;
    if (is_unsigned && *sl < 0) {
      *ul = 0;
    }
  }
  return *end || errno ? -1 : 0;
}

/*
 * Stores `v`, the value of row o, in its variable. Returns 0, or -1 with
 * the reason in why.
 */
/* Set by store() when `why` names the value itself. */
static int why_named;

static int store(const struct pfi_opt *o, const char *v, char *why, size_t n) {
  double x = 0;
  why_named = o->type == PFI_OT_CALLBACK;
  char rt[96];
  switch (o->type) {
  case PFI_OT_FLAG:
    *(int *)o->var = 1;
    return 0;
  case PFI_OT_SET:
    *(int *)o->var = o->ival;
    return 0;
  case PFI_OT_COUNT:
    (*(int *)o->var)++;
    return 0;
  case PFI_OT_STRING:
    *(const char **)o->var = v;
    return 0;
  case PFI_OT_INT:
  case PFI_OT_ULONG:
  case PFI_OT_SIZE: {
    long long sl = 0;
    unsigned long long ul = 0;
    int uns = o->type != PFI_OT_INT;
    pfi_opt_range_text(o, rt, sizeof rt);
    if (whole(v, uns, &x, &sl, &ul) < 0) {
      snprintf(why, n, "expected a whole number%s%s", *rt ? ", " : "", rt);
      return -1;
    }
    if (!in_range(o, x) || (uns && v[strspn(v, " \t")] == '-') ||
        (o->type == PFI_OT_INT && (sl < -2147483647LL - 1 || sl > 2147483647LL)) ||
        (o->type == PFI_OT_ULONG && ul > (unsigned long)-1) ||
        (o->type == PFI_OT_SIZE && ul > (size_t)-1)) {
      snprintf(why, n, "expected %s",
               *rt ? rt
               : (uns && v[strspn(v, " \t")] == '-') ? "a whole number >= 0"
                                                     : "a smaller number");
      return -1;
    }
    if (o->type == PFI_OT_INT)
      *(int *)o->var = (int)sl;
    else if (o->type == PFI_OT_ULONG)
      *(unsigned long *)o->var = (unsigned long)ul;
    else
      *(size_t *)o->var = (size_t)ul;
    return 0;
  }
  case PFI_OT_NUMBER:
  case PFI_OT_SHARE: {
    char *end;
    pfi_opt_range_text(o, rt, sizeof rt);
    errno = 0;
    x = strtod(v, &end);
    if (o->type == PFI_OT_SHARE && end != v) {
      /* "5%", "5 %" or "0.05", as the library's cuts are written. */
      while (*end == ' ')
        end++;
      if (*end == '%') {
        end++;
        x /= 100;
        while (*end == ' ')
          end++;
      }
    }
    if (!*v || *end || end == v || !isfinite(x)) {
      snprintf(why, n, "expected %s%s%s",
               o->type == PFI_OT_SHARE ? "a share (0.05 or 5%)" : "a number",
               *rt ? ", " : "", rt);
      return -1;
    }
    if (!in_range(o, x)) {
      snprintf(why, n, "expected %s", rt);
      return -1;
    }
    *(double *)o->var = x;
    return 0;
  }
  case PFI_OT_DURATION: {
    struct pfi_error e;
    if (pfi_parse_duration(v, (enum pfi_duration_kind)o->ival, &x, &e) < 0) {
      /* The parser's message names the text already ("'30': a run
       * length needs its unit"): printed as it is. */
      snprintf(why, n, "%s", e.msg);
      why_named = 1;
      return -1;
    }
    if (!in_range(o, x)) {
      pfi_opt_range_text(o, rt, sizeof rt);
      snprintf(why, n, "expected %s", rt);
      return -1;
    }
    *(double *)o->var = x;
    return 0;
  }
  case PFI_OT_CHOICE:
    for (const struct pfi_opt_word *w = o->words; w && w->word; w++)
      if (strcmp(w->word, v) == 0) {
        *(int *)o->var = w->val;
        if (o->var2)
          *(const char **)o->var2 = w->word;
        return 0;
      }
    words_text(o, rt, sizeof rt);
    snprintf(why, n, "expected %s", rt);
    return -1;
  case PFI_OT_LIST: {
    size_t *cnt = o->var2;
    if (*cnt >= (size_t)o->hi) {
      snprintf(why, n, "given more than %zu times", (size_t)o->hi);
      return -1;
    }
    ((const char **)o->var)[(*cnt)++] = v;
    return 0;
  }
  case PFI_OT_CALLBACK:
    why[0] = '\0';
    if (o->cb(o, v, why, n) < 0) {
      if (!why[0])
        snprintf(why, n, "not a valid value");
      return -1;
    }
    return 0;
  default:
    snprintf(why, n, "not taken");
    return -1;
  }
}

/* The row named `lng`, or NULL. */
static const struct pfi_opt *row_named(const struct pfi_opt *opts,
                                       const char *lng, size_t *idx) {
  size_t i = 0;
  for (const struct pfi_opt *o = opts; o && (o->lng || o->help); o++, i++)
    if (o->lng && strcmp(o->lng, lng) == 0) {
      if (idx)
        *idx = i;
      return o;
    }
  return NULL;
}

unsigned pfi_opt_given(const struct pfi_optparse *p, const char *lng) {
  size_t i;
  if (!row_named(p->h->opts, lng, &i) || i >= sizeof p->given / sizeof p->given[0])
    return 0;
  return p->given[i];
}

/* "--a, --b or --c" of a rule's names. */
static void names_text(const struct pfi_opt_rule *r, size_t from,
                       const char *last, char *buf, size_t n) {
  size_t k = 0, nn = 0;
  buf[0] = '\0';
  for (size_t i = from; i < PFI_RULE_MAX_NAMES && r->names[i]; i++)
    nn++;
  for (size_t i = 0; i < nn && k < n; i++) {
    const char *sep = i == 0 ? "" : i + 1 == nn ? last : ", ";
    int m = snprintf(buf + k, n - k, "%s--%s", sep, r->names[from + i]);
    if (m < 0)
      break;
    k += (size_t)m;
  }
}

/* Checks the rules; 0, or 2 after the message. */
static int check_rules(struct pfi_optparse *p) {
  const struct pfi_cmd_help *h = p->h;
  char buf[256];
  for (const struct pfi_opt_rule *r = h->rules; r && r->kind; r++) {
    size_t nn = 0, ng = 0;
    const char *g[PFI_RULE_MAX_NAMES] = {0};
    for (size_t i = 0; i < PFI_RULE_MAX_NAMES && r->names[i]; i++) {
      nn++;
      if (pfi_opt_given(p, r->names[i]))
        g[ng++] = r->names[i];
    }
    switch (r->kind) {
    case PFI_RULE_REQ:
      if (ng == 0) {
        if (nn == 1)
          return pfi_opt_usage(h, "--%s is required", r->names[0]);
        names_text(r, 0, " or ", buf, sizeof buf);
        return pfi_opt_usage(h, "one of %s is required", buf);
      }
      break;
    case PFI_RULE_ONE:
      if (ng == 0) {
        names_text(r, 0, " or ", buf, sizeof buf);
        return pfi_opt_usage(h, "exactly one of %s is required", buf);
      }
      /* More than one: as PFI_RULE_EXCL. */
      /* fall through */
    case PFI_RULE_EXCL:
      if (ng > 1)
        return pfi_opt_usage(h, "--%s and --%s exclude each other", g[0],
                             g[1]);
      break;
    case PFI_RULE_TOGETHER:
      if (ng > 0 && ng < nn) {
        for (size_t i = 0; i < nn; i++)
          if (!pfi_opt_given(p, r->names[i]))
            return pfi_opt_usage(h, "--%s and --%s go together", g[0],
                                 r->names[i]);
      }
      break;
    case PFI_RULE_NEEDS:
      if (pfi_opt_given(p, r->names[0]))
        for (size_t i = 1; i < nn; i++)
          if (!pfi_opt_given(p, r->names[i]))
            return pfi_opt_usage(h, "--%s needs --%s", r->names[0],
                                 r->names[i]);
      break;
    default:
      break;
    }
  }
  return 0;
}

int pfi_opt_parse(struct pfi_optparse *p, const struct pfi_cmd_help *help,
                  int argc, char **argv) {
  char why[512];
  opt_start(p, help, argc, argv);
  /* The long options return their row's index, so that a row needs no
   * `val` of its own. */
  size_t nrow = 0, nlo = 0;
  for (const struct pfi_opt *o = help->opts; o && (o->lng || o->help);
       o++, nrow++) {
    if (!o->lng)
      continue;
    if (nlo < PFI_OPT_MAX)
      p->lo[nlo++].val = ROW_VAL + (int)nrow;
  }
  /* The defaults, through the same parsing as a value given. */
  for (const struct pfi_opt *o = help->opts; o && (o->lng || o->help); o++) {
    if (!o->lng || !o->def || o->type == PFI_OT_NONE)
      continue;
    if (store(o, o->def, why, sizeof why) < 0)
      return pfi_opt_usage(help, "--%s: default '%s': %s", o->lng, o->def,
                           why);
  }
  int c;
  while ((c = opt_next(p)) != -1) {
    if (c == '?')
      return EXIT_USAGE; /* said by opt_next() */
    const struct pfi_opt *o = NULL;
    size_t idx = 0;
    if (c >= ROW_VAL && (size_t)(c - ROW_VAL) < nrow) {
      idx = (size_t)(c - ROW_VAL);
      o = &help->opts[idx];
    } else {
      size_t i = 0;
      for (const struct pfi_opt *q = help->opts; q && (q->lng || q->help);
           q++, i++)
        if (q->lng && q->shrt && q->shrt == c) {
          o = q;
          idx = i;
          break;
        }
    }
    if (!o || o->type == PFI_OT_NONE) {
      /* A row of the older form in a bound table. */
      return pfi_opt_usage(help, "option '--%s' is not taken here",
                           o ? o->lng : "?");
    }
    if (o->type == PFI_OT_HELP)
      return pfi_opt_help(help);
    if (idx < sizeof p->given / sizeof p->given[0] && p->given[idx] < 65535)
      p->given[idx]++;
    /* An optional value left out: a flag's meaning. */
    const char *v = optarg;
    if (store(o, v ? v : "", why, sizeof why) < 0) {
      /* A callback's reason names the part of the value it refuses. */
      if (!v || why_named)
        return pfi_opt_usage(help, "--%s: %s", o->lng, why);
      return pfi_opt_usage(help, "--%s: '%s': %s", o->lng, v, why);
    }
  }
  p->rest = optind;
  int st = check_rules(p);
  if (st)
    return st;
  int nargs = argc - optind;
  if (nargs < help->args_min) {
    if (help->args)
      return pfi_opt_usage(help, "missing %s", help->args);
    return pfi_opt_usage(help, "expected %d argument(s), got %d",
                         help->args_min, nargs);
  }
  if (help->args_max != PFI_ARGS_ANY && nargs > help->args_max)
    return pfi_opt_usage(help, "unexpected argument '%s'",
                         argv[optind + help->args_max]);
  return PFI_OPT_GO;
}

/* Prints `text` from column `col` (the cursor is at column `at`), words
 * wrapped at HELP_WIDTH; '\n' starts a new line. */
static void put_wrapped(FILE *fp, const char *text, int col, int at) {
  const char *s = text;
  while (*s) {
    if (*s == '\n') {
      fputc('\n', fp);
      s++;
      at = 0;
      continue;
    }
    if (*s == ' ' && at == col) {
      s++;
      continue;
    }
    size_t wl = strcspn(s, " \n");
    if (wl == 0) {
      /* A space between words: printed unless the next word wraps. */
      size_t nl = strcspn(s + 1, " \n");
      if (at + 1 + (int)nl > HELP_WIDTH && at > col) {
        fputc('\n', fp);
        at = 0;
      } else {
        fputc(' ', fp);
        at++;
      }
      s++;
      continue;
    }
    if (at < col) {
      fprintf(fp, "%*s", col - at, "");
      at = col;
    }
    fwrite(s, 1, wl, fp);
    at += (int)wl;
    s += wl;
  }
  fputc('\n', fp);
}

/* The left column of an option: "-h, --help", "--caps LIST",
 * "--holdout[=K]". */
static int opt_left(const struct pfi_opt *o, char *buf, size_t n) {
  int k = 0;
  if (o->shrt)
    k = snprintf(buf, n, "-%c, ", o->shrt);
  const char *an = o->argname ? o->argname : "VALUE";
  if (o->arg == PFI_ARG_REQ)
    k += snprintf(buf + k, n - (size_t)k, "--%s %s", o->lng, an);
  else if (o->arg == PFI_ARG_OPT)
    k += snprintf(buf + k, n - (size_t)k, "--%s[=%s]", o->lng, an);
  else
    k += snprintf(buf + k, n - (size_t)k, "--%s", o->lng);
  return k;
}

/* A row's help with its range and default, from the row itself. */
static void row_text(const struct pfi_opt *o, char *text, size_t n) {
  char rt[96];
  pfi_opt_range_text(o, rt, sizeof rt);
  size_t hl = strlen(o->help);
  if (*rt && !o->def && hl > 0 && o->help[hl - 1] == ')')
    /* Help that ends in a remark of its own: the range joins it. */
    snprintf(text, n, "%.*s; %s)", (int)(hl - 1), o->help, rt);
  else if (*rt && o->def)
    snprintf(text, n, "%s (%s; default %s)", o->help, rt, o->def);
  else if (*rt)
    snprintf(text, n, "%s (%s)", o->help, rt);
  else if (o->def)
    snprintf(text, n, "%s (default %s)", o->help, o->def);
  else
    snprintf(text, n, "%s", o->help);
}

void pfi_opt_print_help(const struct pfi_cmd_help *h, FILE *fp) {
  if (fp == stdout && pfi_opt_man_wanted()) {
    pfi_opt_print_man(h, fp);
    return;
  }
  const char *hf = getenv("PFI_HELP_FORMAT");
  if (fp == stdout && hf && strcmp(hf, "complete") == 0) {
    pfi_opt_print_words(h, fp);
    return;
  }
  if (h->usage)
    fputs(h->usage, fp);
  if (h->about) {
    fputc('\n', fp);
    if (h->flags & PFI_OPT_WRAP_ABOUT)
      put_wrapped(fp, h->about, 0, 0);
    else
      fputs(h->about, fp);
  }
  if (h->actions) {
    int acol = 0;
    for (const struct pfi_action *a = h->actions; a->name; a++)
      if ((int)strlen(a->name) + 4 > acol)
        acol = (int)strlen(a->name) + 4;
    fputs("\nActions:\n", fp);
    for (const struct pfi_action *a = h->actions; a->name; a++) {
      fprintf(fp, "  %s", a->name);
      put_wrapped(fp, a->help, acol, 2 + (int)strlen(a->name));
    }
  }
  /* Help text starts two columns after the widest option that fits. */
  int col = 0;
  for (const struct pfi_opt *o = h->opts; o && (o->lng || o->help); o++) {
    char buf[160];
    if (!o->lng)
      continue;
    int w = 2 + opt_left(o, buf, sizeof buf) + 2;
    if (w <= OPT_COL && w > col)
      col = w;
  }
  int started = 0;
  for (const struct pfi_opt *o = h->opts; o && (o->lng || o->help); o++) {
    if (!o->lng) {
      fprintf(fp, "\n%s\n", o->help);
      started = 1;
      continue;
    }
    if (!started) {
      fputs("\nOptions:\n", fp);
      started = 1;
    }
    char buf[160];
    int w = 2 + opt_left(o, buf, sizeof buf);
    fprintf(fp, "  %s", buf);
    if (!o->help || !*o->help) {
      fputc('\n', fp);
      continue;
    }
    if (w + 2 > col) {
      fputc('\n', fp);
      w = 0;
    }
    char text[2048];
    row_text(o, text, sizeof text);
    put_wrapped(fp, text, col, w);
  }
  if (h->flags & PFI_OPT_PROGRAM) {
    int w = fprintf(fp, "  --version");
    put_wrapped(fp, "the version (the same as pfi --version)",
                col > w + 2 ? col : w + 2, w);
  }
  if (h->footer) {
    fputc('\n', fp);
    fputs(h->footer, fp);
  }
}

int pfi_opt_help(const struct pfi_cmd_help *h) {
  pfi_opt_print_help(h, stdout);
  return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
}

/* Manual pages. */

int pfi_opt_man_wanted(void) {
  const char *f = getenv("PFI_HELP_FORMAT");
  return f && strcmp(f, "man") == 0;
}

void pfi_roff_put(FILE *fp, const char *text, size_t len, int verbatim) {
  int bol = 1;
  for (size_t i = 0; i < len; i++) {
    char c = text[i];
    if (!verbatim && c == ' ' && bol)
      continue; /* a leading space would start a new line in filled text */
    if (bol && (c == '.' || c == '\''))
      fputs("\\&", fp);
    bol = 0;
    if (c == '\\') {
      fputs("\\e", fp);
    } else if (c == '-') {
      fputs("\\-", fp);
    } else if (c == '\n') {
      /* A line of its own: in filled text, a break. */
      fputs(verbatim ? "\n" : "\n.br\n", fp);
      bol = 1;
    } else {
      fputc(c, fp);
    }
    if (c == ' ' && !verbatim && i + 1 < len && text[i + 1] == ' ')
      while (i + 1 < len && text[i + 1] == ' ')
        i++;
  }
}

static void roff_line(FILE *fp, const char *text, int verbatim) {
  pfi_roff_put(fp, text, strlen(text), verbatim);
  fputc('\n', fp);
}

/* Text printed as it is (usage, about, footer): no-fill lines, a blank
 * line kept as one; a trailing newline dropped. */
static void roff_block(FILE *fp, const char *text) {
  size_t len = strlen(text);
  while (len > 0 && text[len - 1] == '\n')
    len--;
  fputs(".nf\n", fp);
  const char *s = text, *end = text + len;
  while (s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t ll = nl ? (size_t)(nl - s) : (size_t)(end - s);
    if (ll == 0)
      fputs(".sp\n", fp);
    else {
      pfi_roff_put(fp, s, ll, 1);
      fputc('\n', fp);
    }
    s += ll + (nl ? 1 : 0);
  }
  fputs(".fi\n", fp);
}

void pfi_opt_print_man(const struct pfi_cmd_help *h, FILE *fp) {
  const char *prog = (h->flags & PFI_OPT_PROGRAM) ? "" : "pfi ";
  char name[128];
  snprintf(name, sizeof name, "%s%s", prog, h->cmd ? h->cmd : "");
  char title[128];
  size_t k = 0;
  for (const char *s = name; *s && k + 1 < sizeof title; s++)
    title[k++] = *s == ' ' ? '-' : (char)(*s >= 'a' && *s <= 'z'
                                              ? *s - 'a' + 'A'
                                              : *s);
  title[k] = 0;
  fputs(".TH ", fp);
  pfi_roff_put(fp, title, strlen(title), 1);
  fprintf(fp, " %s \"\" \"pfi %s\" \"pfi manual\"\n",
          (h->flags & PFI_OPT_PROGRAM) ? "8" : "1", PFI_VERSION_STRING);
  fputs(".SH NAME\n", fp);
  for (k = 0; name[k]; k++)
    if (name[k] == ' ')
      name[k] = '-';
  pfi_roff_put(fp, name, strlen(name), 1);
  /* What the command does: PFI_MAN_WHATIS (the one line `pfi --help`
   * gives it), else the about text's first sentence on one line. */
  char what[512];
  const char *w = getenv("PFI_MAN_WHATIS");
  const char *about = w && *w ? w : h->about ? h->about : "";
  size_t al = 0;
  for (const char *a = about; *a && al + 1 < sizeof what; a++) {
    if ((*a == '.' || *a == ':') && (a[1] == ' ' || a[1] == '\n' || !a[1]))
      break;
    if (*a == '\n' && a[1] == '\n')
      break;
    what[al++] = *a == '\n' ? ' ' : *a;
  }
  while (al > 0 && what[al - 1] == ' ')
    al--;
  if (al > 0) {
    fputs(" \\- ", fp);
    pfi_roff_put(fp, what, al, 0);
  }
  fputc('\n', fp);
  if (h->usage) {
    fputs(".SH SYNOPSIS\n", fp);
    /* "usage: " and the indent of the lines after it go. */
    char buf[4096];
    const char *u = h->usage;
    size_t n = 0;
    while (*u && n + 1 < sizeof buf) {
      if (strncmp(u, "usage: ", 7) == 0)
        u += 7;
      else if (strncmp(u, "       ", 7) == 0)
        u += 7;
      while (*u && *u != '\n' && n + 1 < sizeof buf)
        buf[n++] = *u++;
      if (*u == '\n' && n + 1 < sizeof buf)
        buf[n++] = *u++;
    }
    buf[n] = 0;
    roff_block(fp, buf);
  }
  if (h->about) {
    fputs(".SH DESCRIPTION\n", fp);
    if (h->flags & PFI_OPT_WRAP_ABOUT) {
      size_t l = strlen(h->about);
      while (l > 0 && h->about[l - 1] == '\n')
        l--;
      pfi_roff_put(fp, h->about, l, 0);
      fputc('\n', fp);
    } else {
      roff_block(fp, h->about);
    }
  }
  if (h->actions) {
    fputs(".SH ACTIONS\n", fp);
    for (const struct pfi_action *a = h->actions; a->name; a++) {
      fputs(".TP\n.B ", fp);
      roff_line(fp, a->name, 1);
      roff_line(fp, a->help, 0);
    }
  }
  int started = 0;
  for (const struct pfi_opt *o = h->opts; o && (o->lng || o->help); o++) {
    if (!started) {
      fputs(".SH OPTIONS\n", fp);
      started = 1;
    }
    if (!o->lng) {
      fputs(".SS ", fp);
      size_t l = strlen(o->help);
      if (l > 0 && o->help[l - 1] == ':')
        l--;
      pfi_roff_put(fp, o->help, l, 1);
      fputc('\n', fp);
      continue;
    }
    fputs(".TP\n", fp);
    if (o->shrt)
      fprintf(fp, "\\fB\\-%c\\fR, ", o->shrt);
    fputs("\\fB\\-\\-", fp);
    pfi_roff_put(fp, o->lng, strlen(o->lng), 1);
    fputs("\\fR", fp);
    const char *an = o->argname ? o->argname : "VALUE";
    if (o->arg == PFI_ARG_REQ) {
      fputs(" \\fI", fp);
      pfi_roff_put(fp, an, strlen(an), 1);
      fputs("\\fR", fp);
    } else if (o->arg == PFI_ARG_OPT) {
      fputs("[=\\fI", fp);
      pfi_roff_put(fp, an, strlen(an), 1);
      fputs("\\fR]", fp);
    }
    fputc('\n', fp);
    if (o->help && *o->help) {
      char text[2048];
      row_text(o, text, sizeof text);
      roff_line(fp, text, 0);
    }
  }
  if (h->flags & PFI_OPT_PROGRAM) {
    if (!started)
      fputs(".SH OPTIONS\n", fp);
    fputs(".TP\n\\fB\\-\\-version\\fR\n"
          "the version (the same as pfi \\-\\-version)\n",
          fp);
  }
  if (h->footer) {
    fputs(".SH NOTES\n", fp);
    roff_block(fp, h->footer);
  }
}

void pfi_opt_print_words(const struct pfi_cmd_help *h, FILE *fp) {
  for (const struct pfi_opt *o = h->opts; o && (o->lng || o->help); o++) {
    if (!o->lng)
      continue;
    fprintf(fp, "--%s", o->lng);
    if (o->type == PFI_OT_CHOICE && o->words) {
      const char *sep = "\t";
      for (const struct pfi_opt_word *w = o->words; w->word; w++)
        if (*w->word) {
          fprintf(fp, "%s%s", sep, w->word);
          sep = " ";
        }
    }
    fputc('\n', fp);
  }
  if (h->flags & PFI_OPT_PROGRAM)
    fputs("--version\n", fp);
}
