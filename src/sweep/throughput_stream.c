/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A job's stdout attached to a regex collector (pfi_tput_attach): a reader
 * thread drains it into a queue of lines, passing the bytes on (tee), and a
 * matcher thread runs the regex on them. */
#include "pfi/throughput.h"

#include "throughput_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Text of stdout lines waiting for the regex matcher, at most: a matcher
 * that falls behind loses lines (counted), the job's pipe never fills. */
#define QUEUE_MAX_BYTES (8u << 20)

/* The device time now, as last set by pfi_tput_clock(). */
static double clock_now(struct pfi_tput *tp) {
  pfi__tput_lock(tp);
  double t =
      tp->clk_dev + (tp->clk_adv ? pfi__tput_mono_s() - tp->clk_mono : 0);
  pfi__tput_unlock(tp);
  return t;
}

/* Queues a line for the matcher, or counts it lost when the queue is full
 * (the matcher fell behind). */
int pfi__tput_enqueue(struct pfi_tput *tp, const char *s, size_t n, double t,
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
  pfi__tput_lock(tp);
  if (tp->qbytes + n > QUEUE_MAX_BYTES) {
    tp->dropped++;
    if (tp->bad++ == 0)
      pfi_error_setloc(&tp->first_bad, PFI_EPARSE, "<stdout>", ln, 1,
                       "line not matched: the --throughput regex fell "
                       "more than 8 MiB of output behind");
    pfi__tput_unlock(tp);
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
  pfi__tput_unlock(tp);
  return 0;
}

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
    if (k <= 0 || pfi__tput_consume(tp, buf, (size_t)k, clock_now(tp), 0) < 0)
      break;
    if (tee_out(tp, buf, (size_t)k))
      break;
  }
  pfi__tput_consume(tp, "", 0, clock_now(tp), 1);
  pfi__tput_lock(tp);
  tp->eof = 1;
  pthread_cond_broadcast(&tp->cv);
  pfi__tput_unlock(tp);
  return NULL;
}

static void *matcher_main(void *arg) {
  struct pfi_tput *tp = arg;
  for (;;) {
    pfi__tput_lock(tp);
    while (!tp->qh && !tp->eof && !tp->stop)
      pthread_cond_wait(&tp->cv, &tp->mu);
    if (tp->stop || !tp->qh) {
      tp->mt_done = 1;
      pthread_cond_broadcast(&tp->cv);
      pfi__tput_unlock(tp);
      return NULL;
    }
    struct qline *q = tp->qh;
    tp->qh = q->next;
    if (!tp->qh)
      tp->qt = NULL;
    tp->qbytes -= q->n;
    pfi__tput_unlock(tp);
    pfi__tput_handle_line(tp, q->s, q->n, q->t, q->line);
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
  pfi__tput_lock(tp);
  while (!tp->mt_done && pfi__tput_mono_s() < until) {
    pfi__tput_unlock(tp);
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pfi__tput_lock(tp);
  }
  int done = tp->mt_done;
  pfi__tput_unlock(tp);
  return done;
}

int pfi_tput_detach(struct pfi_tput *tp, double timeout_s,
                    struct pfi_error *err) {
  if (!tp->running)
    return 0;
  int rc = 0;
  double t0 = pfi__tput_mono_s();
  if (!wait_matcher(tp, t0 + timeout_s)) {
    /* The job's output did not end (a process outside its group holds the
     * pipe), or the matcher is slow: stop both, and lose what is left. */
    pfi__tput_lock(tp);
    tp->stop = 1;
    pthread_cond_broadcast(&tp->cv);
    pfi__tput_unlock(tp);
    (void)!write(tp->wake[1], "x", 1);
    if (!wait_matcher(tp, pfi__tput_mono_s() + 1.0)) {
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
    pfi__tput_note_bad(tp, &e);
    pfi__tput_lock(tp);
    tp->bad += left - 1;
    pfi__tput_unlock(tp);
  }
  close(tp->fd);
  close(tp->wake[0]);
  close(tp->wake[1]);
  tp->fd = tp->wake[0] = tp->wake[1] = -1;
  return rc;
}
