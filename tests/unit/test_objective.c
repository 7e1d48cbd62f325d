/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The allocation objective (objective.h): a two-job example worked by
 * hand under every objective, weights and the minimum share; plans and
 * capacity quotes unchanged when one job's throughput is scaled (unit-free
 * default) while the raw sum's plan moves; the weights file and the power
 * parser.
 */
#include <stdlib.h>
#include <string.h>

#include "pfi/alloc.h"
#include "pfi/capacity.h"
#include "pfi/objective.h"
#include "pfi/oracle.h"
#include "testutil.h"

/*
 * Job A: 32 GPUs, (1000 W, 600/s) -> (2000 W, 1000/s), a straight line of
 * slope 0.4 per W, T_A = 1000.
 * Job B: 8 GPUs, (1000 W, 100/s) -> (2000 W, 400/s), slope 0.3, T_B = 400,
 * its throughput multiplied by `bscale` (its unit).
 * Budget 3000 W: 1000 W above the floors, exactly one job's room; both
 * curves are lines, so the optimum gives all 1000 W to the job with the
 * larger value per W:
 *   throughput  A 0.4 vs B 0.3 (bscale 1)         -> A 2000 W, B 1000 W
 *               A 0.4 vs B 300 (bscale 1000)      -> A 1000 W, B 2000 W
 *   jobs        A 0.4/1000 = 4e-4, B 0.3/400 = 7.5e-4 -> B gets it
 *   work        A 4e-4 x 32 = 0.0128, B 7.5e-4 x 8 = 0.006 -> A gets it
 *               (whatever bscale)
 *   work, 8 GPUs each: A 0.0032, B 0.006            -> B gets it
 *   jobs, weights A 3, B 1: A 1.2e-3 > B 7.5e-4     -> A gets it
 *   throughput, min share 50 %: B keeps >= 200/s, so B >= 1000 + 100/0.3
 *               = 1333.33 W; A takes the rest (0.4 > 0.3): A 1666.67 W.
 */
static void two_jobs(struct pfi_problem *p, double bscale) {
  struct pfi_error err;
  double x[2] = {1000, 2000}, ya[2] = {600, 1000},
         yb[2] = {100 * bscale, 400 * bscale};
  pfi_problem_init(p);
  assert_int_equal(pfi_problem_add(p, x, ya, 2, 1000, 2000, &err), 0);
  assert_int_equal(pfi_problem_add(p, x, yb, 2, 1000, 2000, &err), 0);
}

static void solve(const struct pfi_problem *raw, const struct pfi_objective *o,
                  const int *gpus, double budget, double *pw) {
  struct pfi_problem v;
  struct pfi_error err;
  pfi_problem_init(&v);
  int rc = pfi_objective_problem(raw, o, gpus, NULL, NULL, &v, NULL, &err);
  if (rc != 0)
    fail_msg("pfi_objective_problem: %s", err.msg);
  rc = pfi_oracle_solve(&v, budget, pw, NULL, NULL, &err);
  if (rc != 0)
    fail_msg("pfi_oracle_solve: %s", err.msg);
  pfi_problem_release(&v);
}

