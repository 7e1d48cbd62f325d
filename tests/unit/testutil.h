/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Shared by the unit tests: cmocka plus asserts that print both values. */
#ifndef PFI_TESTUTIL_H
#define PFI_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

/* |a - b| <= tol, printing both values on failure. */
#define ASSERT_NEAR(a, b, tol)                                                 \
  do {                                                                         \
    double a_ = (a), b_ = (b), t_ = (tol);                                     \
    if (!(fabs(a_ - b_) <= t_))                                                \
      fail_msg("%s = %.12g, expected %s = %.12g (tolerance %g)", #a, a_, #b,  \
               b_, t_);                                                        \
  } while (0)

#define ASSERT_EQ_INT(a, b)                                                    \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    if (a_ != b_)                                                              \
      fail_msg("%s = %lld, expected %s = %lld", #a, a_, #b, b_);               \
  } while (0)

/* Runs kid(k, ctx) in n forked processes (at most 64) released together
 * (they block on a pipe until its write end closes), each exiting with
 * kid's value (0: success); returns how many did not exit 0. For tests of
 * opens that race (store.c, dbtable.h). Needs <sys/wait.h>, <unistd.h>. */
static inline int pfi_test_race(int n, int (*kid)(int k, void *ctx),
                                void *ctx) {
  int gate[2];
  pid_t pid[64];
  assert_true(n > 0 && n <= 64);
  assert_int_equal(pipe(gate), 0);
  for (int k = 0; k < n; k++) {
    pid[k] = fork();
    assert_true(pid[k] >= 0);
    if (pid[k] == 0) {
      char c;
      close(gate[1]);
      if (read(gate[0], &c, 1) != 0)
        _exit(3);
      _exit(kid(k, ctx));
    }
  }
  close(gate[0]);
  close(gate[1]); /* all read EOF at once */
  int failed = 0;
  for (int k = 0; k < n; k++) {
    int ws = 0;
    assert_int_equal(waitpid(pid[k], &ws, 0), pid[k]);
    failed += !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  }
  return failed;
}

#endif
