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
 * never another code. The one exception is an allocation inside jansson's
 * parser, which jansson itself reports as a syntax error (PFI_EPARSE). Leaks on those paths are caught by LeakSanitizer in the
 * AddressSanitizer build. The run that completes must give the right answer,
 * checked against values worked out by hand in each case.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
#include "pfi/alloc.h"
#include "pfi/emu.h"
#include "pfi/features.h"
#include "pfi/model.h"
#include "pfi/oracle.h"
#include "pfi/phase.h"
#include "pfi/prom.h"
#include "pfi/replay.h"
#include "pfi/sim.h"
#include "pfi/stats.h"
#include "pfi/store.h"
#include "pfi/throughput.h"

/* ---- the hook ---- */

static long oom_target; /* the allocation to fail, 1-based; set per run */
static long oom_count;  /* allocations seen since oom_on() */
static int oom_armed;
static int oom_hit; /* the armed allocation was reached (and failed) */
static int oom_in_json;  /* inside an allocation jansson asked for */
static int oom_hit_json; /* the failed allocation was jansson's */

static void oom_on(void) {
  oom_count = 0;
  oom_hit = 0;
  oom_hit_json = 0;
  oom_armed = 1;
}

static void oom_off(void) { oom_armed = 0; }

static int oom_fail_now(void) {
  if (!oom_armed)
    return 0;
  if (++oom_count != oom_target)
    return 0;
  oom_hit = 1;
  oom_hit_json = oom_in_json;
  return 1;
}

#include "oom_wrap.h"
#ifdef PFI_OOM_WRAP
static void *oom_json_malloc(size_t n) {
  oom_in_json = 1;
  void *p = __wrap_malloc(n);
  oom_in_json = 0;
  return p;
}
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
    /* jansson's lexer reports a token it could not allocate as a syntax
     * error ("string or '}' expected"), indistinguishable from a real one,
     * so a parse failure is all a caller can report there. */
    if (oom_hit_json && rc == PFI_EPARSE && err.code == PFI_EPARSE)
      continue;
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

/* A curve of 20 points (more than pfi_index_compute keeps on its stack):
 * caps 100..2000 W, P = 2 cap, T = 400 + 0.3 cap, so that at every capped
 * point 1 - T/T_max = 0.6 (1 - P/P_max) and each ratio term, hence their
 * mean, is 1 / 0.6 = 5/3. */