static void test_two_jobs_by_hand(void **state) {
  (void)state;
  struct pfi_problem p, p1000;
  two_jobs(&p, 1);
  two_jobs(&p1000, 1000);
  const int gpus[2] = {32, 8}, eight[2] = {8, 8};
  double pw[2];
  struct pfi_objective o;
  pfi_objective_init(&o);
  assert_int_equal(o.kind, PFI_OBJ_WORK);

  o.kind = PFI_OBJ_THROUGHPUT;
  solve(&p, &o, gpus, 3000, pw);
  ASSERT_NEAR(pw[0], 2000, 1e-6);
  ASSERT_NEAR(pw[1], 1000, 1e-6);
  solve(&p1000, &o, gpus, 3000, pw);
  ASSERT_NEAR(pw[0], 1000, 1e-6);
  ASSERT_NEAR(pw[1], 2000, 1e-6);

  o.kind = PFI_OBJ_JOBS;
  solve(&p, &o, gpus, 3000, pw);
  ASSERT_NEAR(pw[0], 1000, 1e-6);
  ASSERT_NEAR(pw[1], 2000, 1e-6);

  o.kind = PFI_OBJ_WORK;
  solve(&p, &o, gpus, 3000, pw);
  ASSERT_NEAR(pw[0], 2000, 1e-6);
  ASSERT_NEAR(pw[1], 1000, 1e-6);
  solve(&p1000, &o, gpus, 3000, pw);
  ASSERT_NEAR(pw[0], 2000, 1e-6);
  ASSERT_NEAR(pw[1], 1000, 1e-6);
  solve(&p, &o, eight, 3000, pw);
  ASSERT_NEAR(pw[0], 1000, 1e-6);
  ASSERT_NEAR(pw[1], 2000, 1e-6);
  /* No GPU counts at all: each job once, as jobs. */
  solve(&p, &o, NULL, 3000, pw);
  ASSERT_NEAR(pw[0], 1000, 1e-6);

  const double w[2] = {3, 1};
  o.kind = PFI_OBJ_JOBS;
  o.weight = w;
  solve(&p, &o, gpus, 3000, pw);
  ASSERT_NEAR(pw[0], 2000, 1e-6);
  ASSERT_NEAR(pw[1], 1000, 1e-6);

  o.weight = NULL;
  o.kind = PFI_OBJ_THROUGHPUT;
  o.min_share = 0.5;
  solve(&p, &o, gpus, 3000, pw);
  ASSERT_NEAR(pw[1], 1000 + 100 / 0.3, 1e-6);
  ASSERT_NEAR(pw[0], 3000 - (1000 + 100 / 0.3), 1e-6);

  /* The factors themselves: work s_i = g_i / T_i. */
  double sc[2];
  struct pfi_error err;
  o.kind = PFI_OBJ_WORK;
  o.min_share = 0;
  assert_int_equal(pfi_objective_scale(&p, &o, gpus, NULL, NULL, sc, &err), 0);
  ASSERT_NEAR(sc[0], 32.0 / 1000, 1e-15);
  ASSERT_NEAR(sc[1], 8.0 / 400, 1e-15);
  pfi_problem_release(&p);
  pfi_problem_release(&p1000);
}

static unsigned long long rs = 0x9E3779B97F4A7C15ULL;
static double urand(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (double)(rs >> 11) / 9007199254740992.0;
}

/* A random measured curve of m points (power increasing, throughput
 * mostly increasing, sometimes not: noise). */
static size_t random_curve(double *x, double *y) {
  size_t m = 2 + (size_t)(urand() * 5);
  x[0] = 800 + 800 * urand();
  y[0] = 100 + 900 * urand();
  for (size_t j = 1; j < m; j++) {
    x[j] = x[j - 1] + 50 + 400 * urand();
    y[j] = y[j - 1] + (urand() - 0.15) * 2 * (x[j] - x[j - 1]);
    if (y[j] < 1)
      y[j] = 1;
  }
  return m;
}

/*
 * Random 4-job problems; job 0's throughput scaled by k. Under work and
 * jobs every strategy's powers (and so every cap) are the same as
 * unscaled: bit for bit for k = 1024 (a power of two: the shares are the
 * same numbers), within 1e-9 W for k = 1000. Under throughput the oracle's
 * plan changes in most of them (the test can see a unit dependence).
 */
