/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The job's throughput reports: JSONL file or a regex on its stdout. */
#include "pfi/throughput.h"

#include "pfi/csv.h"
#include "pfi/phase.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Longest line kept; a longer one is malformed (a job writing megabytes
 * without a newline is not reporting throughput). */
#define LINE_MAX_BYTES 65536

/* Text of stdout lines waiting for the regex matcher, at most: a matcher
 * that falls behind loses lines (counted), the job's pipe never fills. */
#define QUEUE_MAX_BYTES (8u << 20)

/* Longest --throughput regex, and largest count in a {m,n} interval. */
#define REGEX_MAX_LEN 1024
#define REGEX_MAX_DUP 255
/* Most copies of its atoms a --throughput regex may expand to: glibc's
 * regcomp copies the operand of '+' and of {m,n} (m or n times), so stacked
 * or nested repetitions ("a+++...", "((a{9}){9}){9}") grow exponentially. */
#define REGEX_MAX_NODES 4096

struct qline {
  struct qline *next;
  double t;  /* device time it was read at */
  long line; /* 1-based line of the job's stdout */
  size_t n;
  char s[];
};

struct pfi_tput {
  enum pfi_tput_kind kind;
  /* Regex kind with a stream attached (pfi_tput_attach): a reader thread
   * drains the job's stdout into a queue of lines, a matcher thread runs
   * the regex on them, so that neither a slow matcher nor the sampling
   * interval ever blocks the job or the sweep. mu guards the queue, the
   * collected steps, the bad-line count and the clock. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int running, abandoned;
  int fd, wake[2];
  pthread_t rd, mt;
  struct qline *qh, *qt;
  size_t qbytes;
  int eof, stop, mt_done;
  long dropped;
  double clk_dev, clk_mono;
  int clk_adv;
  /* The job's stdout, as read, also to these (pfi_tput_tee; -1: not). */
  int tee_out, tee_log;
  long tee_log_err;       /* errno of a failed log write, 0 */
  struct pfi_step *taken; /* returned by pfi_tput_take() */
  size_t ctaken;
  char *path; /* jsonl */
  regex_t re; /* regex */
  int re_ok;
  off_t off;  /* jsonl: bytes consumed */
  char *part; /* partial line */
  size_t npart, cpart;
  int part_overflow;
  long line; /* lines seen in this run */
  double dev_t0, wall_t0;
  double prev_tokens, prev_t; /* rate base (job clock) */
  /* A cumulative counter that dropped: the base before the drop, kept for
   * one line to tell a glitch (the next line resumes above it) from a
   * restarted counter (it does not). */
  double hold_tokens, hold_t;
  int hold;
  long resets;
  struct pfi_error first_reset;
  struct pfi_step *steps;
  size_t nsteps, csteps;
  double last_rate;
  long bad;
  struct pfi_error first_bad;
};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void lock(struct pfi_tput *tp) { pthread_mutex_lock(&tp->mu); }
static void unlock(struct pfi_tput *tp) { pthread_mutex_unlock(&tp->mu); }

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
static const char *regex_unsafe(const char *re) {
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
  } names[] = {{"training", PFI_PHASE_TRAINING}, {"startup", PFI_PHASE_STARTUP},
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

int pfi_tput_open(struct pfi_tput **out, const char *spec,
                  struct pfi_error *err) {
  *out = NULL;
  struct pfi_tput *tp = calloc(1, sizeof *tp);
  if (!tp)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  tp->last_rate = NAN;
  tp->fd = tp->wake[0] = tp->wake[1] = -1;
  tp->tee_out = tp->tee_log = -1;
  pthread_mutex_init(&tp->mu, NULL);
  pthread_cond_init(&tp->cv, NULL);
  if (strncmp(spec, "jsonl:", 6) == 0 && spec[6]) {
    tp->kind = PFI_TPUT_JSONL;
    tp->path = strdup(spec + 6);
    if (!tp->path) {
      free(tp);
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    }
  } else if (strncmp(spec, "regex:", 6) == 0 && spec[6]) {
    tp->kind = PFI_TPUT_REGEX;
    const char *why = regex_unsafe(spec + 6);
    if (why) {
      pfi_tput_close(tp);
      return pfi_error_set(err, PFI_EINVAL, "--throughput regex '%s': %s",
                           spec + 6, why);
    }
    int r = regcomp(&tp->re, spec + 6, REG_EXTENDED);
    if (r != 0) {
      char msg[256];
      regerror(r, &tp->re, msg, sizeof msg);
      free(tp);
      return pfi_error_set(err, PFI_EINVAL, "--throughput regex '%s': %s",
                           spec + 6, msg);
    }
    tp->re_ok = 1;
    if (tp->re.re_nsub < 1) {
      pfi_tput_close(tp);
      return pfi_error_set(err, PFI_EINVAL,
                           "--throughput regex '%s' needs a capture group "
                           "(...) around the tokens/s number",
                           spec + 6);
    }
  } else {
    free(tp);
    return pfi_error_set(err, PFI_EINVAL,
                         "--throughput '%s': expected jsonl:PATH or "
                         "regex:PATTERN",
                         spec);
  }
  *out = tp;
  return 0;
}

void pfi_tput_close(struct pfi_tput *tp) {
  if (!tp)
    return;
  if (tp->running)
    pfi_tput_detach(tp, 1.0, NULL);
  /* A matcher thread that never returned still uses tp: it is left to the
   * process's end rather than freed under it. */
  if (tp->abandoned)
    return;
  pthread_mutex_destroy(&tp->mu);
  pthread_cond_destroy(&tp->cv);
  free(tp->taken);
  if (tp->re_ok)
    regfree(&tp->re);
  free(tp->path);
  free(tp->part);
  free(tp->steps);
  free(tp);
}

enum pfi_tput_kind pfi_tput_kind(const struct pfi_tput *tp) { return tp->kind; }
const char *pfi_tput_path(const struct pfi_tput *tp) {
  return tp->kind == PFI_TPUT_JSONL ? tp->path : NULL;
}

int pfi_tput_start(struct pfi_tput *tp, double dev_t0, double wall_t0,
                   struct pfi_error *err) {
  tp->off = 0;
  tp->npart = 0;
  tp->part_overflow = 0;
  tp->line = 0;
  tp->dev_t0 = dev_t0;
  tp->wall_t0 = wall_t0;
  tp->prev_tokens = tp->prev_t = NAN;
  tp->hold = 0;
  tp->resets = 0;
  pfi_error_clear(&tp->first_reset);
  tp->nsteps = 0;
  tp->last_rate = NAN;
  tp->bad = 0;
  pfi_error_clear(&tp->first_bad);
  if (tp->kind == PFI_TPUT_JSONL) {
    int fd = open(tp->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return pfi_error_set(err, PFI_EIO, "%s: %s", tp->path, strerror(errno));
    close(fd);
  }
  return 0;
}

static int push_step(struct pfi_tput *tp, const struct pfi_step *s) {
  int rc = 0;
  lock(tp);
  if (tp->nsteps == tp->csteps) {
    size_t nc = tp->csteps ? 2 * tp->csteps : 64;
    struct pfi_step *nv = realloc(tp->steps, nc * sizeof *nv);
    if (!nv) {
      rc = PFI_ENOMEM;
      goto out;
    }
    tp->steps = nv;
    tp->csteps = nc;
  }
  tp->steps[tp->nsteps++] = *s;
  if (isfinite(s->tokens_per_s))
    tp->last_rate = s->tokens_per_s;
out:
  unlock(tp);
  return rc;
}

static void note_bad(struct pfi_tput *tp, const struct pfi_error *e) {
  lock(tp);
  if (tp->bad++ == 0)
    tp->first_bad = *e;
  unlock(tp);
}

/* The device time now, as last set by pfi_tput_clock(). */
static double clock_now(struct pfi_tput *tp) {
  lock(tp);
  double t = tp->clk_dev + (tp->clk_adv ? mono_s() - tp->clk_mono : 0);
  unlock(tp);
  return t;
}

/* Queues a line for the matcher, or counts it lost when the queue is full
 * (the matcher fell behind). */
static int enqueue(struct pfi_tput *tp, const char *s, size_t n, double t,
                   long ln) {
  struct qline *q = malloc(sizeof *q + n + 1);
  if (!q)
    return PFI_ENOMEM;
  q->next = NULL;
  q->t = t;
  q->line = ln;
  q->n = n;
  memcpy(q->s, s, n);
  q->s[n] = 0;
  lock(tp);
  if (tp->qbytes + n > QUEUE_MAX_BYTES) {
    tp->dropped++;
    if (tp->bad++ == 0)
      pfi_error_setloc(&tp->first_bad, PFI_EPARSE, "<stdout>", ln, 1,
                       "line not matched: the --throughput regex fell "
                       "more than 8 MiB of output behind");
    unlock(tp);
    free(q);
    return 0;
  }
  if (tp->qt)
    tp->qt->next = q;
  else
    tp->qh = q;
  tp->qt = q;
  tp->qbytes += n;
  pthread_cond_broadcast(&tp->cv);
  unlock(tp);
  return 0;
}

static int handle_line(struct pfi_tput *tp, const char *s, size_t n,
                       double now_s, long ln);

/* A complete line: to the matcher thread when one runs, else at once. */
static int deliver(struct pfi_tput *tp, const char *s, size_t n, double now_s,
                   long ln) {
  if (tp->running)
    return enqueue(tp, s, n, now_s, ln);
  return handle_line(tp, s, n, now_s, ln);
}

static int handle_line(struct pfi_tput *tp, const char *s, size_t n,
                       double now_s, long ln) {
  struct pfi_error e;
  pfi_error_clear(&e);
  struct pfi_step st;
  if (tp->kind == PFI_TPUT_REGEX) {
    /* regexec needs a NUL-terminated string. */
    char *tmp = malloc(n + 1);
    if (!tmp)
      return PFI_ENOMEM;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    regmatch_t m[2];
    int r = regexec(&tp->re, tmp, 2, m, 0);
    int rc = 0;
    if (r == 0 && m[1].rm_so >= 0) {
      double v;
      char save = tmp[m[1].rm_eo];
      tmp[m[1].rm_eo] = 0;
      if (pfi_parse_double(tmp + m[1].rm_so, &v) == 0 && v >= 0) {
        st.t_s = now_s;
        st.job_t_s = st.tokens = st.step = st.loss = st.mfu = NAN;
        st.tokens_per_s = v;
        rc = push_step(tp, &st);
      } else {
        pfi_error_setloc(&e, PFI_EPARSE, "<stdout>", ln, (long)m[1].rm_so + 1,
                         "captured '%s' is not a non-negative number",
                         tmp + m[1].rm_so);
        note_bad(tp, &e);
      }
      tmp[m[1].rm_eo] = save;
    }
    free(tmp);
    return rc;
  }
  int el = 0;
  int r = pfi_jsonl_parse_line(tp->path, ln, s, n, &st, &el, &e);
  if (r == PFI_ENOMEM) /* not the line's fault: it must not be dropped */
    return r;
  if (r < 0) {
    note_bad(tp, &e);
    return 0;
  }
  if (r == 0)
    return 0;
  if (isfinite(st.job_t_s))
    st.t_s =
        el ? tp->dev_t0 + st.job_t_s : tp->dev_t0 + (st.job_t_s - tp->wall_t0);
  else
    st.t_s = now_s;
  if (!isfinite(st.tokens_per_s) && isfinite(st.tokens) &&
      isfinite(st.job_t_s)) {
    if (tp->hold && st.tokens >= tp->hold_tokens && st.job_t_s > tp->hold_t) {
      /* The drop was a glitch: the rate runs from the last good line, and
       * the jump up from the dropped value is not counted. */
      st.tokens_per_s =
          (st.tokens - tp->hold_tokens) / (st.job_t_s - tp->hold_t);
    } else if (isfinite(tp->prev_tokens) && st.tokens < tp->prev_tokens &&
               !tp->hold) {
      /* The counter went down: a reset. No rate on this line. */
      if (tp->resets++ == 0)
        pfi_error_setloc(&tp->first_reset, PFI_EPARSE, tp->path, ln, 1,
                         "cumulative \"tokens\" dropped from %.17g to %.17g "
                         "(counter reset; the step is not counted)",
                         tp->prev_tokens, st.tokens);
      tp->hold_tokens = tp->prev_tokens;
      tp->hold_t = tp->prev_t;
      tp->hold = 2;
    } else if (isfinite(tp->prev_tokens) && st.job_t_s > tp->prev_t &&
               st.tokens >= tp->prev_tokens) {
      st.tokens_per_s =
          (st.tokens - tp->prev_tokens) / (st.job_t_s - tp->prev_t);
    }
    if (tp->hold)
      tp->hold--; /* kept for the one line after the drop */
    tp->prev_tokens = st.tokens;
    tp->prev_t = st.job_t_s;
  } else if (isfinite(st.tokens) && isfinite(st.job_t_s)) {
    tp->prev_tokens = st.tokens;
    tp->prev_t = st.job_t_s;
  }
  return push_step(tp, &st) < 0 ? PFI_ENOMEM : 0;
}

/* An over-long line: its reports are lost, and it says so. */
static void overlong(struct pfi_tput *tp, long ln) {
  struct pfi_error e;
  pfi_error_setloc(
      &e, PFI_EPARSE, tp->kind == PFI_TPUT_JSONL ? tp->path : "<stdout>", ln, 1,
      "line longer than %d bytes: its report is lost", LINE_MAX_BYTES);
  note_bad(tp, &e);
}

/* Splits buf into lines, keeping a trailing partial line. */
static int consume(struct pfi_tput *tp, const char *buf, size_t n, double now_s,
                   int final) {
  size_t i = 0;
  while (i < n) {
    const char *nl = memchr(buf + i, '\n', n - i);
    size_t seg = nl ? (size_t)(nl - (buf + i)) : n - i;
    if (tp->npart + seg > LINE_MAX_BYTES) {
      tp->part_overflow = 1;
      tp->npart = 0;
    } else if (!tp->part_overflow) {
      if (tp->npart + seg + 1 > tp->cpart) {
        size_t nc = tp->cpart ? tp->cpart : 256;
        while (nc < tp->npart + seg + 1)
          nc *= 2;
        char *np = realloc(tp->part, nc);
        if (!np)
          return PFI_ENOMEM;
        tp->part = np;
        tp->cpart = nc;
      }
      memcpy(tp->part + tp->npart, buf + i, seg);
      tp->npart += seg;
    }
    i += seg;
    if (nl) {
      i++;
      int rc = 0;
      long ln = ++tp->line;
      if (tp->part_overflow)
        overlong(tp, ln);
      else
        rc = deliver(tp, tp->part ? tp->part : "", tp->npart, now_s, ln);
      tp->npart = 0;
      tp->part_overflow = 0;
      if (rc < 0)
        return rc;
    }
  }
  if (final && (tp->npart || tp->part_overflow)) {
    long ln = ++tp->line;
    int rc = 0;
    if (tp->part_overflow)
      overlong(tp, ln);
    else
      rc = deliver(tp, tp->part, tp->npart, now_s, ln);
    tp->npart = 0;
    tp->part_overflow = 0;
    return rc;
  }
  return 0;
}

int pfi_tput_feed(struct pfi_tput *tp, const char *buf, size_t n,
                  double now_s) {
  if (tp->kind != PFI_TPUT_REGEX)
    return 0;
  return consume(tp, buf, n, now_s, n == 0);
}

int pfi_tput_poll(struct pfi_tput *tp, double now_s, int final,
                  struct pfi_error *err) {
  if (tp->kind != PFI_TPUT_JSONL)
    return 0;
  int fd = open(tp->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0; /* the job has not created it yet */
    return pfi_error_set(err, PFI_EIO, "%s: %s", tp->path, strerror(errno));
  }
  int rc = 0;
  char buf[65536];
  for (;;) {
    ssize_t r = pread(fd, buf, sizeof buf, tp->off);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      rc = pfi_error_set(err, PFI_EIO, "%s: %s", tp->path, strerror(errno));
      break;
    }
    if (r == 0)
      break;
    tp->off += r;
    if ((rc = consume(tp, buf, (size_t)r, now_s, 0)) < 0) {
      pfi_error_set(err, rc, "out of memory");
      break;
    }
  }
  close(fd);
  if (rc == 0 && final && (rc = consume(tp, "", 0, now_s, 1)) < 0)
    pfi_error_set(err, rc, "out of memory");
  return rc;
}

size_t pfi_tput_take(struct pfi_tput *tp, const struct pfi_step **steps) {
  lock(tp);
  size_t n = tp->nsteps;
  struct pfi_step *t = tp->taken;
  size_t ct = tp->ctaken;
  tp->taken = tp->steps;
  tp->ctaken = tp->csteps;
  tp->steps = t;
  tp->csteps = ct;
  tp->nsteps = 0;
  unlock(tp);
  *steps = tp->taken;
  return n;
}

double pfi_tput_last_rate(const struct pfi_tput *tp) {
  struct pfi_tput *m = (struct pfi_tput *)tp; /* the lock only */
  lock(m);
  double r = tp->last_rate;
  unlock(m);
  return r;
}

void pfi_tput_clock(struct pfi_tput *tp, double dev_now_s, int advancing) {
  lock(tp);
  tp->clk_dev = dev_now_s;
  tp->clk_mono = mono_s();
  tp->clk_adv = advancing;
  unlock(tp);
}

void pfi_tput_tee(struct pfi_tput *tp, int out_fd, int log_fd) {
  tp->tee_out = out_fd;
  tp->tee_log = log_fd;
  tp->tee_log_err = 0;
}

long pfi_tput_tee_error(const struct pfi_tput *tp) { return tp->tee_log_err; }

/* The job's bytes to the log file (a regular file: writes do not block for
 * long); a failed write ends the log, and says why. */
static void tee_log(struct pfi_tput *tp, const char *buf, size_t n) {
  while (n && tp->tee_log >= 0) {
    ssize_t w = write(tp->tee_log, buf, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      tp->tee_log_err = w < 0 ? errno : EIO;
      tp->tee_log = -1;
      return;
    }
    buf += w;
    n -= (size_t)w;
  }
}

/* The job's bytes on to pfi's output, as if the job wrote there itself: a
 * reader that does not keep up slows the job, as it would without pfi. In
 * writes of at most PIPE_BUF bytes, each once the descriptor is writable,
 * so that a stop request (the wake pipe) is never kept waiting by a stalled
 * reader. Returns 1 when told to stop. A failed write (the reader gone)
 * ends the passing on; the job's output is still read and matched. */
static int tee_out(struct pfi_tput *tp, const char *buf, size_t n) {
  while (n && tp->tee_out >= 0) {
    struct pollfd pf[2] = {{tp->tee_out, POLLOUT, 0}, {tp->wake[0], POLLIN, 0}};
    int r = poll(pf, 2, -1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 || pf[1].revents)
      return 1;
    if (pf[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
      tp->tee_out = -1;
      return 0;
    }
    ssize_t w = write(tp->tee_out, buf, n < PIPE_BUF ? n : PIPE_BUF);
    if (w < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (w <= 0) {
      tp->tee_out = -1;
      return 0;
    }
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

static void *reader_main(void *arg) {
  struct pfi_tput *tp = arg;
  char buf[65536];
  for (;;) {
    struct pollfd pf[2] = {{tp->fd, POLLIN, 0}, {tp->wake[0], POLLIN, 0}};
    int r = poll(pf, 2, -1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 || pf[1].revents)
      break; /* told to stop */
    ssize_t k = read(tp->fd, buf, sizeof buf);
    if (k < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (k > 0)
      tee_log(tp, buf, (size_t)k);
    if (k <= 0 || consume(tp, buf, (size_t)k, clock_now(tp), 0) < 0)
      break;
    if (tee_out(tp, buf, (size_t)k))
      break;
  }
  consume(tp, "", 0, clock_now(tp), 1);
  lock(tp);
  tp->eof = 1;
  pthread_cond_broadcast(&tp->cv);
  unlock(tp);
  return NULL;
}

static void *matcher_main(void *arg) {
  struct pfi_tput *tp = arg;
  for (;;) {
    lock(tp);
    while (!tp->qh && !tp->eof && !tp->stop)
      pthread_cond_wait(&tp->cv, &tp->mu);
    if (tp->stop || !tp->qh) {
      tp->mt_done = 1;
      pthread_cond_broadcast(&tp->cv);
      unlock(tp);
      return NULL;
    }
    struct qline *q = tp->qh;
    tp->qh = q->next;
    if (!tp->qh)
      tp->qt = NULL;
    tp->qbytes -= q->n;
    unlock(tp);
    handle_line(tp, q->s, q->n, q->t, q->line);
    free(q);
  }
}

int pfi_tput_attach(struct pfi_tput *tp, int fd, struct pfi_error *err) {
  if (tp->kind != PFI_TPUT_REGEX || tp->running || tp->abandoned)
    return pfi_error_set(err, PFI_EINVAL,
                         "a stream attaches to an idle regex collector only");
  if (pipe2(tp->wake, O_CLOEXEC) != 0)
    return pfi_error_set(err, PFI_EIO, "pipe: %s", strerror(errno));
  tp->fd = fd;
  tp->eof = tp->stop = tp->mt_done = 0;
  tp->dropped = 0;
  /* The threads take no signals: the sweep's handlers run on the thread
   * that waits on the device, whatever the matcher is doing. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = pthread_create(&tp->rd, NULL, reader_main, tp);
  int r2 = r == 0 ? pthread_create(&tp->mt, NULL, matcher_main, tp) : r;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r2 != 0) {
    if (r == 0) {
      (void)!write(tp->wake[1], "x", 1);
      pthread_join(tp->rd, NULL);
    }
    close(tp->wake[0]);
    close(tp->wake[1]);
    tp->wake[0] = tp->wake[1] = tp->fd = -1;
    return pfi_error_set(err, PFI_ENOMEM, "cannot start a thread: %s",
                         strerror(r2));
  }
  tp->running = 1;
  return 0;
}

/* Waits (real time) until the matcher is done or `until` (monotonic). */
static int wait_matcher(struct pfi_tput *tp, double until) {
  lock(tp);
  while (!tp->mt_done && mono_s() < until) {
    unlock(tp);
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    lock(tp);
  }
  int done = tp->mt_done;
  unlock(tp);
  return done;
}

int pfi_tput_detach(struct pfi_tput *tp, double timeout_s,
                    struct pfi_error *err) {
  if (!tp->running)
    return 0;
  int rc = 0;
  double t0 = mono_s();
  if (!wait_matcher(tp, t0 + timeout_s)) {
    /* The job's output did not end (a process outside its group holds the
     * pipe), or the matcher is slow: stop both, and lose what is left. */
    lock(tp);
    tp->stop = 1;
    pthread_cond_broadcast(&tp->cv);
    unlock(tp);
    (void)!write(tp->wake[1], "x", 1);
    if (!wait_matcher(tp, mono_s() + 1.0)) {
      tp->abandoned = 1;
      (void)!write(tp->wake[1], "x", 1);
      pthread_join(tp->rd, NULL);
      pthread_detach(tp->mt);
      tp->running = 0;
      return pfi_error_set(err, PFI_EBUSY,
                           "the --throughput regex did not finish matching "
                           "a line within %g s; this run's reports are lost",
                           timeout_s + 1.0);
    }
  }
  (void)!write(tp->wake[1], "x", 1);
  pthread_join(tp->rd, NULL);
  pthread_join(tp->mt, NULL);
  tp->running = 0;
  /* Lines left in the queue when stopped are lost. */
  long left = 0;
  for (struct qline *q = tp->qh, *nx; q; q = nx) {
    nx = q->next;
    free(q);
    left++;
  }
  tp->qh = tp->qt = NULL;
  tp->qbytes = 0;
  if (left) {
    struct pfi_error e;
    pfi_error_setloc(&e, PFI_EPARSE, "<stdout>", tp->line, 1,
                     "%ld line(s) not matched before the run ended", left);
    note_bad(tp, &e);
    lock(tp);
    tp->bad += left - 1;
    unlock(tp);
  }
  close(tp->fd);
  close(tp->wake[0]);
  close(tp->wake[1]);
  tp->fd = tp->wake[0] = tp->wake[1] = -1;
  return rc;
}

long pfi_tput_resets(const struct pfi_tput *tp, struct pfi_error *first) {
  if (first && tp->resets)
    *first = tp->first_reset;
  return tp->resets;
}

long pfi_tput_bad_lines(const struct pfi_tput *tp, struct pfi_error *first) {
  struct pfi_tput *m = (struct pfi_tput *)tp; /* the lock only */
  lock(m);
  long n = tp->bad;
  if (first && n)
    *first = tp->first_bad;
  unlock(m);
  return n;
}