static int case_index(struct pfi_error *err) {
  struct pfi_curveset set;
  struct pfi_index ix;
  pfi_curveset_init(&set);
  for (int k = 1; k <= 20; k++) {
    struct pfi_point pt = {.cap_w = 100.0 * k, .power_w = 200.0 * k,
                           .tokens_per_s = 400 + 30.0 * k, .power_sd_w = -1,
                           .tokens_sd = -1};
    assert_int_equal(pfi_curveset_add(&set, "j", &pt, err), 0);
  }
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

/* ---- features and the model ---- */

static const char feat_text[] = "job,arch,task,x\n"
                                "b,moe,ft,2\n"
                                "a,dense,pt,1\n";

static int case_features(struct pfi_error *err) {
  struct pfi_features f;
  oom_on();
  int rc = pfi_features_load_mem(&f, "f.csv", feat_text, strlen(feat_text),
                                 err);
  oom_off();
  if (rc < 0)
    return rc;
  double v = 0;
  long r = pfi_features_row(&f, "a");
  assert_int_equal((int)r, 1); /* the second data row */
  assert_int_equal(pfi_features_value(&f, (size_t)r, "x", &v, err), 0);
  ASSERT_NEAR(v, 1, 0);
  pfi_features_release(&f);
  return rc;
}
OOM_TEST(features)

/* y = 1 + 2x plus residuals orthogonal to (1, x): see case_ols. */
static const double fit_x[] = {0, 1, 2, 3};
static const double fit_y[] = {1.1, 2.9, 4.9, 7.1};

static int case_model_fit(struct pfi_error *err) {
  const char *names[] = {"x"};
  struct pfi_model m;
  memset(&m, 0, sizeof m);
  oom_on();
  int rc = pfi_model_fit(fit_x, 4, 1, fit_y, names, &m, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(m.coef[0], 1, 1e-12);
    ASSERT_NEAR(m.coef[1], 2, 1e-12);
    assert_string_equal(m.features[0], "x");
  }
  pfi_model_release(&m);
  return rc;
}
OOM_TEST(model_fit)

static int case_model_folds(struct pfi_error *err) {
  /* y = 1 + 2x exactly: every held-out row is predicted exactly. */
  const double x[] = {0, 1, 2, 3, 4};
  const double y[] = {1, 3, 5, 7, 9};
  const size_t fold[] = {0, 1, 2, 3, 4};
  double pred[5] = {0};
  struct pfi_eval ev;
  oom_on();
  int rc = pfi_model_eval_folds(x, 5, 1, y, fold, 5, &ev, pred, err);
  oom_off();
  if (rc == 0) {
    assert_true(ev.defined);
    for (int i = 0; i < 5; i++)
      ASSERT_NEAR(pred[i], y[i], 1e-9);
  }
  return rc;
}
OOM_TEST(model_folds)

static char *model_json; /* a saved model, made unarmed in main() */
static size_t model_json_len;

static int case_model_load(struct pfi_error *err) {
  struct pfi_model m;
  memset(&m, 0, sizeof m);
  oom_on();
  int rc = pfi_model_load_mem(&m, "m.json", model_json, model_json_len, err);
  oom_off();
  if (rc == 0) {
    assert_int_equal((int)m.k, 1);
    assert_string_equal(m.features[0], "x");
    ASSERT_NEAR(m.coef[1], 2, 1e-12);
  }
  pfi_model_release(&m);
  return rc;
}
OOM_TEST(model_load)

static int case_strlist(struct pfi_error *err) {
  char **list = NULL;
  size_t n = 0;
  oom_on();
  int rc = pfi_strlist_split(" a, bb ,c", &list, &n, err);
  oom_off();
  if (rc == 0) {
    assert_int_equal((int)n, 3);
    assert_string_equal(list[1], "bb");
    assert_null(list[3]);
  }
  pfi_strlist_free(list);
  return rc;
}
OOM_TEST(strlist)

/* ---- problems, the oracle, the strategies ---- */

/* Job A: 100 W -> 50 tokens/s, 200 W -> 100 (slope 0.5 per W); job B:
 * 100 W -> 80, 200 W -> 100 (slope 0.2). At a 300 W budget every watt above
 * the floors goes to A: A 200 W, B 100 W, 180 tokens/s. */
static const double pa_x[] = {200, 100}, pa_y[] = {100, 50};
static const double pb_x[] = {100, 200}, pb_y[] = {80, 100};

static int build_problem(struct pfi_problem *p, struct pfi_error *err) {
  int rc = pfi_problem_add(p, pa_x, pa_y, 2, 100, 200, err);
  if (rc == 0)
    rc = pfi_problem_add(p, pb_x, pb_y, 2, 100, 200, err);
  return rc;
}

static void make_problem(struct pfi_problem *p) {
  struct pfi_error err;
  pfi_problem_init(p);
  assert_int_equal(build_problem(p, &err), 0);
}

static int case_problem(struct pfi_error *err) {
  struct pfi_problem p;
  struct pfi_curveset set;
  pfi_problem_init(&p);
  load_curves(&set);
  oom_on();
  int rc = build_problem(&p, err);
  if (rc == 0)
    rc = pfi_problem_add_curve(&p, pfi_curveset_find(&set, "j"), err);
  oom_off();
  if (rc == 0) {
    assert_int_equal((int)p.njobs, 3);
    ASSERT_NEAR(pfi_problem_eval(&p, 0, 150), 75, 1e-12);
    ASSERT_NEAR(pfi_problem_eval(&p, 2, 600), 850, 1e-12); /* (400,700)-(800,1000) */
  }
  pfi_curveset_release(&set);
  pfi_problem_release(&p);
  return rc;
}
OOM_TEST(problem)

static int case_oracle(struct pfi_error *err) {
  struct pfi_problem p;
  double pw[2], total = 0;
  make_problem(&p);
  oom_on();
  int rc = pfi_oracle_solve(&p, 300, pw, &total, NULL, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(pw[0], 200, 1e-6);
    ASSERT_NEAR(pw[1], 100, 1e-6);
    ASSERT_NEAR(total, 180, 1e-9);
  }
  pfi_problem_release(&p);
  return rc;
}
OOM_TEST(oracle)

static const double in_pfi[] = {2, 0.5}, in_dram[] = {1, 3};
static const int in_moe_ft[] = {0, 1};
static const struct pfi_alloc_inputs alloc_in = {in_pfi, in_dram, in_moe_ft};

static enum pfi_strategy alloc_strategy;

static int case_alloc(struct pfi_error *err) {
  struct pfi_problem p;
  double pw[2] = {0, 0};
  make_problem(&p);
  oom_on();
  int rc = pfi_alloc_run(&p, alloc_strategy, 300, &alloc_in, pw, err);
  oom_off();
  if (rc == 0) {
    /* Every strategy spends the budget within the jobs' ranges. */
    ASSERT_NEAR(pw[0] + pw[1], 300, 1e-6);
    for (int i = 0; i < 2; i++)
      assert_true(pw[i] >= 100 - 1e-9 && pw[i] <= 200 + 1e-9);
    if (alloc_strategy == PFI_STRAT_ORACLE)
      ASSERT_NEAR(pw[0], 200, 1e-6);
  }
  pfi_problem_release(&p);
  return rc;
}

static void test_alloc(void **state) {
  (void)state;
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    char what[64];
    snprintf(what, sizeof what, "alloc %s", pfi_strategy_name(s));
    alloc_strategy = (enum pfi_strategy)s;
    oom_run(what, case_alloc);
  }
}

