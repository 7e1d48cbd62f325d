/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The throughput collector's parts (throughput.c: the collector, its
 * lines and rates; throughput_stream.c: a job's stdout attached, read and
 * matched on threads of their own; throughput_parse.c: the JSONL fields of
 * a report line and the --throughput regex's safety checks): the handle
 * and the helpers they share. */
#ifndef PFI_SWEEP_THROUGHPUT_INT_H
#define PFI_SWEEP_THROUGHPUT_INT_H

#include <pthread.h>
#include <regex.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "pfi/error.h"
#include "pfi/throughput.h"

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

static inline double pfi__tput_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void pfi__tput_lock(struct pfi_tput *tp) {
  pthread_mutex_lock(&tp->mu);
}
static inline void pfi__tput_unlock(struct pfi_tput *tp) {
  pthread_mutex_unlock(&tp->mu);
}

/* throughput.c: a complete line handled at once (parsed or matched, its
 * step collected); buf split into lines, a trailing partial line kept
 * (final: it too handled); a bad line counted, the first kept. */
int pfi__tput_handle_line(struct pfi_tput *tp, const char *s, size_t n,
                          double now_s, long ln);
int pfi__tput_consume(struct pfi_tput *tp, const char *buf, size_t n,
                      double now_s, int final);
void pfi__tput_note_bad(struct pfi_tput *tp, const struct pfi_error *e);

/* throughput_stream.c: a line queued for the matcher thread (or counted
 * lost when the queue is full); 0 or PFI_ENOMEM. */
int pfi__tput_enqueue(struct pfi_tput *tp, const char *s, size_t n, double t,
                      long ln);

/* throughput_parse.c: why the --throughput regex RE is refused (its
 * matching could take unbounded time or memory), or NULL. */
const char *pfi__tput_regex_unsafe(const char *re);

#endif
