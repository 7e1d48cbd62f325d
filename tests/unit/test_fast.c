/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fast paths against their references:
 *  - pfi_fmt_g() against glibc's printf("%.*g") byte for byte, every
 *    precision 1..17, on a million random doubles (random bit patterns,
 *    decimals of a few digits, values near powers of ten and two, halfway
 *    cases);
 *  - pfi_fmt_shortest(): reads back (strtod) as the same double, and equals
 *    printf's "%.*g" at the smallest precision that reads back, except at
 *    powers of two where it may be shorter (never longer);
 *  - pfi_scan_decimal() against strtod on random plain decimals, and its
 *    refusals;
 *  - the curves reader's job-name table: rows of thousands of jobs in
 *    adjacent, interleaved and shuffled order give the same curves;
 *  - a prepared oracle (pfi_oracle_prepare + run) and an allocation plan
 *    against pfi_oracle_solve / pfi_alloc_run from scratch, bit for bit, on
 *    random concave and non-concave instances at many budgets;
 *  - pfi_sim_run (library hulls sorted once, counting sorts, copied
 *    workloads) against the same simulation from scratch through the public
 *    functions, on a library with tied slopes and ratios.
 */
#include <float.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/alloc.h"
#include "pfi/curve.h"
#include "pfi/fmt.h"
#include "pfi/oracle.h"
#include "pfi/prom.h"
#include "pfi/sim.h"
#include "testutil.h"

/* Random doubles per test: a million in the normal build, a tenth under
 * the sanitizers (each printf call there costs ten times as much). */
#if defined(__SANITIZE_ADDRESS__)
#define NDOUBLES 100000
#else
#define NDOUBLES 1000000
#endif

static uint64_t rs = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return rs;
}
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* A random double of one of several kinds. */
static double random_double(long i) {
  double v;
  uint64_t u = rnd();
  switch (i % 6) {
  case 0: /* any bit pattern (nan and inf included) */
    memcpy(&v, &u, sizeof v);
    break;
  case 1: /* uniform mantissa, decimal exponent -20..25 */
    v = urand() * pow(10, (int)(rnd() % 46) - 20);
    break;
  case 2: /* a decimal of up to 8 digits */
    v = (double)(rnd() % 100000000) / pow(10, (int)(rnd() % 9));
    break;
  case 3: /* powers of two and their neighbours */
    v = ldexp(1.0, (int)(rnd() % 2100) - 1074);
    if (rnd() & 1)
      v = nextafter(v, (rnd() & 1) ? 0 : INFINITY);
    break;
  case 4: /* near a power of ten: carries into the next decade */
    v = pow(10, (int)(rnd() % 40) - 15) *
        (1 - ldexp((double)(rnd() % 64), -50));
    break;
  default: /* an exact halfway case of some precision: k + 1/2 */
    v = (double)(rnd() % 100000000) + 0.5;
    v = ldexp(v, (int)(rnd() % 20) - 10);
    break;
  }
  return (rnd() & 1) ? -v : v;
}

static void test_fmt_g_vs_printf(void **state) {
  (void)state;
  char a[64], b[64];
  long bad = 0;
  for (long i = 0; i < NDOUBLES; i++) {
    double v = random_double(i);
    /* %.10g (the tables' format) and %.17g always, one other precision
     * in turn. */
    int precs[3] = {10, 17, 1 + (int)(i % 17)};
    for (int k = 0; k < 3; k++) {
      snprintf(a, sizeof a, "%.*g", precs[k], v);
      size_t n = pfi_fmt_g(b, v, precs[k]);
      if (strcmp(a, b) != 0 || n != strlen(a)) {
        if (bad++ < 5)
          print_error("%%.%dg of %a: printf '%s', pfi_fmt_g '%s'\n", precs[k],
                      v, a, b);
      }
    }
  }
  ASSERT_EQ_INT(bad, 0);
}

