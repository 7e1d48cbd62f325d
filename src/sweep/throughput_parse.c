/* SPDX-License-Identifier: GPL-3.0-or-later */
/* What a throughput report line says (pfi_jsonl_parse_line): the JSONL
 * fields; and which --throughput regexes are safe to run. */
#include "pfi/throughput.h"

#include "pfi/phase.h"
#include "throughput_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Longest --throughput regex, and largest count in a {m,n} interval. */
#define REGEX_MAX_LEN 1024
#define REGEX_MAX_DUP 255
/* Most copies of its atoms a --throughput regex may expand to: glibc's
 * regcomp copies the operand of '+' and of {m,n} (m or n times), so stacked
 * or nested repetitions ("a+++...", "((a{9}){9}){9}") grow exponentially. */
#define REGEX_MAX_NODES 4096

/* The copies of '+' or {m,n}'s operand that regcomp makes, or 1 when P
 * (past its operand) is no repetition; *len is the operator's length. */
static double repeat_copies(const char *p, size_t *len) {
  *len = 1;
  if (*p == '+')
    return 2;
  if (*p == '*' || *p == '?')
    return 1;
  if (*p != '{' || p[1] < '0' || p[1] > '9') {
    *len = 0;
    return 1;
  }
  char *e;
  double m = (double)strtol(p + 1, &e, 10), n = m;
  if (*e == ',') {
    if (e[1] >= '0' && e[1] <= '9')
      n = (double)strtol(e + 1, &e, 10);
    else
      n = m + 1, e++;
  }
  if (*e != '}') {
    *len = 0;
    return 1;
  }
  *len = (size_t)(e - p) + 1;
  return m > n ? (m > 1 ? m : 1) : (n > 1 ? n : 1);
}

/* An upper estimate of the atoms (characters, bracket expressions, anchors)
 * that RE (at most REGEX_MAX_LEN long) expands to once every repetition is
 * copied out. */
static double regex_expansion(const char *re) {
  size_t depth = 0;
  double total[REGEX_MAX_LEN + 2] = {0}, last[REGEX_MAX_LEN + 2] = {0};
  for (const char *p = re; *p;) {
    size_t len;
    double k = repeat_copies(p, &len);
    if (len) {
      total[depth] += last[depth] * (k - 1);
      last[depth] *= k;
      p += len;
      continue;
    }
    double atom = 1;
    if (*p == '(') {
      total[++depth] = 0;
      last[depth] = 0;
      p++;
      continue;
    }
    if (*p == ')' && depth > 0) {
      atom = total[depth--] + 1;
      p++;
    } else if (*p == '|') {
      last[depth] = 0;
      p++;
      continue;
    } else if (*p == '\\' && p[1]) {
      p += 2;
    } else if (*p == '[') {
      const char *q = p + 1;
      if (*q == '^')
        q++;
      if (*q == ']')
        q++;
      while (*q && *q != ']')
        q++;
      p = *q ? q + 1 : q;
    } else {
      p++;
    }
    total[depth] += atom;
    last[depth] = atom;
  }
  double r = 0;
  for (size_t i = 0; i <= depth; i++)
    r += total[i];
  return r;
}

/* Refuses what would make matching take unbounded time or memory:
 * back-references (glibc accepts \1 even in extended syntax, and matching
 * them is exponential), counts above REGEX_MAX_DUP in {m,n}, patterns
 * longer than REGEX_MAX_LEN, and repetitions that expand to more than
 * REGEX_MAX_NODES copies. Returns NULL or the reason. */