static int case_proportional(struct pfi_error *err) {
  /* Weights 1 and 3 over 100 W to cut: t = 25, A gives 25 W, B 75 W. */
  struct pfi_problem p;
  const double w[] = {1, 3};
  double pw[2] = {0, 0};
  make_problem(&p);
  oom_on();
  int rc = pfi_alloc_proportional(&p, 300, w, pw, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(pw[0], 175, 1e-9);
    ASSERT_NEAR(pw[1], 125, 1e-9);
  }
  pfi_problem_release(&p);
  return rc;
}
OOM_TEST(proportional)

/* ---- the simulation ---- */

static int case_sim(struct pfi_error *err) {
  struct pfi_problem p;
  struct pfi_sim_result res;
  const double cuts[] = {0.1, 0.25};
  struct pfi_sim_config cfg;
  memset(&cfg, 0, sizeof cfg);
  memset(&res, 0, sizeof res);
  cfg.workloads = 3;
  cfg.size = 3;
  cfg.cuts = cuts;
  cfg.ncuts = 2;
  cfg.strategies = (1u << PFI_STRAT__COUNT) - 1;
  cfg.seed = 1;
  make_problem(&p);
  oom_on();
  int rc = pfi_sim_run(&p, &alloc_in, &cfg, &res, err);
  oom_off();
  if (rc == 0) {
    /* The oracle has no gap to itself; no strategy beats it. */
    for (size_t c = 0; c < 2; c++) {
      ASSERT_NEAR(res.cell[PFI_STRAT_ORACLE][c].gap_mean, 0, 1e-9);
      for (int s = 0; s < PFI_STRAT__COUNT; s++)
        assert_true(res.cell[s][c].gap_mean >= -1e-9);
    }
  }
  pfi_sim_result_release(&res);
  pfi_problem_release(&p);
  return rc;
}
OOM_TEST(sim)

static int case_mix(struct pfi_error *err) {
  static const char mix[] = "task,min_gpus,max_gpus,share\n"
                            "pt,1,8,0.6\n"
                            "ft,1,8,0.4\n";
  const int is_ft[] = {0, 1, 0}, gpus[] = {1, 2, 4};
  double w[3] = {0, 0, 0};
  size_t fb = 99;
  oom_on();
  int rc = pfi_mix_weights_mem("mix.csv", mix, strlen(mix), is_ft, gpus, 3, w,
                               &fb, err);
  oom_off();
  if (rc == 0) { /* pt's 0.6 split over jobs 0 and 2; ft's 0.4 to job 1 */
    ASSERT_NEAR(w[0], w[2], 1e-12);
    ASSERT_NEAR(w[1] / w[0], 0.4 / 0.3, 1e-12);
    assert_int_equal((int)fb, 0);
  }
  return rc;
}
OOM_TEST(mix)

/* ---- phase aggregation ---- */