static void test_fmt_shortest(void **state) {
  (void)state;
  char a[64], b[64];
  long bad = 0, shorter = 0;
  for (long i = 0; i < NDOUBLES / 2; i++) {
    double v = random_double(i);
    pfi_fmt_shortest(b, v);
    if (!isfinite(v)) {
      snprintf(a, sizeof a, "%.17g", v);
      if (strcmp(a, b) != 0 && bad++ < 5)
        print_error("%a: '%s', expected '%s'\n", v, b, a);
      continue;
    }
    /* %.17g always reads back; the shortest must too. */
    snprintf(a, sizeof a, "%.17g", v);
    assert_true(strtod(a, NULL) == v);
    if (strtod(b, NULL) != v) {
      if (bad++ < 5)
        print_error("%a: '%s' reads back as %a\n", v, b, strtod(b, NULL));
      continue;
    }
    int pmin = 17;
    for (int p = 1; p <= 17; p++) {
      snprintf(a, sizeof a, "%.*g", p, v);
      if (strtod(a, NULL) == v) {
        pmin = p;
        break;
      }
    }
    snprintf(a, sizeof a, "%.*g", pmin, v);
    if (strcmp(a, b) == 0)
      continue;
    /* Only a power of two (lower neighbour twice as near) may be shorter. */
    int e;
    double fr = frexp(fabs(v), &e);
    size_t da = strcspn(a + (a[0] == '-'), "e"),
           db = strcspn(b + (b[0] == '-'), "e");
    if (fr == 0.5 && db < da) {
      shorter++;
      continue;
    }
    if (bad++ < 5)
      print_error("%a: shortest '%s', printf's shortest '%s'\n", v, b, a);
  }
  ASSERT_EQ_INT(bad, 0);
  /* Values worked by hand. */
  pfi_fmt_shortest(b, 0.1);
  assert_string_equal(b, "0.1");
  pfi_fmt_shortest(b, 1e23);
  assert_string_equal(b, "1e+23");
  pfi_fmt_shortest(b, 5e-324);
  assert_string_equal(b, "5e-324");
  pfi_fmt_shortest(b, -0.0);
  assert_string_equal(b, "-0");
  pfi_fmt_shortest(b, 123456.0);
  assert_string_equal(b, "123456");
  /* Exact binary halves round to even, as printf does. */
  pfi_fmt_g(b, 2.5, 1);
  assert_string_equal(b, "2");
  pfi_fmt_g(b, 3.5, 1);
  assert_string_equal(b, "4");
  pfi_fmt_g(b, 0.125, 2);
  assert_string_equal(b, "0.12");
  pfi_fmt_g(b, 1234.5678, 10);
  assert_string_equal(b, "1234.5678");
  pfi_fmt_g(b, 9999999999.5, 10);
  assert_string_equal(b, "1e+10");
}

static void test_scan_decimal(void **state) {
  (void)state;
  char s[64];
  long bad = 0;
  for (long i = 0; i < NDOUBLES / 4; i++) {
    int ip = (int)(rnd() % 12), fp = (int)(rnd() % 12);
    size_t n = 0;
    if (rnd() % 4 == 0)
      s[n++] = '-';
    for (int k = 0; k < ip; k++)
      s[n++] = (char)('0' + rnd() % 10);
    if (fp > 0 || rnd() % 8 == 0) {
      s[n++] = '.';
      for (int k = 0; k < fp; k++)
        s[n++] = (char)('0' + rnd() % 10);
    }
    if (rnd() % 3 == 0)
      n += (size_t)sprintf(s + n, "%s%s%d", rnd() & 1 ? "e" : "E",
                           rnd() % 3 == 0 ? "-"
                           : rnd() & 1    ? "+"
                                          : "",
                           (int)(rnd() % 40));
    s[n] = '\0';
    double v = 0, ref = strtod(s, NULL);
    int ok = pfi_scan_decimal(s, &v);
    if (ip + fp == 0) {
      if (ok && bad++ < 5)
        print_error("'%s' accepted\n", s);
      continue;
    }
    /* Some are refused (too long, too large a power of ten), none is
     * wrong. */
    if (ok && memcmp(&v, &ref, sizeof v) != 0 && bad++ < 5)
      print_error("'%s': %a, strtod %a\n", s, v, ref);
    if (!ok && ip + fp <= 15 && !strpbrk(s, "eE") && bad++ < 5)
      print_error("'%s' refused\n", s);
  }
  ASSERT_EQ_INT(bad, 0);
  double v;
  static const char *const refused[] = {"",
                                        "-",
                                        ".",
                                        "+1",
                                        "1e",
                                        "1e+",
                                        " 1",
                                        "1 ",
                                        "0x1",
                                        "nan",
                                        "inf",
                                        "1.2.3",
                                        "--1",
                                        "1,5",
                                        "e5",
                                        "1e99",
                                        "12345678901234567890"};
  for (size_t k = 0; k < sizeof refused / sizeof *refused; k++)
    if (pfi_scan_decimal(refused[k], &v))
      fail_msg("'%s' accepted", refused[k]);
  assert_int_equal(pfi_scan_decimal("9007199254740993", &v), 0); /* > 2^53 */
  assert_int_equal(pfi_scan_decimal("0.1", &v), 1);
  assert_true(v == 0.1);
  assert_int_equal(pfi_scan_decimal("-2.5", &v), 1);
  assert_true(v == -2.5);
  assert_int_equal(pfi_scan_decimal("1.5e+06", &v), 1);
  assert_true(v == 1.5e6);
  assert_int_equal(pfi_scan_decimal_n("67.351000 123", 9, &v), 1);
  assert_true(v == 67.351);
}

