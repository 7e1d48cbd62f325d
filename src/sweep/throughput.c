/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The job's throughput reports: JSONL file or a regex on its stdout. */
#include "pfi/throughput.h"

#include "pfi/csv.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Longest line kept; a longer one is malformed (a job writing megabytes
 * without a newline is not reporting throughput). */
#define LINE_MAX_BYTES 65536

struct pfi_tput {
  enum pfi_tput_kind kind;
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
  struct pfi_step *steps;
  size_t nsteps, csteps;
  double last_rate;
  long bad;
  struct pfi_error first_bad;
};

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
  int rc;
  json_t *o = NULL;
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
  if (strncmp(spec, "jsonl:", 6) == 0 && spec[6]) {
    tp->kind = PFI_TPUT_JSONL;
    tp->path = strdup(spec + 6);
    if (!tp->path) {
      free(tp);
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    }
  } else if (strncmp(spec, "regex:", 6) == 0 && spec[6]) {
    tp->kind = PFI_TPUT_REGEX;
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
  if (tp->nsteps == tp->csteps) {
    size_t nc = tp->csteps ? 2 * tp->csteps : 64;
    struct pfi_step *nv = realloc(tp->steps, nc * sizeof *nv);
    if (!nv)
      return PFI_ENOMEM;
    tp->steps = nv;
    tp->csteps = nc;
  }
  tp->steps[tp->nsteps++] = *s;
  if (isfinite(s->tokens_per_s))
    tp->last_rate = s->tokens_per_s;
  return 0;
}

static void note_bad(struct pfi_tput *tp, const struct pfi_error *e) {
  if (tp->bad++ == 0)
    tp->first_bad = *e;
}

static int handle_line(struct pfi_tput *tp, const char *s, size_t n,
                       double now_s) {
  tp->line++;
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
        pfi_error_setloc(
            &e, PFI_EPARSE, "<stdout>", tp->line, (long)m[1].rm_so + 1,
            "captured '%s' is not a non-negative number", tmp + m[1].rm_so);
        note_bad(tp, &e);
      }
      tmp[m[1].rm_eo] = save;
    }
    free(tmp);
    return rc;
  }
  int el = 0;
  int r = pfi_jsonl_parse_line(tp->path, tp->line, s, n, &st, &el, &e);
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
  if (!isfinite(st.tokens_per_s) && isfinite(st.tokens)) {
    if (isfinite(tp->prev_tokens) && st.job_t_s > tp->prev_t &&
        st.tokens >= tp->prev_tokens)
      st.tokens_per_s =
          (st.tokens - tp->prev_tokens) / (st.job_t_s - tp->prev_t);
  }
  if (isfinite(st.tokens) && isfinite(st.job_t_s)) {
    tp->prev_tokens = st.tokens;
    tp->prev_t = st.job_t_s;
  }
  return push_step(tp, &st) < 0 ? PFI_ENOMEM : 0;
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
      if (tp->part_overflow) {
        struct pfi_error e;
        tp->line++;
        pfi_error_setloc(
            &e, PFI_EPARSE, tp->kind == PFI_TPUT_JSONL ? tp->path : "<stdout>",
            tp->line, 1, "line longer than %d bytes", LINE_MAX_BYTES);
        note_bad(tp, &e);
      } else {
        rc = handle_line(tp, tp->part ? tp->part : "", tp->npart, now_s);
      }
      tp->npart = 0;
      tp->part_overflow = 0;
      if (rc < 0)
        return rc;
    }
  }
  if (final && (tp->npart || tp->part_overflow)) {
    int rc =
        tp->part_overflow ? 0 : handle_line(tp, tp->part, tp->npart, now_s);
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
  size_t n = tp->nsteps;
  *steps = tp->steps;
  tp->nsteps = 0;
  return n;
}

double pfi_tput_last_rate(const struct pfi_tput *tp) { return tp->last_rate; }

long pfi_tput_bad_lines(const struct pfi_tput *tp, struct pfi_error *first) {
  if (first && tp->bad)
    *first = tp->first_bad;
  return tp->bad;
}
