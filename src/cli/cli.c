/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

#include "pfi/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfi/csv.h"
#include "pfi/restab.h"

int pfi_cli_status(int code) {
  switch (code) {
  case PFI_OK:
    return PFI_EXIT_OK;
  case PFI_EPARSE:
  case PFI_EINVAL:
  case PFI_ERANGE:
  case PFI_ENOTFOUND:
  case PFI_EINFEASIBLE:
    return PFI_EXIT_USAGE;
  default:
    return PFI_EXIT_FAIL;
  }
}

void pfi_cli_set_cmd(const char *cmd) { pfi_opt_set_cmd(cmd); }

const char *pfi_cli_cmd(void) { return pfi_opt_cmd(); }

static void put_prefix(void) {
  const char *cli_cmd = pfi_opt_cmd();
  if (cli_cmd)
    fprintf(stderr, "pfi %s: ", cli_cmd);
  else
    fputs("pfi: ", stderr);
}

int pfi_cli_fail(const struct pfi_error *err) {
  char buf[PFI_ERROR_MSG_MAX + PFI_ERROR_FILE_MAX + 64];
  pfi_error_format(err, buf, sizeof buf);
  put_prefix();
  fprintf(stderr, "%s\n", buf);
  return pfi_cli_status(err ? err->code : PFI_EINVAL);
}

void pfi_cli_err(const char *fmt, ...) {
  va_list ap;
  put_prefix();
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

int pfi_cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "pfi %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'pfi %s --help'.\n", cmd);
  return PFI_EXIT_USAGE;
}

int pfi_cli_format(const char *cmd, const char *s, unsigned allowed,
                   enum pfi_format *out) {
  if (strcmp(s, "table") == 0 && (allowed & PFI_FMT_ALLOW_TABLE))
    *out = PFI_FMT_TABLE;
  else if (strcmp(s, "csv") == 0 && (allowed & PFI_FMT_ALLOW_CSV))
    *out = PFI_FMT_CSV;
  else if (strcmp(s, "json") == 0 && (allowed & PFI_FMT_ALLOW_JSON))
    *out = PFI_FMT_JSON;
  else
    return pfi_cli_usage(cmd, "--format: unknown format '%s' (expected %s%s%s)",
                         s, (allowed & PFI_FMT_ALLOW_TABLE) ? "table " : "",
                         (allowed & PFI_FMT_ALLOW_CSV) ? "csv " : "",
                         (allowed & PFI_FMT_ALLOW_JSON) ? "json" : "");
  return 0;
}

int pfi_cli_wide;

int pfi_cli_print_table(const struct pfi_restab *t, enum pfi_format fmt) {
  enum pfi_restab_format f = fmt == PFI_FMT_CSV    ? PFI_RESTAB_CSV
                             : fmt == PFI_FMT_JSON ? PFI_RESTAB_JSON
                                                   : PFI_RESTAB_TERM;
  int rc = f == PFI_RESTAB_TERM
               ? pfi_restab_print_term(
                     t, stdout, pfi_cli_wide ? 0 : pfi_restab_term_width(stdout))
               : pfi_restab_print(t, f, stdout);
  if (rc == PFI_ENOMEM)
    pfi_cli_err("out of memory");
  return rc ? PFI_EXIT_FAIL : 0;
}

int pfi_cli_print_json(json_t *j) {
  int rc = json_dumpf(j, stdout,
                      JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                          JSON_REAL_PRECISION(12));
  json_decref(j);
  if (rc != 0 || fputc('\n', stdout) == EOF)
    return PFI_EXIT_FAIL;
  return 0;
}

json_t *pfi_cli_json_str(const char *s) {
  json_t *j = json_string(s);
  if (j)
    return j;
  /* Not UTF-8 (a Latin-1 file, a binary byte): jansson refuses it, and
   * json_object_set_new() with the NULL would silently drop the key. Each
   * byte that does not start a well-formed sequence becomes U+FFFD. */
  char *buf = pfi_restab_utf8_fix(s);
  if (!buf)
    return json_null();
  j = json_string(buf);
  free(buf);
  return j ? j : json_null();
}

void pfi_cli_put_csv_field(FILE *fp, const char *s) {
  pfi_restab_put_csv(fp, s);
}

void pfi_cli_put_name(FILE *fp, const char *s, int width) {
  pfi_restab_put_name(fp, s, width);
}

int pfi_cli_parse_double(const char *s, double *out) {
  return pfi_parse_double(s, out) == 0 ? 0 : PFI_EINVAL;
}

int pfi_cli_parse_ulong(const char *s, unsigned long *out) {
  /* strtoul() skips leading space and then accepts a sign: " -1" would
   * read as ULONG_MAX. Only digits are a non-negative integer. */
  if (!s || !(*s >= '0' && *s <= '9'))
    return PFI_EINVAL;
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end)
    return PFI_EINVAL;
  *out = v;
  return 0;
}