const char *pfi__tput_regex_unsafe(const char *re) {
  if (strlen(re) > REGEX_MAX_LEN)
    return "longer than 1024 characters";
  int prev_rep = 0;
  /* The bracket expression open, by its first character after '[' and
   * '^' (a ']' there is a literal; any later ']' closes it, even after a
   * '[' inside it, as in "[0-[]"). */
  const char *bracket = NULL;
  for (const char *p = re; *p; p++) {
    if (bracket) {
      if (*p == ']' && p != bracket)
        bracket = NULL;
      continue;
    }
    if (*p == '[') {
      bracket = p + 1 + (p[1] == '^');
      prev_rep = 0;
      continue;
    }
    if (*p == '\\' && p[1]) {
      prev_rep = 0;
      if (p[1] >= '1' && p[1] <= '9')
        return "back-references (\\1...\\9) can make matching take "
               "exponential time";
      p++;
      continue;
    }
    if (*p == '{') {
      for (const char *q = p + 1; *q && *q != '}'; q++)
        if (*q >= '0' && *q <= '9' && strtol(q, NULL, 10) > REGEX_MAX_DUP)
          return "a repetition count above 255 in {m,n}";
    }
    /* A repetition of a repetition ("a**", "a+*", "a{2}+") means no more
     * than one, and glibc's matcher can take minutes on a few of them. */
    int rep = *p == '*' || *p == '+' || *p == '?';
    const char *close = NULL;
    if (*p == '{' && p[1] >= '0' && p[1] <= '9') {
      close = strchr(p, '}');
      rep = close != NULL;
    }
    if (rep && prev_rep)
      return "a repetition of a repetition ('**', '+*', '{2}+' ...): write "
             "one";
    prev_rep = rep;
    if (close)
      p = close;
  }
  if (!(regex_expansion(re) <= REGEX_MAX_NODES))
    return "its repetitions expand to more than 4096 copies of its "
           "characters ('+' and {m,n} copy what they repeat; stacked or "
           "nested repetitions multiply)";
  return NULL;
}

static int num_field(json_t *o, const char *key, double *out, int nonneg,
                     const char *name, long line, struct pfi_error *err) {
  json_t *v = json_object_get(o, key);
  *out = NAN;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_number(v))
    return pfi_error_setloc(err, PFI_EPARSE, name, line, 1,
                            "\"%s\" is not a number", key);
  double d = json_number_value(v);
  if (!isfinite(d) || (nonneg && d < 0))
    return pfi_error_setloc(err, PFI_EPARSE, name, line, 1,
                            "\"%s\" must be a finite%s number", key,
                            nonneg ? " non-negative" : "");
  *out = d;
  return 1;
}

int pfi_jsonl_parse_line(const char *name, long line, const char *text,
                         size_t len, struct pfi_step *step, int *is_elapsed,
                         struct pfi_error *err) {
  return pfi_jsonl_parse_line_phase(name, line, text, len, step, is_elapsed,
                                    NULL, err);
}

/* The phase fields of a line (struct pfi_step_phase). */
static int phase_fields(json_t *o, struct pfi_step_phase *ph, const char *name,
                        long line, struct pfi_error *err) {
  static const struct {
    const char *k;
    int ph;
  } names[] = {
      {"training", PFI_PHASE_TRAINING}, {"startup", PFI_PHASE_STARTUP},
      {"warmup", PFI_PHASE_WARMUP},     {"pause", PFI_PHASE_PAUSE},
      {"evaluation", PFI_PHASE_PAUSE},  {"eval", PFI_PHASE_PAUSE},
      {"validation", PFI_PHASE_PAUSE},  {"checkpoint", PFI_PHASE_PAUSE}};
  int rc;
  json_t *v = json_object_get(o, "phase");
  if (v && !json_is_null(v)) {
    const char *t = json_string_value(v);
    for (size_t k = 0; t && k < sizeof names / sizeof names[0]; k++)
      if (strcmp(t, names[k].k) == 0)
        ph->phase = names[k].ph;
    if (ph->phase < 0)
      return pfi_error_setloc(err, PFI_EPARSE, name, line, 1,
                              "\"phase\" is not training, startup, warmup, "
                              "pause, evaluation, eval, validation or "
                              "checkpoint");
  }
  static const char *const keys[3] = {"next_pause_s", "next_pause_len_s",
                                      "end_in_s"};
  double *out[3] = {&ph->next_pause_s, &ph->next_pause_len_s, &ph->end_in_s};
  for (int k = 0; k < 3; k++) {
    if ((rc = num_field(o, keys[k], out[k], 1, name, line, err)) < 0)
      return rc;
    if (*out[k] > 1e7)
      return pfi_error_setloc(err, PFI_EPARSE, name, line, 1,
                              "\"%s\" above 1e7 s", keys[k]);
  }
  if (!(ph->next_pause_len_s > 0))
    ph->next_pause_len_s = NAN;
  return 0;
}