/* Curves of `jobs` jobs x 3 caps, rows in `order` (0 adjacent, 1 grouped
 * by cap, 2 shuffled); names of varied length around the 8-byte words. */
static char *curves_text(int jobs, int order, size_t *len) {
  size_t cap = (size_t)jobs * 3 * 96 + 64, n = 0;
  char *t = malloc(cap);
  n += (size_t)sprintf(t, "job,cap_w,power_w,tokens_per_s\n");
  int total = jobs * 3;
  int *row = malloc((size_t)total * sizeof *row);
  for (int r = 0; r < total; r++)
    row[r] = order == 0 ? r : (r % jobs) * 3 + r / jobs;
  if (order == 2)
    for (int r = total - 1; r > 0; r--) {
      int k = (int)(rnd() % (uint64_t)(r + 1)), tmp = row[r];
      row[r] = row[k];
      row[k] = tmp;
    }
  for (int r = 0; r < total; r++) {
    int j = row[r] / 3, c = row[r] % 3;
    /* A name of 1 + j % 23 characters: "j" then the number padded. */
    char name[40];
    int w = 1 + j % 23;
    snprintf(name, sizeof name, "%0*d", w > 12 ? 12 : w, j);
    char full[64];
    snprintf(full, sizeof full, "%.*s%s", w > 12 ? w - 12 : 0,
             "abcdefghijklmnop", name);
    n += (size_t)sprintf(t + n, "%s,%d,%d.5,%d.25\n", full, 200 + 100 * c,
                         1000 + j + 100 * c, 50 + j + 10 * c);
  }
  free(row);
  *len = n;
  return t;
}

/* pfi_scan_decimal_prefix() against strtod on the same bytes: random plain
 * decimals (leading zeros, up to 24 digits on either side of the point),
 * then a random byte and random digits, at random places in a buffer.
 * Every accepted number is strtod's double and pfi_scan_decimal_n()'s,
 * *end is where the plain decimal ends, and what is refused is refused by
 * pfi_scan_decimal_n() too, or has an exponent after it. */
static void test_scan_decimal_prefix(void **state) {
  (void)state;
  /* The tests after this one draw what they drew before it existed. */
  uint64_t saved = rs;
  static const char after[] = {',', '\n', '\0', 'x', ' ',     'e',    'E',
                               '.', '\r', '-',  '"', '9' + 1, '0' - 1};
  char buf[96];
  long bad = 0, accepted = 0;
  for (long i = 0; i < 2 * NDOUBLES; i++) {
    size_t at = (size_t)(rnd() % 16), n = at;
    int ip = (int)(rnd() % 25), fp = (int)(rnd() % 25);
    if (rnd() % 3 == 0)
      ip = (int)(rnd() % 9), fp = (int)(rnd() % 5); /* the usual sizes */
    if (rnd() % 4 == 0)
      buf[n++] = '-';
    int zeros = rnd() % 5 == 0 ? (int)(rnd() % 6) : 0;
    for (int k = 0; k < ip; k++)
      buf[n++] = (char)('0' + (k < zeros ? 0 : rnd() % 10));
    int dot = fp > 0 || rnd() % 8 == 0;
    if (dot) {
      buf[n++] = '.';
      for (int k = 0; k < fp; k++)
        buf[n++] = (char)('0' + rnd() % 10);
    }
    size_t numlen = n - at;
    buf[n] = after[rnd() % sizeof after];
    if ((!dot && buf[n] == '.') || (n == at && buf[n] == '-'))
      buf[n] = ','; /* a point would continue the number, a sign start it */
    n++;
    /* Digits after the byte that ends the number are not read. */
    for (size_t k = n, lim = n + (size_t)(rnd() % 9); k < lim; k++)
      buf[k] = (char)('0' + rnd() % 10);
    const char *s = buf + at, *end = NULL;
    double v = 12345, ref = 0, vn = 0;
    int ok = pfi_scan_decimal_prefix(s, &end, &v);
    if (end != s + numlen) {
      if (bad++ < 5)
        print_error("'%.*s': end at %td, expected %zu\n", (int)numlen, s,
                    end - s, numlen);
      continue;
    }
    char cp[96];
    memcpy(cp, s, numlen);
    cp[numlen] = '\0';
    ref = strtod(cp, NULL);
    int okn = pfi_scan_decimal_n(s, numlen, &vn);
    char nx = s[numlen];
    if (ok) {
      accepted++;
      if ((memcmp(&v, &ref, sizeof v) != 0 || !okn ||
           memcmp(&v, &vn, sizeof v) != 0) &&
          bad++ < 5)
        print_error("'%s': %a, strtod %a, pfi_scan_decimal_n %a (%d)\n", cp, v,
                    ref, vn, okn);
      if ((nx == 'e' || nx == 'E' || ip + fp == 0) && bad++ < 5)
        print_error("'%s' then '%c' accepted\n", cp, nx);
    } else {
      if (v != 12345 && bad++ < 5)
        print_error("'%s' refused but *out written\n", cp);
      if (okn && nx != 'e' && nx != 'E' && bad++ < 5)
        print_error("'%s' refused, pfi_scan_decimal_n takes it\n", cp);
      if (ip + fp > 0 && ip + fp <= 15 && nx != 'e' && nx != 'E' && bad++ < 5)
        print_error("'%s' refused\n", cp);
    }
  }
  rs = saved;
  ASSERT_EQ_INT(bad, 0);
  /* Most are taken: the test is not of refusals. */
  assert_true(accepted > NDOUBLES / 2);
#define PREFIX(s, e, v) pfi_scan_decimal_prefix(s, e, v)
  const char *e;
  double v = 0;
  assert_int_equal(PREFIX("10471.97,", &e, &v), 1);
  assert_true(v == 10471.97 && *e == ',');
  assert_int_equal(PREFIX("123456789012.5\n", &e, &v), 1);
  assert_true(v == 123456789012.5 && *e == '\n');
  assert_int_equal(PREFIX("-0.000000000000000001,", &e, &v), 1);
  assert_true(v == -1e-18 && *e == ',');
  assert_int_equal(PREFIX("7e3,", &e, &v), 0);
  assert_int_equal(PREFIX("-,", &e, &v), 0);
  assert_int_equal(PREFIX("9007199254740993,", &e, &v), 0); /* > 2^53 */
#undef PREFIX
}