static const double ph_values[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const enum pfi_phase ph_phase[10] = {
    PFI_PHASE_TRAINING, PFI_PHASE_TRAINING, PFI_PHASE_TRAINING,
    PFI_PHASE_TRAINING, PFI_PHASE_TRAINING, PFI_PHASE_TRAINING,
    PFI_PHASE_TRAINING, PFI_PHASE_TRAINING, PFI_PHASE_TRAINING,
    PFI_PHASE_TRAINING};

static int case_phase_mean(struct pfi_error *err) {
  struct pfi_phase_params pp;
  double mean = 0;
  size_t used = 0;
  pfi_phase_params_init(&pp);
  pp.top_frac = 0.3; /* the top 3 of 10: 8, 9, 10 */
  oom_on();
  int rc = pfi_phase_top_mean(ph_values, ph_phase, 10, &pp, &mean, &used, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(mean, 9, 1e-12);
    assert_int_equal((int)used, 3);
  }
  return rc;
}
OOM_TEST(phase_mean)

static int case_phase_sem(struct pfi_error *err) {
  struct pfi_phase_params pp;
  double sem = 0;
  pfi_phase_params_init(&pp);
  pp.top_frac = 0.3; /* 8, 9, 10: sd 1, sem 1/sqrt(3) */
  oom_on();
  int rc = pfi_phase_top_sem(ph_values, ph_phase, 10, &pp, &sem, err);
  oom_off();
  if (rc == 0)
    ASSERT_NEAR(sem, 1 / sqrt(3.0), 1e-12);
  return rc;
}
OOM_TEST(phase_sem)

/* ---- Prometheus text ---- */

static int case_prom(struct pfi_error *err) {
  static const char text[] =
      "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"h\"} "
      "250.5\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"h\"} 300\n"
      "not a sample line\n";
  struct pfi_prom_gpu *g = NULL;
  struct pfi_prom_stats st;
  oom_on();
  int rc = pfi_prom_parse("p.txt", text, strlen(text), &g, &st, err);
  oom_off();
  if (rc >= 0) {
    assert_int_equal(rc, 2);
    assert_int_equal(g[0].gpu, 0); /* sorted by (host, gpu) */
    assert_string_equal(g[0].uuid, "GPU-a");
    ASSERT_NEAR(g[1].s.v[PFI_FIELD_POWER], 250.5, 0);
    assert_int_equal((int)st.malformed, 1);
  }
  free(g);
  return rc < 0 ? rc : 0;
}
OOM_TEST(prom)

/* ---- throughput ---- */

static int case_jsonl(struct pfi_error *err) {
  static const char line[] = "{\"t\": 10.5, \"tokens\": 1000, \"step\": 3}";
  struct pfi_step st;
  oom_on();
  int rc = pfi_jsonl_parse_line("j.jsonl", 1, line, strlen(line), &st, NULL,
                                err);
  oom_off();
  if (rc >= 0) {
    assert_int_equal(rc, 1);
    ASSERT_NEAR(st.job_t_s, 10.5, 0);
    ASSERT_NEAR(st.tokens, 1000, 0);
    ASSERT_NEAR(st.step, 3, 0);
  }
  return rc < 0 ? rc : 0;
}
OOM_TEST(jsonl)

static int case_tput_regex(struct pfi_error *err) {
  static const char out[] = "step 1 tok/s=12.5\nstep 2 tok/s=13\npartial";
  struct pfi_tput *tp = NULL;
  const struct pfi_step *steps = NULL;
  size_t n = 0;
  oom_on();
  int rc = pfi_tput_open(&tp, "regex:tok/s=([0-9.]+)", err);
  if (rc == 0)
    rc = pfi_tput_start(tp, 0, 0, err);
  if (rc == 0) {
    rc = pfi_tput_feed(tp, out, strlen(out), 5.0);
    if (rc < 0) /* pfi_tput_feed() has no error struct */
      pfi_error_set(err, rc, "%s", pfi_strerror(rc));
  }
  if (rc == 0)
    n = pfi_tput_take(tp, &steps);
  oom_off();
  if (rc == 0) {
    assert_int_equal((int)n, 2);
    ASSERT_NEAR(steps[0].tokens_per_s, 12.5, 0);
    ASSERT_NEAR(steps[1].tokens_per_s, 13, 0);
  }
  pfi_tput_close(tp);
  return rc;
}
OOM_TEST(tput_regex)

/* ---- replay ---- */

static const char target_text[] = "timestamp,power_w\n"
                                  "0,300\n"
                                  "60,270\n"
                                  "120,300\n";

static int case_target(struct pfi_error *err) {
  struct pfi_target tg;
  oom_on();
  int rc = pfi_target_load_mem(&tg, "t.csv", target_text, strlen(target_text),
                               NULL, NULL, err);
  oom_off();
  if (rc < 0)
    return rc;
  assert_int_equal((int)tg.n, 3);
  ASSERT_NEAR(tg.power_w[1], 270, 0);
  assert_string_equal(tg.label[2], "120");
  pfi_target_release(&tg);
  return 0;
}
OOM_TEST(target)

static int case_replay(struct pfi_error *err) {
  struct pfi_problem p;
  struct pfi_target tg;
  struct pfi_replay r;
  struct pfi_error e2;
  memset(&r, 0, sizeof r);
  make_problem(&p);
  assert_int_equal(pfi_target_load_mem(&tg, "t.csv", target_text,
                                       strlen(target_text), NULL, NULL, &e2),
                   0);
  oom_on();
  int rc = pfi_replay_run(&p, PFI_STRAT_ORACLE, NULL, &tg, 300,
                          PFI_REPLAY_EVENT_MIN_CUT, &r, err);
  oom_off();
  if (rc == 0) {
    /* Step 1 cuts 10 %: budget 0.9 * 400 W = 360 W; the oracle gives A its
     * 200 W and B 160 W: 100 + 80 + 0.2 * 60 = 192 tokens/s. */
    ASSERT_NEAR(r.budget_w[1], 360, 1e-9);
    ASSERT_NEAR(r.tokens_per_s[1], 192, 1e-6);
    ASSERT_NEAR(r.tokens_per_s[0], 200, 1e-6);
  }
  pfi_replay_release(&r);
  pfi_target_release(&tg);
  pfi_problem_release(&p);
  return rc;
}
OOM_TEST(replay)

static int case_index_excluded(struct pfi_error *err) {
  /* Caps 400 (P_max 800 W, T_max 1000), 350 (did not bind: T = T_max,
   * excluded) and 200 (400 W, 700: ratio 5/3 as in curves_text). */
  static const char text[] = "job,cap_w,power_w,tokens_per_s\n"
                             "e,400,800,1000\n"
                             "e,350,780,1000\n"
                             "e,200,400,700\n";
  struct pfi_curveset set;
  struct pfi_index ix;
  struct pfi_error e2;
  assert_int_equal(pfi_curveset_read_mem(&set, "e.csv", text, strlen(text),
                                         NULL, &e2),
                   0);
  oom_on();
  int rc = pfi_index_compute(&set.c[0], &ix, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(ix.pfi, 5.0 / 3.0, 1e-12);
    assert_int_equal((int)ix.n_excluded, 1);
    ASSERT_NEAR(ix.excluded_caps[0], 350, 0);
    pfi_index_release(&ix);
  }
  pfi_curveset_release(&set);
  return rc;
}
OOM_TEST(index_excluded)

static int case_restrict(struct pfi_error *err) {
  static const char text[] = "job,cap_w,power_w,tokens_per_s\n"
                             "r,400,800,1000\n"
                             "r,300,600,900\n"
                             "r,200,400,700\n";
  const double caps[] = {200, 300};
  struct pfi_curveset set;
  struct pfi_error e2;
  assert_int_equal(pfi_curveset_read_mem(&set, "r.csv", text, strlen(text),
                                         NULL, &e2),
                   0);
  oom_on();
  int rc = pfi_curveset_restrict(&set, caps, 2, err);
  oom_off();
  if (rc == 0) { /* the 400 W point is gone; 300 W is the new reference */
    assert_int_equal((int)set.c[0].n, 2);
    ASSERT_NEAR(set.c[0].pts[1].cap_w, 300, 0);
  } else { /* a failure leaves the set as it was */
    assert_int_equal((int)set.c[0].n, 3);
    ASSERT_NEAR(set.c[0].pts[2].cap_w, 400, 0);
  }
  pfi_curveset_release(&set);
  return rc;
}
OOM_TEST(restrict)

static int case_sim_weighted(struct pfi_error *err) {
  /* Weight 0 on job B: every workload is job A alone, whose curve is a
   * line, so every strategy meets the oracle exactly (gap 0). */
  struct pfi_problem p;
  struct pfi_sim_result res;
  const double cuts[] = {0.2};
  const double weight[] = {1, 0};
  struct pfi_sim_config cfg;
  memset(&cfg, 0, sizeof cfg);
  memset(&res, 0, sizeof res);
  cfg.workloads = 2;
  cfg.size = 2;
  cfg.cuts = cuts;
  cfg.ncuts = 1;
  cfg.strategies = (1u << PFI_STRAT_ORACLE) | (1u << PFI_STRAT_EQUAL) |
                   (1u << PFI_STRAT_PFI_AWARE);
  cfg.seed = 3;
  cfg.sample_weight = weight;
  make_problem(&p);
  oom_on();
  int rc = pfi_sim_run(&p, &alloc_in, &cfg, &res, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(res.cell[PFI_STRAT_EQUAL][0].gap_mean, 0, 1e-9);
    ASSERT_NEAR(res.cell[PFI_STRAT_PFI_AWARE][0].gap_mean, 0, 1e-9);
    assert_null(res.cell[PFI_STRAT_DRAM_COPY]);
  }
  pfi_sim_result_release(&res);
  pfi_problem_release(&p);
  return rc;
}
OOM_TEST(sim_weighted)

static int case_tput_jsonl(struct pfi_error *err) {
  static const char lines[] = "{\"elapsed_s\": 1, \"tokens\": 100}\n"
                              "{\"elapsed_s\": 2, \"tokens\": 300}\n"
                              "{\"elapsed_s\": 3, \"tokens_per_s\": 250}\n";
  char path[] = "/tmp/pfi-oom-tput-XXXXXX";
  char spec[64];
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  snprintf(spec, sizeof spec, "jsonl:%s", path);
  struct pfi_tput *tp = NULL;
  const struct pfi_step *steps = NULL;
  size_t n = 0;
  oom_on();
  int rc = pfi_tput_open(&tp, spec, err);
  if (rc == 0)
    rc = pfi_tput_start(tp, 0, 0, err);
  if (rc == 0) { /* the job writes after the start truncated the file */
    oom_off();
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs(lines, f);
    fclose(f);
    oom_on();
    rc = pfi_tput_poll(tp, 10, 1, err);
  }
  if (rc >= 0) {
    n = pfi_tput_take(tp, &steps);
    rc = 0;
  }
  oom_off();
  if (rc == 0 && oom_hit_json && pfi_tput_bad_lines(tp, err) == 1) {
    /* jansson's lexer reported the allocation it could not make as a
     * syntax error (see oom_run), so the line was counted as malformed,
     * as the collector does with every bad line; the run loop accepts
     * that PFI_EPARSE from jansson and nothing else. A line dropped for
     * any other code (out of memory reported as a bad line) fails here. */
    ASSERT_EQ_INT(err->code, PFI_EPARSE);
    rc = err->code;
  } else if (rc == 0) {
    /* Otherwise no line is lost: all three arrive, the second at
     * (300 - 100) / (2 - 1) = 200 tokens/s, the third as given. */
    long bad = pfi_tput_bad_lines(tp, NULL);
    assert_int_equal((int)bad, 0);
    assert_int_equal((int)n, 3);
    ASSERT_NEAR(steps[1].tokens_per_s, 200, 1e-9);
    ASSERT_NEAR(steps[2].tokens_per_s, 250, 0);
  }
  pfi_tput_close(tp);
  unlink(path);
  return rc;
}
OOM_TEST(tput_jsonl)

static enum pfi_strategy replay_strategy;

static int case_replay_strategy(struct pfi_error *err) {
  struct pfi_problem p;
  struct pfi_target tg;
  struct pfi_replay r;
  struct pfi_error e2;
  memset(&r, 0, sizeof r);
  make_problem(&p);
  assert_int_equal(pfi_target_load_mem(&tg, "t.csv", target_text,
                                       strlen(target_text), NULL, NULL, &e2),
                   0);
  oom_on();
  int rc = pfi_replay_run(&p, replay_strategy, &alloc_in, &tg, 300,
                          PFI_REPLAY_EVENT_MIN_CUT, &r, err);
  oom_off();
  if (rc == 0) {
    /* Every strategy meets the 360 W budget of step 1 (feasible: the
     * floors sum to 200 W) and runs uncapped at steps 0 and 2. */
    assert_int_equal(r.infeasible_steps, 0);
    ASSERT_NEAR(r.power_w[1], 360, 1e-6);
    ASSERT_NEAR(r.tokens_per_s[2], 200, 1e-6);
    assert_int_equal((int)r.event_steps, 1);
  }
  pfi_replay_release(&r);
  pfi_target_release(&tg);
  pfi_problem_release(&p);
  return rc;
}

static void test_replay_strategies(void **state) {
  (void)state;
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    char what[64];
    snprintf(what, sizeof what, "replay %s", pfi_strategy_name(s));
    replay_strategy = (enum pfi_strategy)s;
    oom_run(what, case_replay_strategy);
  }
}