int pfi_jsonl_parse_line_phase(const char *name, long line, const char *text,
                               size_t len, struct pfi_step *step,
                               int *is_elapsed, struct pfi_step_phase *ph,
                               struct pfi_error *err) {
  int rc;
  json_t *o = NULL;
  if (ph) {
    ph->phase = -1;
    ph->next_pause_s = ph->next_pause_len_s = ph->end_in_s = NAN;
  }
  step->t_s = step->job_t_s = step->tokens = step->tokens_per_s = NAN;
  step->step = step->loss = step->mfu = NAN;
  if (is_elapsed)
    *is_elapsed = 0;
  size_t i = 0;
  while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r'))
    i++;
  if (i == len)
    return 0;
  /* jansson stops at a raw NUL byte as at the end of the text and would
   * accept what precedes it: a line holding one is corrupt. */
  const char *z = memchr(text, '\0', len);
  if (z)
    return pfi_error_setloc(err, PFI_EPARSE, name, line, (long)(z - text) + 1,
                            "NUL byte in the line");
  json_error_t je;
  memset(&je, 0, sizeof je);
  o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  /* jansson says out of memory by its error code, or, when its first
   * buffer cannot be allocated, by returning with no message at all. */
  if (!o && (json_error_code(&je) == json_error_out_of_memory ||
             je.text[0] == '\0')) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  if (!o) {
    rc = pfi_error_setloc(err, PFI_EPARSE, name, line,
                          je.column > 0 ? je.column : 1, "%s", je.text);
    goto out;
  }
  if (!json_is_object(o)) {
    rc = pfi_error_setloc(err, PFI_EPARSE, name, line, (long)i + 1,
                          "expected a JSON object");
    goto out;
  }
  double t = NAN, el = NAN;
  static const char *const tkeys[] = {"t", "timestamp", "time"};
  for (size_t k = 0; k < 3 && !isfinite(t); k++)
    if ((rc = num_field(o, tkeys[k], &t, 1, name, line, err)) < 0)
      goto out;
  if ((rc = num_field(o, "elapsed_s", &el, 1, name, line, err)) < 0 ||
      (rc = num_field(o, "tokens", &step->tokens, 1, name, line, err)) < 0 ||
      (rc = num_field(o, "tokens_per_s", &step->tokens_per_s, 1, name, line,
                      err)) < 0 ||
      (rc = num_field(o, "step", &step->step, 1, name, line, err)) < 0 ||
      (rc = num_field(o, "loss", &step->loss, 0, name, line, err)) < 0 ||
      (rc = num_field(o, "mfu", &step->mfu, 1, name, line, err)) < 0)
    goto out;
  if (ph && (rc = phase_fields(o, ph, name, line, err)) < 0)
    goto out;
  if (isfinite(t)) {
    step->job_t_s = t;
  } else if (isfinite(el)) {
    step->job_t_s = el;
    if (is_elapsed)
      *is_elapsed = 1;
  }
  if (!isfinite(step->tokens) && !isfinite(step->tokens_per_s)) {
    rc = pfi_error_setloc(err, PFI_EPARSE, name, line, (long)i + 1,
                          "neither \"tokens\" nor \"tokens_per_s\"");
    goto out;
  }
  if (isfinite(step->tokens) && !isfinite(step->tokens_per_s) &&
      !isfinite(step->job_t_s)) {
    rc = pfi_error_setloc(err, PFI_EPARSE, name, line, (long)i + 1,
                          "cumulative \"tokens\" need a timestamp "
                          "(\"t\" or \"elapsed_s\")");
    goto out;
  }
  rc = 1;
out:
  json_decref(o);
  return rc;
}