static void test_job_table(void **state) {
  (void)state;
  const int jobs = 5000;
  struct pfi_curveset ref;
  struct pfi_error err;
  size_t len;
  char *t = curves_text(jobs, 0, &len);
  assert_int_equal(pfi_curveset_read_mem(&ref, "adjacent", t, len, NULL, &err),
                   0);
  free(t);
  ASSERT_EQ_INT(ref.n, jobs);
  for (int order = 1; order <= 2; order++) {
    struct pfi_curveset s;
    t = curves_text(jobs, order, &len);
    if (pfi_curveset_read_mem(&s, "other", t, len, NULL, &err) != 0)
      fail_msg("%s", err.msg);
    free(t);
    ASSERT_EQ_INT(s.n, jobs);
    for (size_t i = 0; i < s.n; i++) {
      const struct pfi_curve *a = &s.c[i];
      const struct pfi_curve *b = pfi_curveset_find(&ref, a->job);
      assert_non_null(b);
      ASSERT_EQ_INT(a->n, 3);
      ASSERT_EQ_INT(b->n, 3);
      /* The points worked out from the job's number: j + 1000.5 W at the
       * lowest cap. */
      int j = atoi(a->job + strspn(a->job, "abcdefghijklmnop"));
      for (size_t k = 0; k < 3; k++) {
        assert_true(a->pts[k].cap_w == 200 + 100 * (double)k);
        assert_true(a->pts[k].power_w == 1000 + j + 100 * (double)k + 0.5);
        assert_true(a->pts[k].tokens_per_s == b->pts[k].tokens_per_s);
      }
    }
    /* Order of first appearance: grouped by cap, the jobs in index order. */
    if (order == 1)
      for (size_t i = 0; i < s.n; i++)
        ASSERT_EQ_INT(atoi(s.c[i].job + strspn(s.c[i].job, "abcdefghijklmnop")),
                      i);
    pfi_curveset_release(&s);
  }
  pfi_curveset_release(&ref);
}

/* A random job of 1..7 points; concave or not; drawn from `lib` copies. */
static void random_job(double *x, double *y, size_t *m, int concave) {
  *m = 1 + (size_t)(urand() * 7);
  x[0] = 50 + 400 * urand();
  y[0] = 100 + 1000 * urand();
  double slope = 5 * urand() + 0.5;
  for (size_t j = 1; j < *m; j++) {
    x[j] = x[j - 1] + 1 + 200 * urand();
    if (concave) {
      slope *= urand();
      y[j] = y[j - 1] + slope * (x[j] - x[j - 1]);
    } else {
      y[j] = y[j - 1] + (urand() - 0.25) * 3 * (x[j] - x[j - 1]);
    }
  }
}