static int case_oracle_nonconcave(struct pfi_error *err) {
  /* Job A is convex: 100 W -> 0, 150 W -> 10, 200 W -> 100 tokens/s (its
   * concave envelope is the line of slope 1 from 100 to 200 W); job B the
   * line 100 W -> 80, 200 W -> 100 (slope 0.2). At 250 W the envelope puts
   * the 50 W above the floors into A (bound 50 + 80 = 130), where A truly
   * gives 10: the solver must branch. On A = 100 + t, B = 150 - t
   * (0 <= t <= 50) the true total is 0.2 t + 80 + 0.2 (50 - t) = 90 for
   * every t, so the optimum is 90 tokens/s. */
  static const double ax[] = {100, 150, 200}, ay[] = {0, 10, 100};
  struct pfi_problem p;
  struct pfi_oracle_stats st;
  struct pfi_error e2;
  double pw[2], total = 0;
  pfi_problem_init(&p);
  assert_int_equal(pfi_problem_add(&p, ax, ay, 3, 100, 200, &e2), 0);
  assert_int_equal(pfi_problem_add(&p, pb_x, pb_y, 2, 100, 200, &e2), 0);
  oom_on();
  int rc = pfi_oracle_solve(&p, 250, pw, &total, &st, err);
  oom_off();
  if (rc == 0) {
    ASSERT_NEAR(total, 90, 1e-9);
    ASSERT_NEAR(pw[0] + pw[1], 250, 1e-6);
    assert_true(st.nodes > 1); /* it did branch */
  }
  pfi_problem_release(&p);
  return rc;
}
OOM_TEST(oracle_nonconcave)