static void test_unit_scaling(void **state) {
  (void)state;
  struct pfi_error err;
  const int gpus[4] = {8, 32, 8, 16};
  const enum pfi_strategy strat[] = {PFI_STRAT_ORACLE, PFI_STRAT_EQUAL,
                                     PFI_STRAT_PFI_AWARE, PFI_STRAT_PFI_CURVE};
  const double pfi[4] = {1.4, 2.1, 0.8, 3.0};
  struct pfi_alloc_inputs in = {pfi, NULL, NULL};
  int moved = 0;
  for (int trial = 0; trial < 200; trial++) {
    double x[4][8], y[4][8];
    size_t m[4];
    for (int i = 0; i < 4; i++)
      m[i] = random_curve(x[i], y[i]);
    double cut = 0.05 + 0.3 * urand();
    const double ks[2] = {1024, 1000};
    for (int kk = 0; kk < 2; kk++) {
      struct pfi_problem a, b;
      pfi_problem_init(&a);
      pfi_problem_init(&b);
      for (int i = 0; i < 4; i++) {
        double ys[8];
        for (size_t j = 0; j < m[i]; j++)
          ys[j] = i == 0 ? y[i][j] * ks[kk] : y[i][j];
        assert_int_equal(pfi_problem_add(&a, x[i], y[i], m[i], x[i][0],
                                         x[i][m[i] - 1], &err),
                         0);
        assert_int_equal(
            pfi_problem_add(&b, x[i], ys, m[i], x[i][0], x[i][m[i] - 1], &err),
            0);
      }
      double lo, hi;
      pfi_problem_bounds(&a, &lo, &hi);
      double budget = (1 - cut) * hi;
      if (budget < lo)
        budget = lo + 0.5 * (hi - lo);
      for (int kind = 0; kind < PFI_OBJ__COUNT; kind++) {
        struct pfi_objective o;
        pfi_objective_init(&o);
        o.kind = (enum pfi_objective_kind)kind;
        struct pfi_problem va, vb;
        pfi_problem_init(&va);
        pfi_problem_init(&vb);
        assert_int_equal(
            pfi_objective_problem(&a, &o, gpus, NULL, NULL, &va, NULL, &err),
            0);
        assert_int_equal(
            pfi_objective_problem(&b, &o, gpus, NULL, NULL, &vb, NULL, &err),
            0);
        for (size_t s = 0; s < sizeof strat / sizeof *strat; s++) {
          double pa[4], pb[4];
          if (pfi_alloc_run(&va, strat[s], budget, &in, pa, &err) != 0)
            fail_msg("run a: %s", err.msg);
          if (pfi_alloc_run(&vb, strat[s], budget, &in, pb, &err) != 0)
            fail_msg("run b: %s", err.msg);
          for (int i = 0; i < 4; i++) {
            if (kind == PFI_OBJ_THROUGHPUT) {
              if (strat[s] == PFI_STRAT_ORACLE && i == 0 &&
                  fabs(pa[i] - pb[i]) > 1e-6)
                moved++;
              continue;
            }
            if (kk == 0 && memcmp(&pa[i], &pb[i], sizeof pa[i]) != 0)
              fail_msg("trial %d, objective %s, strategy %s, job %d: %.17g "
                       "W, scaled by 1024 %.17g W",
                       trial, pfi_objective_name(o.kind),
                       pfi_strategy_name(strat[s]), i, pa[i], pb[i]);
            if (kk == 1)
              ASSERT_NEAR(pa[i], pb[i], 1e-9 * hi);
          }
        }
        /* The capacity quotes too (oracle and equal). */
        if (kind == PFI_OBJ_WORK && kk == 0) {
          struct pfi_capacity ca, cb;
          memset(&ca, 0, sizeof ca);
          memset(&cb, 0, sizeof cb);
          assert_int_equal(pfi_capacity_compute(&va, PFI_STRAT_ORACLE, NULL,
                                                NULL, NULL, 10, &ca, &err),
                           0);
          assert_int_equal(pfi_capacity_compute(&vb, PFI_STRAT_ORACLE, NULL,
                                                NULL, NULL, 10, &cb, &err),
                           0);
          for (int q = 0; q < PFI_CAPACITY_NQUOTE; q++)
            assert_memory_equal(&ca.quote_w[q], &cb.quote_w[q],
                                sizeof ca.quote_w[q]);
          pfi_capacity_release(&ca);
          pfi_capacity_release(&cb);
        }
        pfi_problem_release(&va);
        pfi_problem_release(&vb);
      }
      pfi_problem_release(&a);
      pfi_problem_release(&b);
    }
  }
  /* The raw sum depends on the unit: scaling job 0 by 1000 moves it. */
  if (moved < 100)
    fail_msg("throughput objective: job 0 moved in only %d of 400 scaled "
             "problems",
             moved);
}

/* The minimum share on a curve that dips: the floor is the lowest power
 * above which the curve stays at or above m T. Points (1000, 500),
 * (1500, 300), (2000, 900), (2500, 1000): T = 1000; m = 0.6 -> 600, reached
 * on the segment 1500 -> 2000 at 1500 + 300/600 * 500 = 1750 W (the first
 * point, 500 < 600, is below too). */
static void test_min_share_dip(void **state) {
  (void)state;
  struct pfi_error err;
  struct pfi_problem p, v;
  pfi_problem_init(&p);
  pfi_problem_init(&v);
  double x[4] = {1000, 1500, 2000, 2500}, y[4] = {500, 300, 900, 1000};
  assert_int_equal(pfi_problem_add(&p, x, y, 4, 1000, 2500, &err), 0);
  struct pfi_objective o;
  pfi_objective_init(&o);
  o.kind = PFI_OBJ_THROUGHPUT;
  o.min_share = 0.6;
  assert_int_equal(
      pfi_objective_problem(&p, &o, NULL, NULL, NULL, &v, NULL, &err), 0);
  ASSERT_NEAR(pfi_problem_lo(&v, 0), 1750, 1e-9);
  ASSERT_NEAR(pfi_problem_hi(&v, 0), 2500, 0);
  /* m = 0.4: 500 >= 400 at 1000 W but 300 < 400 at 1500 W: the floor is
   * on the rising segment, 1500 + 100/600 * 500. */
  o.min_share = 0.4;
  assert_int_equal(
      pfi_objective_problem(&p, &o, NULL, NULL, NULL, &v, NULL, &err), 0);
  ASSERT_NEAR(pfi_problem_lo(&v, 0), 1500 + 100.0 / 600 * 500, 1e-9);
  o.min_share = 1.0;
  assert_int_equal(
      pfi_objective_problem(&p, &o, NULL, NULL, NULL, &v, NULL, &err),
      PFI_EINVAL);
  pfi_problem_release(&p);
  pfi_problem_release(&v);
}