static void test_prepared_vs_scratch(void **state) {
  (void)state;
  struct pfi_error e1, e2;
  for (int inst = 0; inst < 400; inst++) {
    int concave = inst % 2 == 0;
    size_t nlib = 1 + rnd() % 8, n = 1 + rnd() % 40;
    double lx[8][8], ly[8][8];
    size_t lm[8];
    for (size_t j = 0; j < nlib; j++)
      random_job(lx[j], ly[j], &lm[j], concave);
    struct pfi_problem p;
    pfi_problem_init(&p);
    double *pfi = malloc(n * sizeof *pfi), *dram = malloc(n * sizeof *dram);
    int *moe = malloc(n * sizeof *moe);
    for (size_t i = 0; i < n; i++) {
      size_t j = rnd() % nlib; /* copies, as sampled workloads have */
      assert_int_equal(pfi_problem_add(&p, lx[j], ly[j], lm[j], lx[j][0],
                                       lx[j][lm[j] - 1], &e1),
                       0);
      pfi[i] = urand() < 0.1 ? -1 : 0.5 + 2 * urand();
      dram[i] = urand();
      moe[i] = (int)(rnd() & 1);
    }
    struct pfi_alloc_inputs in = {pfi, dram, moe};
    double lo, hi;
    pfi_problem_bounds(&p, &lo, &hi);
    struct pfi_alloc_plan *plan[PFI_STRAT__COUNT];
    for (int s = 0; s < PFI_STRAT__COUNT; s++)
      assert_int_equal(
          pfi_alloc_plan_new(&plan[s], &p, (enum pfi_strategy)s, &in, &e1), 0);
    struct pfi_oracle *o;
    assert_int_equal(pfi_oracle_prepare(&o, &p, &e1), 0);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (int k = 0; k < 12; k++) {
      /* Budgets inside, at and just outside the bounds. */
      double B = k == 0   ? lo
                 : k == 1 ? hi
                 : k == 2 ? lo - 1
                 : k == 3 ? hi + 1
                          : lo + (hi - lo) * urand();
      double ta = 0, tb = 0;
      struct pfi_oracle_stats sa, sb;
      int ra = pfi_oracle_solve(&p, B, a, &ta, &sa, &e1);
      int rb = pfi_oracle_run(o, B, b, &tb, &sb, &e2);
      ASSERT_EQ_INT(rb, ra);
      if (ra == 0) {
        assert_memory_equal(a, b, n * sizeof *a);
        assert_memory_equal(&ta, &tb, sizeof ta);
        ASSERT_EQ_INT(sb.nodes, sa.nodes);
      } else {
        assert_string_equal(e2.msg, e1.msg);
      }
      for (int s = 0; s < PFI_STRAT__COUNT; s++) {
        memset(a, 0, n * sizeof *a);
        memset(b, 0xff, n * sizeof *b);
        ra = pfi_alloc_run(&p, (enum pfi_strategy)s, B, &in, a, &e1);
        rb = pfi_alloc_plan_run(plan[s], B, b, &e2);
        ASSERT_EQ_INT(rb, ra);
        if (ra == 0)
          assert_memory_equal(a, b, n * sizeof *a);
        else
          assert_string_equal(e2.msg, e1.msg);
      }
    }
    /* Inputs missing: the same error from a plan as from a run. */
    struct pfi_alloc_inputs none = {NULL, NULL, NULL};
    struct pfi_alloc_plan *pl;
    assert_int_equal(
        pfi_alloc_plan_new(&pl, &p, PFI_STRAT_PFI_AWARE, &none, &e1), 0);
    ASSERT_EQ_INT(
        pfi_alloc_plan_run(pl, lo - 1e6, a, &e2),
        pfi_alloc_run(&p, PFI_STRAT_PFI_AWARE, lo - 1e6, &none, b, &e1));
    assert_string_equal(e2.msg, e1.msg);
    pfi_alloc_plan_free(pl);
    for (int s = 0; s < PFI_STRAT__COUNT; s++)
      pfi_alloc_plan_free(plan[s]);
    pfi_oracle_free(o);
    pfi_problem_release(&p);
    free(a);
    free(b);
    free(pfi);
    free(dram);
    free(moe);
  }
}

/* The simulation on 1, 2 and 3 workers: the same numbers bit for bit, and
 * the same workloads left out when a cut is infeasible for some. */