static int case_curves_file(struct pfi_error *err) {
  /* The file reader (pfi_read_file) in front of the same parser. */
  char path[] = "/tmp/pfi-oom-curves-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, curves_text, strlen(curves_text)),
                   (ssize_t)strlen(curves_text));
  close(fd);
  struct pfi_curveset set;
  oom_on();
  int rc = pfi_curveset_read(&set, path, NULL, err);
  oom_off();
  unlink(path);
  if (rc < 0)
    return rc;
  assert_int_equal((int)set.n, 2);
  assert_int_equal(set.c[1].gpus, 1);
  pfi_curveset_release(&set);
  return rc;
}
OOM_TEST(curves_file)

static int case_prom_many(struct pfi_error *err) {
  /* 40 GPUs, listed from the highest index down, so the GPU table grows
   * and is sorted; GPU i draws 100 + i W. */
  char text[40 * 96];
  size_t len = 0;
  for (int i = 39; i >= 0; i--)
    len += (size_t)snprintf(text + len, sizeof text - len,
                            "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-%d\"}"
                            " %d\n",
                            i, i, 100 + i);
  struct pfi_prom_gpu *g = NULL;
  oom_on();
  int rc = pfi_prom_parse("p.txt", text, len, &g, NULL, err);
  oom_off();
  if (rc >= 0) {
    assert_int_equal(rc, 40);
    for (int i = 0; i < 40; i++) {
      assert_int_equal(g[i].gpu, i);
      ASSERT_NEAR(g[i].s.v[PFI_FIELD_POWER], 100 + i, 0);
    }
  }
  free(g);
  return rc < 0 ? rc : 0;
}
OOM_TEST(prom_many)