int pfi_cli_input(const char *what, const char *path) {
  if (!path || strcmp(path, "-") == 0)
    return 0;
  const char *why = NULL;
  struct stat st;
  int fd = -1;
  if (stat(path, &st) != 0)
    why = strerror(errno);
  else if (S_ISDIR(st.st_mode))
    why = "is a directory, not a file";
  else if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
    why = strerror(errno);
  if (fd >= 0)
    close(fd);
  if (!why)
    return 0;
  pfi_cli_err("%s: %s: %s", what, path, why);
  return PFI_EXIT_USAGE;
}

int pfi_cli_is_help(const char *s) {
  return strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0;
}

int pfi_cli_parse_numlist(const char *s, double **out, size_t *n,
                          struct pfi_error *err) {
  *out = NULL;
  *n = 0;
  if (!s || !*s)
    return pfi_error_set(err, PFI_EINVAL, "empty list");
  if (strchr(s, ':')) {
    double lo, hi, step;
    char a[64], b[64], c[64];
    const char *p1 = strchr(s, ':');
    const char *p2 = strchr(p1 + 1, ':');
    if (!p2 || strchr(p2 + 1, ':') || (size_t)(p1 - s) >= sizeof a ||
        (size_t)(p2 - p1 - 1) >= sizeof b || strlen(p2 + 1) >= sizeof c)
      return pfi_error_set(err, PFI_EINVAL,
                           "'%s': expected LO:HI:STEP (e.g. 200:700:100)", s);
    memcpy(a, s, (size_t)(p1 - s));
    a[p1 - s] = '\0';
    memcpy(b, p1 + 1, (size_t)(p2 - p1 - 1));
    b[p2 - p1 - 1] = '\0';
    strcpy(c, p2 + 1);
    if (pfi_parse_double(a, &lo) || pfi_parse_double(b, &hi) ||
        pfi_parse_double(c, &step))
      return pfi_error_set(err, PFI_EINVAL,
                           "'%s': expected LO:HI:STEP with numbers", s);
    if (!(step > 0) || hi < lo)
      return pfi_error_set(err, PFI_EINVAL, "'%s': need STEP > 0 and HI >= LO",
                           s);
    double cnt = floor((hi - lo) / step + 1e-9) + 1;
    if (cnt > 100000)
      return pfi_error_set(err, PFI_EINVAL, "'%s': too many values", s);
    size_t k = (size_t)cnt;
    double *v = malloc(k * sizeof *v);
    if (!v)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    for (size_t i = 0; i < k; i++)
      v[i] = lo + step * (double)i;
    *out = v;
    *n = k;
    return 0;
  }
  size_t k = 1;
  for (const char *p = s; *p; p++)
    if (*p == ',')
      k++;
  double *v = malloc(k * sizeof *v);
  char *copy = strdup(s);
  if (!v || !copy) {
    free(v);
    free(copy);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  size_t i = 0;
  char *p = copy;
  for (;;) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = '\0';
    if (pfi_parse_double(p, &v[i]) != 0) {
      int rc = pfi_error_set(err, PFI_EINVAL, "'%s': not a number in list '%s'",
                             p, s);
      free(v);
      free(copy);
      return rc;
    }
    i++;
    if (!comma)
      break;
    p = comma + 1;
  }
  free(copy);
  *out = v;
  *n = i;
  return 0;
}

int pfi_cli_parse_duration(const char *s, double *seconds,
                           struct pfi_error *err) {
  return pfi_parse_duration(s, PFI_DUR_ANY, seconds, err);
}

int pfi_cli_parse_strategies(const char *s, int have_pfi, int *strat, size_t *n,
                             const char *cmd) {
  *n = 0;
  if (!s) {
    strat[(*n)++] = PFI_STRAT_ORACLE;
    strat[(*n)++] = PFI_STRAT_EQUAL;
    if (have_pfi) {
      strat[(*n)++] = PFI_STRAT_PFI_AWARE;
      strat[(*n)++] = PFI_STRAT_PFI_CURVE;
    }
    return 0;
  }
  char *dup = strdup(s);
  if (!dup) {
    fprintf(stderr, "pfi %s: out of memory\n", cmd);
    return -1;
  }
  char *save = NULL;
  for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int k = pfi_strategy_parse(t);
    if (k < 0) {
      pfi_cli_usage(cmd, "unknown strategy '%s'", t);
      free(dup);
      return -1;
    }
    int seen = 0;
    for (size_t j = 0; j < *n; j++)
      seen |= strat[j] == k;
    if (!seen)
      strat[(*n)++] = k;
  }
  free(dup);
  if (*n == 0) {
    pfi_cli_usage(cmd, "--strategy: no strategy given");
    return -1;
  }
  return 0;
}