static void test_sim_threads(void **state) {
  (void)state;
  struct pfi_problem lib;
  pfi_problem_init(&lib);
  struct pfi_error err;
  double pfi[12], dram[12];
  int moe[12];
  for (int j = 0; j < 12; j++) {
    double x[8], y[8];
    size_t m;
    random_job(x, y, &m, j % 3 != 0);
    assert_int_equal(pfi_problem_add(&lib, x, y, m, x[0], x[m - 1], &err), 0);
    pfi[j] = 0.5 + 2 * urand();
    dram[j] = urand();
    moe[j] = j % 2;
  }
  struct pfi_alloc_inputs in = {pfi, dram, moe};
  double cuts[4] = {0, 0.05, 0.2, 0.3};
  struct pfi_sim_result r[3];
  for (unsigned t = 1; t <= 3; t++) {
    struct pfi_sim_config cfg = {.workloads = 37,
                                 .size = 9,
                                 .cuts = cuts,
                                 .ncuts = 4,
                                 .strategies = (1u << PFI_STRAT__COUNT) - 1,
                                 .seed = 5,
                                 .threads = t};
    if (pfi_sim_run(&lib, &in, &cfg, &r[t - 1], &err) != 0)
      fail_msg("pfi_sim_run: %s", err.msg);
  }
  for (int t = 1; t < 3; t++)
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      assert_non_null(r[t].cell[s]);
      assert_memory_equal(r[t].cell[s], r[0].cell[s], 4 * sizeof *r[0].cell[s]);
    }
  for (int t = 0; t < 3; t++)
    pfi_sim_result_release(&r[t]);
  /* A cut below some workloads' floors (0.95: workload 1's, at least, as
   * the simulation stopped there when an infeasible workload was an
   * error): those workloads are left out of the cut's cell, counted, and
   * the same ones whatever the number of threads. */
  double bad[2] = {0.1, 0.95};
  struct pfi_sim_result rr[3];
  for (unsigned t = 1; t <= 3; t++) {
    struct pfi_sim_config cfg = {.workloads = 40,
                                 .size = 3,
                                 .cuts = bad,
                                 .ncuts = 2,
                                 .strategies = 1u << PFI_STRAT_EQUAL,
                                 .seed = 9,
                                 .threads = t};
    if (pfi_sim_run(&lib, &in, &cfg, &rr[t - 1], &err) != 0)
      fail_msg("pfi_sim_run: %s", err.msg);
    assert_int_equal(rr[t - 1].workloads, 40);
  }
  const struct pfi_sim_cell *c0 = rr[0].cell[PFI_STRAT_EQUAL];
  assert_non_null(c0);
  assert_true(c0[1].feasible < 40);
  assert_true(c0[1].feasible <= c0[0].feasible);
  for (int t = 1; t < 3; t++) {
    assert_non_null(rr[t].cell[PFI_STRAT_EQUAL]);
    assert_memory_equal(rr[t].cell[PFI_STRAT_EQUAL], c0, 2 * sizeof *c0);
  }
  for (int t = 0; t < 3; t++)
    pfi_sim_result_release(&rr[t]);
  pfi_problem_release(&lib);
}

/* pfi_sim_run against the same simulation written out with the public
 * functions from scratch (each workload's jobs added one by one, every
 * strategy by pfi_alloc_run, throughput by pfi_alloc_total_tokens), drawn
 * from the same MT19937 stream: the same means bit for bit. The library
 * has the ties the simulation's shortcuts must order as the sorts do: two
 * identical jobs (equal ratios and slopes in two library jobs), two jobs
 * sharing one segment slope exactly, two jobs with one cut ratio but
 * different rooms, and a one-point job. */
/* pfi_sim_run on library jobs x[j][0..m[j]) (and their pfi, dram, moe),
 * W workloads of S jobs, against the reference, on 1 and 2 workers. */
