/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pfi_parse_double() takes an exact fast path for plain decimals; the
 * reference it must match bit for bit is the C library's strtod(). The
 * inputs are generated from a fixed seed: plain decimals of every length
 * around the fast path's limits (19 digits, 2^53, 10^22), exponents,
 * signs, leading zeros, spaces; plus texts the fast path must hand over
 * (hex, inf, nan, long significands) or reject.
 */
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/duration.h"
#include "testutil.h"

static unsigned long long st = 0x9E3779B97F4A7C15ULL;
static unsigned long long next(void) {
  st ^= st << 13;
  st ^= st >> 7;
  st ^= st << 17;
  return st;
}

/* Compares with strtod on a string that strtod consumes entirely. */
static void check_one(const char *s) {
  char *end;
  double ref = strtod(s, &end);
  double v = 12345;
  int rc = pfi_parse_double(s, &v);
  int none = end == s; /* strtod converted nothing */
  while (*end == ' ' || *end == '\t')
    end++;
  if (none || *end || !isfinite(ref)) {
    if (rc != PFI_EPARSE)
      fail_msg("'%s' accepted as %.17g, strtod stops or overflows", s, v);
    return;
  }
  if (rc != 0)
    fail_msg("'%s' rejected, strtod gives %.17g", s, ref);
  if (memcmp(&v, &ref, sizeof v) != 0)
    fail_msg("'%s': got %.17g, strtod gives %.17g", s, v, ref);
}

static void random_decimals_match_strtod(void **state) {
  (void)state;
  char buf[96];
  for (int i = 0; i < 300000; i++) {
    int w = 0;
    if (next() % 8 == 0)
      buf[w++] = ' ';
    unsigned r = (unsigned)(next() % 4);
    if (r == 0)
      buf[w++] = '-';
    else if (r == 1)
      buf[w++] = '+';
    int nint = (int)(next() % 22), nfrac = (int)(next() % 22);
    for (int k = 0; k < nint; k++)
      buf[w++] = (char)('0' + next() % 10);
    if (nfrac || next() % 2) {
      buf[w++] = '.';
      for (int k = 0; k < nfrac; k++)
        buf[w++] = (char)('0' + next() % 10);
    }
    if (next() % 3 == 0)
      w += snprintf(buf + w, sizeof buf - (size_t)w, "e%d",
                    (int)(next() % 60) - 30);
    if (next() % 8 == 0)
      buf[w++] = ' ';
    buf[w] = '\0';
    check_one(buf);
  }
}

static void edge_cases(void **state) {
  (void)state;
  static const char *const cases[] = {"0",
                                      "-0",
                                      "0.0",
                                      "1",
                                      "1.",
                                      ".5",
                                      "-.5",
                                      "1e22",
                                      "1e23",
                                      "1e-22",
                                      "1e-23",
                                      "9007199254740992",
                                      "9007199254740993",
                                      "9007199254740993.0",
                                      "1234567890123456789",
                                      "12345678901234567890",
                                      "0.1",
                                      "0.3",
                                      "123.456e-5",
                                      "4.9406564584124654e-324",
                                      "1.7976931348623157e308",
                                      "1e309",
                                      "0x1p3",
                                      "0x10",
                                      "inf",
                                      "-infinity",
                                      "nan",
                                      "1e",
                                      "1e+",
                                      "e5",
                                      ".",
                                      "-",
                                      "+",
                                      "1.2.3",
                                      "1,5",
                                      "12abc",
                                      "  7.25  ",
                                      "00000000000000000000000001.5",
                                      "0.00000000000000000000000001",
                                      "22.2222222222222222222"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    check_one(cases[i]);
}

/* A duration whose unit takes it past the largest double (1e307 min is
 * 6e308 s: infinity) is refused, not taken as an infinite duration (the
 * fuzz target found it accepted for the kind without an upper bound). */
static void duration_overflow(void **state) {
  (void)state;
  double v = -1;
  struct pfi_error err;
  assert_int_equal(pfi_parse_duration("1e307min", PFI_DUR_ANY, &v, &err),
                   PFI_EINVAL);
  assert_int_equal(pfi_parse_duration("1e306h", PFI_DUR_ANY, &v, &err),
                   PFI_EINVAL);
  assert_int_equal(pfi_parse_duration("90min", PFI_DUR_ANY, &v, &err), 0);
  ASSERT_NEAR(v, 5400, 0);
}

/* A run length must say its unit: "30" would be 30 s where the default is
 * written "30m". Every other kind still reads a plain number as seconds. */
static void duration_needs_unit(void **state) {
  (void)state;
  double v = -1;
  struct pfi_error err;
  assert_int_equal(pfi_parse_duration("30", PFI_DUR_DURATION, &v, &err),
                   PFI_EINVAL);
  assert_non_null(strstr(err.msg, "30s or 30m"));
  ASSERT_NEAR(v, -1, 0);
  assert_int_equal(pfi_parse_duration("30m", PFI_DUR_DURATION, &v, &err), 0);
  ASSERT_NEAR(v, 1800, 0);
  assert_int_equal(pfi_parse_duration("30s", PFI_DUR_DURATION, &v, &err), 0);
  ASSERT_NEAR(v, 30, 0);
  assert_int_equal(pfi_parse_duration("30", PFI_DUR_INTERVAL, &v, &err), 0);
  ASSERT_NEAR(v, 30, 0);
  assert_int_equal(pfi_parse_duration("30", PFI_DUR_COOLDOWN, &v, &err), 0);
  ASSERT_NEAR(v, 30, 0);
  assert_int_equal(pfi_parse_duration("30", PFI_DUR_ANY, &v, &err), 0);
  ASSERT_NEAR(v, 30, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(duration_needs_unit),
      cmocka_unit_test(random_decimals_match_strtod),
      cmocka_unit_test(edge_cases),
      cmocka_unit_test(duration_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
