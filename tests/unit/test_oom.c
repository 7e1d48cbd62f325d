/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Allocation-failure tests. cmake/oom.cmake links this program with
 * --wrap=malloc (calloc, realloc, strdup, strndup and the GSL allocators the
 * library calls), so every allocation made by libpfi's static objects passes
 * through the __wrap_* functions below. jansson's allocations go through
 * json_set_alloc_funcs() to the same hook. For each entry point the test
 * runs the call with the Nth allocation failing, N = 1, 2, 3, ..., until a
 * run completes without reaching the armed failure, and asserts at each N
 * that the call returned PFI_ENOMEM with the error struct saying so: never a
 * success (which would be output computed without the memory it asked for),
 * never another code. Leaks on those paths are caught by LeakSanitizer in the
 * AddressSanitizer build. The run that completes must give the right answer,
 * checked against values worked out by hand in each case.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_vector.h>
#include <jansson.h>

#include "testutil.h"

#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/error.h"
#include "pfi/index.h"
#include "pfi/stats.h"

/* ---- the hook ---- */

static long oom_target; /* the allocation to fail, 1-based; set per run */
static long oom_count;  /* allocations seen since oom_on() */
static int oom_armed;
static int oom_hit; /* the armed allocation was reached (and failed) */

static void oom_on(void) {
  oom_count = 0;
  oom_hit = 0;
  oom_armed = 1;
}

static void oom_off(void) { oom_armed = 0; }

static int oom_fail_now(void) {
  if (!oom_armed)
    return 0;
  if (++oom_count != oom_target)
    return 0;
  oom_hit = 1;
  return 1;
}

#ifdef PFI_OOM_WRAP
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
gsl_matrix *__real_gsl_matrix_alloc(size_t n1, size_t n2);
gsl_vector *__real_gsl_vector_alloc(size_t n);
gsl_rng *__real_gsl_rng_alloc(const gsl_rng_type *t);
gsl_multifit_linear_workspace *__real_gsl_multifit_linear_alloc(size_t n,
                                                                size_t p);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
gsl_matrix *__wrap_gsl_matrix_alloc(size_t n1, size_t n2);
gsl_vector *__wrap_gsl_vector_alloc(size_t n);
gsl_rng *__wrap_gsl_rng_alloc(const gsl_rng_type *t);
gsl_multifit_linear_workspace *__wrap_gsl_multifit_linear_alloc(size_t n,
                                                                size_t p);

