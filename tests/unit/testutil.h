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

#endif