static void sim_vs_reference(const double (*x)[8], const double (*y)[8],
                             const size_t *m, size_t L, const double *pfi,
                             const double *dram, const int *moe, size_t W,
                             size_t S) {
  struct pfi_error err;
  struct pfi_problem lib;
  pfi_problem_init(&lib);
  for (size_t j = 0; j < L; j++)
    assert_int_equal(
        pfi_problem_add(&lib, x[j], y[j], m[j], x[j][0], x[j][m[j] - 1], &err),
        0);
  struct pfi_alloc_inputs in = {(double *)pfi, (double *)dram, (int *)moe};
  enum { C = 4 };
  double cuts[C] = {0, 0.1, 0.25, 0.4};
  double *tot = malloc(PFI_STRAT__COUNT * C * W * sizeof *tot);
  double *wp = malloc(S * sizeof *wp), *wd = malloc(S * sizeof *wd),
         *pw = malloc(S * sizeof *pw);
  int *wm = malloc(S * sizeof *wm);
#define TOT(s, c, w) tot[((size_t)(s)*C + (c)) * W + (w)]
  for (unsigned threads = 1; threads <= 2; threads++) {
    struct pfi_sim_config cfg = {.workloads = W,
                                 .size = S,
                                 .cuts = cuts,
                                 .ncuts = C,
                                 .strategies = (1u << PFI_STRAT__COUNT) - 1,
                                 .seed = 13,
                                 .threads = threads};
    struct pfi_sim_result r;
    if (pfi_sim_run(&lib, &in, &cfg, &r, &err) != 0)
      fail_msg("pfi_sim_run: %s", err.msg);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, cfg.seed);
    for (size_t w = 0; w < W; w++) {
      struct pfi_problem p;
      pfi_problem_init(&p);
      for (size_t i = 0; i < S; i++) {
        size_t j = (size_t)gsl_rng_uniform_int(rng, L);
        assert_int_equal(pfi_problem_add(&p, x[j], y[j], m[j], x[j][0],
                                         x[j][m[j] - 1], &err),
                         0);
        wp[i] = pfi[j];
        wd[i] = dram[j];
        wm[i] = moe[j];
      }
      struct pfi_alloc_inputs win = {wp, wd, wm};
      double lo, hi;
      pfi_problem_bounds(&p, &lo, &hi);
      for (size_t c = 0; c < C; c++)
        for (int s = 0; s < PFI_STRAT__COUNT; s++) {
          if (pfi_alloc_run(&p, (enum pfi_strategy)s, (1 - cuts[c]) * hi, &win,
                            pw, &err) != 0)
            fail_msg("pfi_alloc_run: %s", err.msg);
          TOT(s, c, w) = pfi_alloc_total_tokens(&p, pw) / (double)S;
        }
      pfi_problem_release(&p);
    }
    gsl_rng_free(rng);
    for (int s = 0; s < PFI_STRAT__COUNT; s++)
      for (size_t c = 0; c < C; c++) {
        double gap = 0, tm = 0;
        for (size_t w = 0; w < W; w++) {
          double o = TOT(PFI_STRAT_ORACLE, c, w), d = o - TOT(s, c, w);
          if (d < 0 && -d <= 1e-9 * (fabs(o) + 1e-300))
            d = 0;
          gap += d;
          tm += TOT(s, c, w);
        }
        gap /= (double)W;
        tm /= (double)W;
        assert_memory_equal(&r.cell[s][c].gap_mean, &gap, sizeof gap);
        assert_memory_equal(&r.cell[s][c].tokens_mean, &tm, sizeof tm);
      }
    pfi_sim_result_release(&r);
  }
#undef TOT
  free(tot);
  free(wp);
  free(wd);
  free(pw);
  free(wm);
  pfi_problem_release(&lib);
}

static void test_sim_vs_reference(void **state) {
  (void)state;
  enum { L = 11 };
  double x[L][8], y[L][8];
  size_t m[L];
  for (int j = 0; j < 5; j++)
    random_job(x[j], y[j], &m[j], j % 2 == 0);
  memcpy(x[5], x[0], sizeof x[0]); /* job 5 = job 0 */
  memcpy(y[5], y[0], sizeof y[0]);
  m[5] = m[0];
  /* Jobs 6 and 7: a segment of slope exactly 2 each, the same power range
   * and uncapped throughput (equal rooms and weights for equal and
   * pfi-aware at the same PFI). */
  static const double x6[3] = {100, 200, 300}, y6[3] = {100, 300, 350};
  static const double x7[3] = {100, 150, 300}, y7[3] = {150, 250, 350};
  memcpy(x[6], x6, sizeof x6);
  memcpy(y[6], y6, sizeof y6);
  memcpy(x[7], x7, sizeof x7);
  memcpy(y[7], y7, sizeof y7);
  m[6] = m[7] = 3;
  x[8][0] = 120; /* one point: no segment */
  y[8][0] = 80;
  m[8] = 1;
  /* Jobs 9 and 10: rooms 200 and 100 W, weights in the ratio 2:1 for
   * equal and pfi-aware (uncapped power 300 and 150 W, the same uncapped
   * throughput and PFI), so one cut ratio: their order is by index. */
  static const double x9[3] = {100, 200, 300}, y9[3] = {100, 250, 350};
  static const double x10[3] = {50, 100, 150}, y10[3] = {200, 300, 350};
  memcpy(x[9], x9, sizeof x9);
  memcpy(y[9], y9, sizeof y9);
  memcpy(x[10], x10, sizeof x10);
  memcpy(y[10], y10, sizeof y10);
  m[9] = m[10] = 3;
  double pfi[L], dram[L];
  int moe[L];
  for (int j = 0; j < L; j++) {
    pfi[j] = j == 7 || j == 10 ? pfi[j - 1] : 0.5 + 2 * urand();
    dram[j] = urand();
    moe[j] = j % 2;
  }
  pfi[5] = pfi[0];
  sim_vs_reference(x, y, m, L, pfi, dram, moe, 30, 11);
  /* A library far larger than a workload (3000 jobs, workloads of 4): the
   * simulation sorts each workload itself, as without a library. */
  enum { BIG = 3000 };
  double(*bx)[8] = malloc(BIG * sizeof *bx),
  (*by)[8] = malloc(BIG * sizeof *by);
  size_t *bm = malloc(BIG * sizeof *bm);
  double *bp = malloc(BIG * sizeof *bp), *bd = malloc(BIG * sizeof *bd);
  int *bo = malloc(BIG * sizeof *bo);
  for (int j = 0; j < BIG; j++) {
    /* At least three points from a floor of 1 W: every cut feasible. */
    do
      random_job(bx[j], by[j], &bm[j], j % 2 == 0);
    while (bm[j] < 3);
    double x0 = bx[j][0] - 1;
    for (size_t k = 0; k < bm[j]; k++)
      bx[j][k] -= x0;
    bp[j] = 0.5 + 2 * urand();
    bd[j] = urand();
    bo[j] = j % 2;
  }
  sim_vs_reference((const double(*)[8])bx, (const double(*)[8])by, bm, BIG, bp,
                   bd, bo, 20, 4);
  free(bx);
  free(by);
  free(bm);
  free(bp);
  free(bd);
  free(bo);
}