/* ---- the emulator's job library and sweep ---- */

static char *jobs_text; /* header and first 3 jobs of data/jobs/jobs.csv */
static size_t jobs_len;

static int case_emu_jobs(struct pfi_error *err) {
  struct pfi_emu_jobs jobs;
  memset(&jobs, 0, sizeof jobs);
  oom_on();
  int rc = pfi_emu_jobs_load_mem(&jobs, "jobs.csv", jobs_text, jobs_len, err);
  oom_off();
  if (rc == 0) {
    /* The first job's id is the text before the first comma of line 2. */
    const char *l2 = strchr(jobs_text, '\n') + 1;
    size_t idlen = (size_t)(strchr(l2, ',') - l2);
    assert_int_equal((int)jobs.n, 3);
    assert_int_equal((int)strlen(jobs.job[0].id), (int)idlen);
    assert_memory_equal(jobs.job[0].id, l2, idlen);
    pfi_emu_jobs_release(&jobs);
  }
  return rc;
}
OOM_TEST(emu_jobs)

static struct pfi_emu_point emu_ref[2]; /* an unarmed sweep, made in main */
static const double emu_caps[] = {300, 700};

static int case_emu_sweep(struct pfi_error *err) {
  struct pfi_emu_jobs jobs;
  struct pfi_emu_point pt[2];
  struct pfi_error e2;
  assert_int_equal(
      pfi_emu_jobs_load_mem(&jobs, "jobs.csv", jobs_text, jobs_len, &e2), 0);
  oom_on();
  int rc = pfi_emu_sweep(&jobs.job[0], emu_caps, 2, 1, 30, pt, err);
  oom_off();
  if (rc == 0) {
    /* The emulator is deterministic (same seed, same bytes), so a sweep
     * that met no failure equals the one made before anything was armed;
     * the emulator's own values are checked in test_emu. */
    for (int i = 0; i < 2; i++) {
      ASSERT_NEAR(pt[i].power_w, emu_ref[i].power_w, 0);
      ASSERT_NEAR(pt[i].tokens_per_s, emu_ref[i].tokens_per_s, 0);
    }
  }
  pfi_emu_jobs_release(&jobs);
  return rc;
}
OOM_TEST(emu_sweep)

