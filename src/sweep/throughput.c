/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The job's throughput reports: JSONL file or a regex on its stdout. A
 * stream attached is read and matched in throughput_stream.c, a line's
 * JSONL fields parsed in throughput_parse.c. */
#include "pfi/throughput.h"

#include "pfi/csv.h"
#include "throughput_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Longest line kept; a longer one is malformed (a job writing megabytes
 * without a newline is not reporting throughput). */
#define LINE_MAX_BYTES 65536

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
    const char *why = pfi__tput_regex_unsafe(spec + 6);
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
  pfi__tput_lock(tp);
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
  pfi__tput_unlock(tp);
  return rc;
}

void pfi__tput_note_bad(struct pfi_tput *tp, const struct pfi_error *e) {
  pfi__tput_lock(tp);
  if (tp->bad++ == 0)
    tp->first_bad = *e;
  pfi__tput_unlock(tp);
}

/* A complete line: to the matcher thread when one runs, else at once. */
static int deliver(struct pfi_tput *tp, const char *s, size_t n, double now_s,
                   long ln) {
  if (tp->running)
    return pfi__tput_enqueue(tp, s, n, now_s, ln);
  return pfi__tput_handle_line(tp, s, n, now_s, ln);
}

int pfi__tput_handle_line(struct pfi_tput *tp, const char *s, size_t n,
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
        pfi__tput_note_bad(tp, &e);
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
    pfi__tput_note_bad(tp, &e);
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
  pfi__tput_note_bad(tp, &e);
}

/* Splits buf into lines, keeping a trailing partial line. */
int pfi__tput_consume(struct pfi_tput *tp, const char *buf, size_t n,
                      double now_s, int final) {
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
  return pfi__tput_consume(tp, buf, n, now_s, n == 0);
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
    if ((rc = pfi__tput_consume(tp, buf, (size_t)r, now_s, 0)) < 0) {
      pfi_error_set(err, rc, "out of memory");
      break;
    }
  }
  close(fd);
  if (rc == 0 && final && (rc = pfi__tput_consume(tp, "", 0, now_s, 1)) < 0)
    pfi_error_set(err, rc, "out of memory");
  return rc;
}

size_t pfi_tput_take(struct pfi_tput *tp, const struct pfi_step **steps) {
  pfi__tput_lock(tp);
  size_t n = tp->nsteps;
  struct pfi_step *t = tp->taken;
  size_t ct = tp->ctaken;
  tp->taken = tp->steps;
  tp->ctaken = tp->csteps;
  tp->steps = t;
  tp->csteps = ct;
  tp->nsteps = 0;
  pfi__tput_unlock(tp);
  *steps = tp->taken;
  return n;
}

double pfi_tput_last_rate(const struct pfi_tput *tp) {
  struct pfi_tput *m = (struct pfi_tput *)tp; /* the lock only */
  pfi__tput_lock(m);
  double r = tp->last_rate;
  pfi__tput_unlock(m);
  return r;
}

void pfi_tput_clock(struct pfi_tput *tp, double dev_now_s, int advancing) {
  pfi__tput_lock(tp);
  tp->clk_dev = dev_now_s;
  tp->clk_mono = pfi__tput_mono_s();
  tp->clk_adv = advancing;
  pfi__tput_unlock(tp);
}

void pfi_tput_tee(struct pfi_tput *tp, int out_fd, int log_fd) {
  tp->tee_out = out_fd;
  tp->tee_log = log_fd;
  tp->tee_log_err = 0;
}

long pfi_tput_tee_error(const struct pfi_tput *tp) { return tp->tee_log_err; }

long pfi_tput_resets(const struct pfi_tput *tp, struct pfi_error *first) {
  if (first && tp->resets)
    *first = tp->first_reset;
  return tp->resets;
}

long pfi_tput_bad_lines(const struct pfi_tput *tp, struct pfi_error *first) {
  struct pfi_tput *m = (struct pfi_tput *)tp; /* the lock only */
  pfi__tput_lock(m);
  long n = tp->bad;
  if (first && n)
    *first = tp->first_bad;
  pfi__tput_unlock(m);
  return n;
}