static void test_errors(void **state) {
  (void)state;
  struct pfi_error err;
  struct pfi_problem p, v;
  two_jobs(&p, 1);
  pfi_problem_init(&v);
  struct pfi_objective o;
  pfi_objective_init(&o);
  const int some[2] = {8, 0};
  const char *names[2] = {"bert", "resnet"};
  assert_int_equal(
      pfi_objective_problem(&p, &o, some, NULL, names, &v, NULL, &err),
      PFI_EINVAL);
  assert_non_null(strstr(err.msg, "resnet has no GPU count"));
  const double bad[2] = {1, -1};
  o.weight = bad;
  assert_int_equal(
      pfi_objective_problem(&p, &o, NULL, NULL, names, &v, NULL, &err),
      PFI_EINVAL);
  assert_non_null(strstr(err.msg, "job resnet: weight"));
  assert_int_equal(pfi_objective_parse("work"), PFI_OBJ_WORK);
  assert_int_equal(pfi_objective_parse("throughput"), PFI_OBJ_THROUGHPUT);
  assert_int_equal(pfi_objective_parse("jobs"), PFI_OBJ_JOBS);
  assert_int_equal(pfi_objective_parse("tokens"), -1);
  pfi_problem_release(&p);
  pfi_problem_release(&v);
}

static void test_weights_file(void **state) {
  (void)state;
  struct pfi_error err;
  const char *jobs[2] = {"a", "b"};
  double w[2] = {0, 0};
  const char *ok = "job,cap_w,weight\na,200,2.5\na,300,2.5\nb,200,0\nc,1,x\n";
  assert_int_equal(
      pfi_objective_weights_read_mem("w.csv", ok, strlen(ok), jobs, 2, w, &err),
      0);
  ASSERT_NEAR(w[0], 2.5, 0);
  ASSERT_NEAR(w[1], 0, 0);
  const char *dis = "job,weight\na,1\nb,2\na,3\n";
  assert_int_equal(pfi_objective_weights_read_mem("w.csv", dis, strlen(dis),
                                                  jobs, 2, w, &err),
                   PFI_EPARSE);
  char b[512];
  assert_non_null(strstr(pfi_error_format(&err, b, sizeof b), "w.csv:4:3"));
  const char *neg = "job,weight\na,1\nb,-2\n";
  assert_int_equal(pfi_objective_weights_read_mem("w.csv", neg, strlen(neg),
                                                  jobs, 2, w, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(pfi_error_format(&err, b, sizeof b), "w.csv:3:3"));
  const char *miss = "job,weight\na,1\n";
  assert_int_equal(pfi_objective_weights_read_mem("w.csv", miss, strlen(miss),
                                                  jobs, 2, w, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(pfi_error_format(&err, b, sizeof b),
                         "w.csv: no weight for job b"));
  const char *nocol = "job,prio\na,1\n";
  assert_int_equal(pfi_objective_weights_read_mem("w.csv", nocol, strlen(nocol),
                                                  jobs, 2, w, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "job and weight"));
}

static void test_power_parse(void **state) {
  (void)state;
  struct pfi_error err;
  double v;
  assert_int_equal(pfi_power_parse("150kW", &v, &err), 0);
  ASSERT_NEAR(v, 150000, 0);
  assert_int_equal(pfi_power_parse("2.5 MW", &v, &err), 0);
  ASSERT_NEAR(v, 2.5e6, 0);
  assert_int_equal(pfi_power_parse("90000W", &v, &err), 0);
  ASSERT_NEAR(v, 90000, 0);
  assert_int_equal(pfi_power_parse("4500", &v, &err), 0);
  ASSERT_NEAR(v, 4500, 0);
  assert_int_equal(pfi_power_parse("0", &v, &err), PFI_EINVAL);
  assert_int_equal(pfi_power_parse("12 kw", &v, &err), PFI_EINVAL);
  assert_int_equal(pfi_power_parse("nan", &v, &err), PFI_EINVAL);
  assert_int_equal(pfi_power_parse("2TW", &v, &err), PFI_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_jobs_by_hand),
      cmocka_unit_test(test_unit_scaling),
      cmocka_unit_test(test_min_share_dip),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_weights_file),
      cmocka_unit_test(test_power_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