void *__wrap_malloc(size_t n) {
  if (oom_fail_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size) {
  if (oom_fail_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n) {
  if (oom_fail_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_realloc(p, n);
}

/* strdup and strndup allocate inside the C library, out of the wrapper's
 * reach, so they are rebuilt here on the wrapped malloc. */
char *__wrap_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = __wrap_malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

char *__wrap_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *d = __wrap_malloc(len + 1);
  if (d) {
    memcpy(d, s, len);
    d[len] = '\0';
  }
  return d;
}

/* GSL's allocators return NULL on failure when GSL's error handler is off;
 * with the default handler they abort, which no caller can recover from, so
 * the NULL return is the case worth testing. */
gsl_matrix *__wrap_gsl_matrix_alloc(size_t n1, size_t n2) {
  return oom_fail_now() ? NULL : __real_gsl_matrix_alloc(n1, n2);
}

gsl_vector *__wrap_gsl_vector_alloc(size_t n) {
  return oom_fail_now() ? NULL : __real_gsl_vector_alloc(n);
}

gsl_rng *__wrap_gsl_rng_alloc(const gsl_rng_type *t) {
  return oom_fail_now() ? NULL : __real_gsl_rng_alloc(t);
}

gsl_multifit_linear_workspace *__wrap_gsl_multifit_linear_alloc(size_t n,
                                                                size_t p) {
  return oom_fail_now() ? NULL : __real_gsl_multifit_linear_alloc(n, p);
}

static void *oom_json_malloc(size_t n) { return __wrap_malloc(n); }
#endif

/*
 * A case sets up its input (unarmed), calls oom_on() just before the entry
 * point and oom_off() just after, checks the output when the call succeeded,
 * releases everything and returns the entry point's code. `err` is the
 * error struct it passed.
 */
typedef int (*oom_case)(struct pfi_error *err);

static void oom_run(const char *what, oom_case fn) {
#ifndef PFI_OOM_WRAP
  (void)what;
  (void)fn;
  skip();
#else
  for (long n = 1; n < 100000; n++) {
    struct pfi_error err;
    pfi_error_clear(&err);
    oom_target = n;
    int rc = fn(&err);
    oom_off();
    if (!oom_hit) {
      if (n == 1)
        fail_msg("%s: made no allocation through the hook", what);
      if (rc < 0)
        fail_msg("%s: failed (%s: %s) with no allocation failing", what,
                 pfi_err_name(rc), err.msg);
      print_message("%s: %ld allocations, each failure handled\n", what,
                    n - 1);
      return;
    }
    if (rc >= 0)
      fail_msg("%s: returned %d although allocation %ld failed", what, rc, n);
    if (rc != PFI_ENOMEM || err.code != PFI_ENOMEM)
      fail_msg("%s: allocation %ld failed: returned %s, err %s \"%s\", "
               "expected PFI_ENOMEM",
               what, n, pfi_err_name(rc), pfi_err_name(err.code), err.msg);
  }
  fail_msg("%s: did not finish within 100000 allocations", what);
#endif
}

#define OOM_TEST(name) static void test_##name(void **state) {                 \
    (void)state;                                                               \
    oom_run(#name, case_##name);                                               \
  }

/* ---- CSV ---- */

static const char csv_text[] = "job,cap_w,power_w\n"
                               "a,300,\"1,200\"\n"
                               "b,400,1600\n";

static int case_csv_stream(struct pfi_error *err) {
  struct pfi_csv csv;
  int rc, rows = 0;
  double sum = 0;
  oom_on();
  rc = pfi_csv_open_mem(&csv, "t.csv", csv_text, strlen(csv_text), err);
  if (rc < 0) {
    oom_off();
    return rc;
  }
  while ((rc = pfi_csv_next(&csv, err)) > 0) {
    rows++;
    double v;
    oom_off();
    assert_int_equal(pfi_csv_double(&csv, 1, "cap_w", &v, err), 0);
    sum += v;
    oom_on();
  }
  oom_off();
  if (rc == 0) {
    /* Two records, caps 300 + 400; the quoted comma stays in one field. */
    assert_int_equal(rows, 2);
    ASSERT_NEAR(sum, 700, 0);
    assert_int_equal((int)csv.nheader, 3);
  }
  pfi_csv_close(&csv);
  return rc;
}
OOM_TEST(csv_stream)

static int case_table(struct pfi_error *err) {
  struct pfi_table t;
  oom_on();
  int rc = pfi_table_load_mem(&t, "t.csv", csv_text, strlen(csv_text), err);
  oom_off();
  if (rc < 0)
    return rc;
  assert_int_equal(pfi_table_find(&t, "power_w"), 2);
  assert_string_equal(pfi_table_cell(&t, 0, 2), "1,200");
  assert_string_equal(pfi_table_cell(&t, 1, 0), "b");
  pfi_table_release(&t);
  return rc;
}
OOM_TEST(table)

/* ---- curves and the index ---- */

/* Job j: uncapped at 400 W per GPU (P_max 800 W, T_max 1000 tokens/s), one
 * capped point at 200 W per GPU drawing 400 W and giving 700 tokens/s.
 * Ratio PFI = power saved over throughput lost,
 * (1 - 400/800) / (1 - 700/1000) = 0.5 / 0.3 = 5/3. */
static const char curves_text[] = "job,cap_w,power_w,tokens_per_s,gpus\n"
                                  "j,400,800,1000,2\n"
                                  "j,200,400,700,2\n"
                                  "k,300,300,50,1\n"
                                  "k,150,150,40,1\n";

static int case_curves(struct pfi_error *err) {
  struct pfi_curveset set;
  oom_on();
  int rc = pfi_curveset_read_mem(&set, "c.csv", curves_text,
                                 strlen(curves_text), NULL, err);
  oom_off();
  if (rc < 0)
    return rc;
  assert_int_equal((int)set.n, 2);
  struct pfi_curve *j = pfi_curveset_find(&set, "j");
  assert_non_null(j);
  assert_int_equal((int)j->n, 2);
  ASSERT_NEAR(j->pts[0].cap_w, 200, 0); /* sorted by cap */
  pfi_curveset_release(&set);
  return rc;
}
OOM_TEST(curves)

static int case_curves_map(struct pfi_error *err) {
  static const char text[] = "W,Cap,P,T\n"
                             "j,400,800,1000\n"
                             "j,200,400,700\n";
  struct pfi_curveset set;
  oom_on();
  int rc = pfi_curveset_read_mem(&set, "m.csv", text, strlen(text),
                                 "job=W,cap_w=Cap,power_w=P,tokens_per_s=T",
                                 err);
  oom_off();
  if (rc < 0)
    return rc;
  assert_int_equal((int)set.n, 1);
  assert_string_equal(set.c[0].job, "j");
  pfi_curveset_release(&set);
  return rc;
}
OOM_TEST(curves_map)

static int load_curves(struct pfi_curveset *set) {
  struct pfi_error err;
  int rc = pfi_curveset_read_mem(set, "c.csv", curves_text,
                                 strlen(curves_text), NULL, &err);
  assert_int_equal(rc, 0);
  return rc;
}

static int case_index(struct pfi_error *err) {
  struct pfi_curveset set;
  struct pfi_index ix;
  load_curves(&set);
  oom_on();
  int rc = pfi_index_compute(pfi_curveset_find(&set, "j"), &ix, err);
  oom_off();
  if (rc == 0) {
    assert_true(ix.pfi_defined);
    ASSERT_NEAR(ix.pfi, 5.0 / 3.0, 1e-12); /* worked above; rounding only */
    pfi_index_release(&ix);
  }
  pfi_curveset_release(&set);
  return rc;
}
OOM_TEST(index)

static int case_index_ci(struct pfi_error *err) {
  struct pfi_curveset set;
  double lo = -1, hi = -1;
  load_curves(&set);
  oom_on();
  int rc = pfi_index_ci(pfi_curveset_find(&set, "j"), 50, 7, 0.01, 0.01, &lo,
                        &hi, err);
  oom_off();
  if (rc > 0) {
    /* The interval is a range of resampled PFIs around the measured 5/3.
     * With 1 % noise on each value the saved-power fraction 0.5 moves by
     * about 0.01 and the lost-throughput fraction 0.3 by about 0.01, so
     * the ratio stays within about 0.1 of 5/3; [1.4, 2.0] is wide enough
     * never to fail by chance (the seed is fixed anyway). */
    assert_true(lo <= hi);
    assert_true(lo > 1.4 && hi < 2.0);
  }
  pfi_curveset_release(&set);
  return rc;
}
OOM_TEST(index_ci)

/* ---- statistics ---- */

static int case_ranks(struct pfi_error *err) {
  const double x[] = {3, 1, 3, 2};
  double r[4], ties = 0;
  oom_on();
  int rc = pfi_stats_ranks(x, 4, r, &ties, err);
  oom_off();
  if (rc == 0) {
    /* 1 -> 1, 2 -> 2, the two 3s share ranks 3 and 4: 3.5 each. */
    ASSERT_NEAR(r[0], 3.5, 0);
    ASSERT_NEAR(r[1], 1, 0);
    ASSERT_NEAR(r[3], 2, 0);
    ASSERT_NEAR(ties, 6, 0); /* one tie of 2: 2^3 - 2 */
  }
  return rc;
}
OOM_TEST(ranks)

static int case_spearman(struct pfi_error *err) {
  const double x[] = {1, 2, 3, 4, 5};
  const double y[] = {10, 30, 20, 40, 50};
  double rho = 0, p = 0;
  oom_on();
  int rc = pfi_stats_spearman(x, y, 5, &rho, &p, err);
  oom_off();
  if (rc == 0) /* d = 0,1,-1,0,0: 1 - 6*2/(5*24) = 0.9 */
    ASSERT_NEAR(rho, 0.9, 1e-12);
  return rc;
}
OOM_TEST(spearman)

static int case_median(struct pfi_error *err) {
  const double x[] = {4, 1, 3, 2};
  double m = 0;
  oom_on();
  int rc = pfi_stats_median(x, 4, &m, err);
  oom_off();
  if (rc == 0)
    ASSERT_NEAR(m, 2.5, 0);
  return rc;
}
OOM_TEST(median)

static int case_ols(struct pfi_error *err) {
  /* y = 1 + 2x plus residuals +e, -e, -e, +e with e = 0.1, which are
   * orthogonal to (1, x): the fit is exactly b0 = 1, b1 = 2. */
  const double x[] = {0, 1, 2, 3};
  const double y[] = {1.1, 2.9, 4.9, 7.1};
  struct pfi_ols m;
  memset(&m, 0, sizeof m);
  oom_on();
  int rc = pfi_ols_fit(x, 4, 1, y, &m, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(m.coef[0], 1, 1e-12);
    ASSERT_NEAR(m.coef[1], 2, 1e-12);
  }
  pfi_ols_release(&m);
  return rc;
}
OOM_TEST(ols)

static int case_kruskal(struct pfi_error *err) {
  /* Groups {1,2}, {3,4}, {5,6}: ranks are the values, mean ranks 1.5, 3.5,
   * 5.5; H = 12/(6*7) * 2*(1.5^2+3.5^2+5.5^2) - 3*7 = 26/7 - 0 ... worked:
   * 12/42 * (4.5 + 24.5 + 60.5) - 21 = 89.5*12/42 - 21 = 4.5714285714. */
  const double v[] = {1, 2, 3, 4, 5, 6};
  const size_t g[] = {0, 0, 1, 1, 2, 2};
  struct pfi_kruskal k;
  memset(&k, 0, sizeof k);
  oom_on();
  int rc = pfi_stats_kruskal(v, g, 6, 3, &k, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(k.H, 12.0 / 42.0 * 89.5 - 21.0, 1e-12);
    assert_int_equal((int)k.npairs, 3);
  }
  pfi_kruskal_release(&k);
  return rc;
}
OOM_TEST(kruskal)

static int case_holm(struct pfi_error *err) {
  const double p[] = {0.04, 0.01, 0.03};
  double adj[3];
  oom_on();
  int rc = pfi_stats_holm(p, 3, adj, err);
  oom_off();
  if (rc == 0) { /* sorted 0.01, 0.03, 0.04: 0.03, 0.06, max(0.06, 0.04) */
    ASSERT_NEAR(adj[1], 0.03, 1e-15);
    ASSERT_NEAR(adj[2], 0.06, 1e-15);
    ASSERT_NEAR(adj[0], 0.06, 1e-15);
  }
  return rc;
}
OOM_TEST(holm)

static int case_bh(struct pfi_error *err) {
  const double p[] = {0.04, 0.01, 0.03};
  double q[3];
  oom_on();
  int rc = pfi_stats_bh(p, 3, q, err);
  oom_off();
  if (rc == 0) { /* 3*0.01/1 = 0.03, 3*0.03/2 = 0.045, 3*0.04/3 = 0.04 */
    ASSERT_NEAR(q[1], 0.03, 1e-15);
    ASSERT_NEAR(q[2], 0.04, 1e-15);
    ASSERT_NEAR(q[0], 0.04, 1e-15);
  }
  return rc;
}
OOM_TEST(bh)

/* OOM_MORE */

int main(void) {
#ifdef PFI_OOM_WRAP
  json_set_alloc_funcs(oom_json_malloc, free);
#else
  fprintf(stderr, "test_oom: built without the allocation wrappers "
                  "(cmake/oom.cmake not applied): every case is skipped\n");
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csv_stream), cmocka_unit_test(test_table),
      cmocka_unit_test(test_curves),     cmocka_unit_test(test_curves_map),
      cmocka_unit_test(test_index),      cmocka_unit_test(test_index_ci),
      cmocka_unit_test(test_ranks),      cmocka_unit_test(test_spearman),
      cmocka_unit_test(test_median),     cmocka_unit_test(test_ols),
      cmocka_unit_test(test_kruskal),    cmocka_unit_test(test_holm),
      cmocka_unit_test(test_bh),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