/* A scrape whose label sets repeat (the parser reuses their parse) against
 * the same scrape with every set made unique by an extra label the parser
 * ignores: the same GPUs and fields, bit for bit; a malformed set that
 * repeats is counted every time. */
static char *scrape(int unique, size_t *len) {
  size_t cap = 1 << 20, n = 0;
  char *t = malloc(cap);
  static const char *const m[] = {"DCGM_FI_DEV_POWER_USAGE",
                                  "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_OTHER",
                                  "DCGM_FI_DEV_GPU_TEMP"};
  int line = 0;
  for (int node = 0; node < 3; node++)
    for (int k = 0; k < 4; k++)
      for (int g = 0; g < 8; g++, line++) {
        char extra[32] = "";
        if (unique)
          snprintf(extra, sizeof extra, ",zz=\"%d\"", line);
        n += (size_t)snprintf(
            t + n, cap - n,
            "%s{gpu=\"%d\",UUID=\"GPU-%d-%d\",modelName=\"H\\\"200\","
            "Hostname=\"n%d\"%s} %d.%03d\n",
            m[k], g, node, g, node, extra, 100 + g + k, line);
        if (g == 3) /* a malformed set, the same on every metric */
          n += (size_t)snprintf(t + n, cap - n, "%s{gpu=\"%d\",bad=x%s} 1\n",
                                m[k], g, extra);
      }
  *len = n;
  return t;
}

static void test_prom_label_cache(void **state) {
  (void)state;
  struct pfi_prom_gpu *g[2];
  struct pfi_prom_stats st[2];
  struct pfi_error err;
  int n[2];
  for (int u = 0; u < 2; u++) {
    size_t len;
    char *t = scrape(u, &len);
    n[u] = pfi_prom_parse("t", t, len, &g[u], &st[u], &err);
    free(t);
  }
  ASSERT_EQ_INT(n[0], 24);
  ASSERT_EQ_INT(n[1], n[0]);
  ASSERT_EQ_INT(st[0].malformed, 3 * 4);
  ASSERT_EQ_INT(st[1].malformed, st[0].malformed);
  ASSERT_EQ_INT(st[1].samples, st[0].samples);
  ASSERT_EQ_INT(st[1].mapped, st[0].mapped);
  for (int i = 0; i < n[0]; i++) {
    assert_string_equal(g[1][i].host, g[0][i].host);
    assert_string_equal(g[1][i].uuid, g[0][i].uuid);
    assert_string_equal(g[1][i].model, "H\"200");
    assert_string_equal(g[1][i].model, g[0][i].model);
    ASSERT_EQ_INT(g[1][i].gpu, g[0][i].gpu);
    assert_memory_equal(&g[1][i].s, &g[0][i].s, sizeof g[0][i].s);
  }
  /* Values worked out from the text: node n1, GPU 5, power 105.LINE. */
  for (int i = 0; i < n[0]; i++)
    if (strcmp(g[0][i].host, "n1") == 0 && g[0][i].gpu == 5)
      assert_true(g[0][i].s.v[PFI_FIELD_POWER] == 105 + (32 + 5) / 1000.0);
  free(g[0]);
  free(g[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fmt_g_vs_printf),
      cmocka_unit_test(test_fmt_shortest),
      cmocka_unit_test(test_scan_decimal),
      cmocka_unit_test(test_scan_decimal_prefix),
      cmocka_unit_test(test_job_table),
      cmocka_unit_test(test_prepared_vs_scratch),
      cmocka_unit_test(test_sim_threads),
      cmocka_unit_test(test_sim_vs_reference),
      cmocka_unit_test(test_prom_label_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
