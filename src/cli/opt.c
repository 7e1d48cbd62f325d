/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Option tables: getopt_long() and --help from one table (see opt.h). */
#include "opt.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/version.h"

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
    pfi_cli_usage(h->cmd, "%s", msg);
}

/* The help's layout: options indented by 2, their help at column
 * OPT_COL at most, lines of at most HELP_WIDTH characters. */
#define HELP_WIDTH 79
#define OPT_COL 24

void pfi_opt_start(struct pfi_optparse *p, const struct pfi_cmd_help *help,
                   int argc, char **argv) {
  memset(p, 0, sizeof *p);
  p->h = help;
  p->argc = argc;
  p->argv = argv;
  if (!(help->flags & PFI_OPT_PROGRAM))
    pfi_cli_set_cmd(help->cmd);
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
      p->lo[n].val = o->val;
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
    size_t d = pfi_cli_edit_distance(name, o->lng);
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

int pfi_opt_next(struct pfi_optparse *p) {
  int c;
  while ((c = getopt_long(p->argc, p->argv, p->so, p->lo, NULL)) ==
         PFI_OPT_WIDE_VAL)
    pfi_cli_wide = 1;
  if (c == OPT_VERSION) {
    printf("%s %s\n", p->h->cmd, PFI_VERSION_STRING);
    exit(fflush(stdout) == 0 ? PFI_EXIT_OK : PFI_EXIT_FAIL);
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

void pfi_opt_print_help(const struct pfi_cmd_help *h, FILE *fp) {
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
    put_wrapped(fp, o->help, col, w);
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
  return fflush(stdout) == 0 ? PFI_EXIT_OK : PFI_EXIT_FAIL;
}