int main(void) {
#ifdef PFI_OOM_WRAP
  json_set_alloc_funcs(oom_json_malloc, free);
#else
  fprintf(stderr, "test_oom: built without the allocation wrappers "
                  "(cmake/oom.cmake not applied): every case is skipped\n");
#endif
  /* A saved model for case_model_load, made before anything is armed. */
  {
    const double coef[] = {1, 2}, se[] = {0.1, 0.2};
    char *feat = strdup("x");
    const double cov[] = {0.01, -0.005, -0.005, 0.04};
    struct pfi_model m = {1,   &feat, (double *)coef, (double *)se,
                          1,   4,     0.9,            0.1,
                          0.3, 2,     (double *)cov,  1};
    struct pfi_error err;
    char path[] = "/tmp/pfi-oom-model-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || pfi_model_save(&m, path, &err) != 0 ||
        pfi_read_file(path, &model_json, &model_json_len, &err) != 0) {
      fprintf(stderr, "test_oom: cannot make a model file in /tmp\n");
      return 1;
    }
    close(fd);
    unlink(path);
    free(feat);
  }
  /* The emulator's first three jobs, and a sweep of the first, unarmed.
   * ctest runs the test from the source directory. */
  {
    struct pfi_error err;
    char *all = NULL;
    size_t len = 0;
    if (pfi_read_file("data/jobs/jobs.csv", &all, &len, &err) != 0) {
      fprintf(stderr, "test_oom: data/jobs/jobs.csv: %s (run from the "
                      "source directory)\n", err.msg);
      return 1;
    }
    char *p = all;
    for (int i = 0; i < 4 && p; i++)
      if ((p = strchr(p, '\n')))
        p++;
    jobs_len = p ? (size_t)(p - all) : len;
    jobs_text = all;
    struct pfi_emu_jobs jobs;
    if (pfi_emu_jobs_load_mem(&jobs, "jobs.csv", jobs_text, jobs_len, &err) ||
        pfi_emu_sweep(&jobs.job[0], emu_caps, 2, 1, 30, emu_ref, &err)) {
      fprintf(stderr, "test_oom: emulator: %s\n", err.msg);
      return 1;
    }
    pfi_emu_jobs_release(&jobs);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csv_stream), cmocka_unit_test(test_table),
      cmocka_unit_test(test_curves),     cmocka_unit_test(test_curves_map),
      cmocka_unit_test(test_index),      cmocka_unit_test(test_index_ci),
      cmocka_unit_test(test_ranks),      cmocka_unit_test(test_spearman),
      cmocka_unit_test(test_median),     cmocka_unit_test(test_ols),
      cmocka_unit_test(test_kruskal),    cmocka_unit_test(test_holm),
      cmocka_unit_test(test_bh),
      cmocka_unit_test(test_features),   cmocka_unit_test(test_model_fit),
      cmocka_unit_test(test_model_folds), cmocka_unit_test(test_model_load),
      cmocka_unit_test(test_strlist),    cmocka_unit_test(test_problem),
      cmocka_unit_test(test_oracle),     cmocka_unit_test(test_alloc),
      cmocka_unit_test(test_proportional), cmocka_unit_test(test_sim),
      cmocka_unit_test(test_mix),        cmocka_unit_test(test_phase_mean),
      cmocka_unit_test(test_phase_sem),  cmocka_unit_test(test_prom),
      cmocka_unit_test(test_jsonl),      cmocka_unit_test(test_tput_regex),
      cmocka_unit_test(test_target),     cmocka_unit_test(test_replay),
      cmocka_unit_test(test_index_excluded), cmocka_unit_test(test_restrict),
      cmocka_unit_test(test_sim_weighted), cmocka_unit_test(test_tput_jsonl),
      cmocka_unit_test(test_replay_strategies),
      cmocka_unit_test(test_oracle_nonconcave),
      cmocka_unit_test(test_curves_file), cmocka_unit_test(test_prom_many),
      cmocka_unit_test(test_emu_jobs),   cmocka_unit_test(test_emu_sweep),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(model_json);
  free(jobs_text);
  return rc;
}
