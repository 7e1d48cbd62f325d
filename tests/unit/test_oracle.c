/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The exact oracle against an independent solver (GLPK: an LP of segment
 * variables for concave curves, a MILP of breakpoint weights with one
 * binary per segment otherwise) on thousands of random small instances,
 * and the allocation strategies' invariants: budget met, ranges kept, never
 * above the oracle, equal = a uniform cut when no floor binds, floors
 * redistributed as worked by hand.
 */
#include <glpk.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/alloc.h"
#include "pfi/oracle.h"
#include "testutil.h"

static unsigned long long rs = 0x2545F4914F6CDD1DULL;
static double urand(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (double)(rs >> 11) / 9007199254740992.0;
}

/* A random job: m points with increasing power; concave when asked
 * (decreasing positive slopes), otherwise arbitrary throughputs. */
static void random_job(struct pfi_problem *p, int concave) {
  size_t m = 1 + (size_t)(urand() * 6);
  double x[8], y[8];
  x[0] = 50 + 400 * urand();
  y[0] = 100 + 1000 * urand();
  double slope = 5 * urand() + 0.5;
  for (size_t j = 1; j < m; j++) {
    x[j] = x[j - 1] + 1 + 200 * urand();
    if (concave) {
      slope *= urand();
      y[j] = y[j - 1] + slope * (x[j] - x[j - 1]);
    } else {
      /* Mostly increasing, sometimes falling: noisy measured curves. */
      y[j] = y[j - 1] + (urand() - 0.25) * 3 * (x[j] - x[j - 1]);
    }
  }
  struct pfi_error err;
  int rc = pfi_problem_add(p, x, y, m, x[0], x[m - 1], &err);
  if (rc != 0)
    fail_msg("pfi_problem_add: %s", err.msg);
}

/* GLPK, LP over segments; valid only for concave curves. */
static double glpk_lp(const struct pfi_problem *p, double B) {
  glp_prob *lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MAX);
  glp_add_rows(lp, 1);
  double base = 0, lo = 0;
  for (size_t i = 0; i < p->njobs; i++) {
    lo += p->x[p->off[i]];
    base += p->y[p->off[i]];
  }
  glp_set_row_bnds(lp, 1, GLP_FX, B - lo, B - lo);
  int nseg = 0;
  for (size_t i = 0; i < p->njobs; i++)
    nseg += (int)(p->off[i + 1] - p->off[i] - 1);
  int *ind = malloc((nseg + 1) * sizeof *ind);
  double *val = malloc((nseg + 1) * sizeof *val);
  if (nseg > 0) {
    glp_add_cols(lp, nseg);
    int c = 1;
    for (size_t i = 0; i < p->njobs; i++)
      for (size_t k = p->off[i]; k + 1 < p->off[i + 1]; k++) {
        double len = p->x[k + 1] - p->x[k];
        glp_set_col_bnds(lp, c, GLP_DB, 0, len);
        glp_set_obj_coef(lp, c, (p->y[k + 1] - p->y[k]) / len);
        ind[c] = c;
        val[c] = 1;
        c++;
      }
    glp_set_mat_row(lp, 1, nseg, ind, val);
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  int rc = glp_simplex(lp, &parm);
  double obj = NAN;
  if (nseg == 0)
    obj = base;
  else if (rc == 0 && glp_get_status(lp) == GLP_OPT)
    obj = base + glp_get_obj_val(lp);
  free(ind);
  free(val);
  glp_delete_prob(lp);
  return obj;
}

/* GLPK, MILP: lambda_j weights of breakpoints, one binary per segment,
 * lambda_j <= z_{j-1} + z_j (SOS2 by binaries). Exact for any curve. */
static double glpk_milp(const struct pfi_problem *p, double B) {
  glp_prob *mip = glp_create_prob();
  glp_set_obj_dir(mip, GLP_MAX);
  int ncol = 0;
  for (size_t i = 0; i < p->njobs; i++) {
    int m = (int)(p->off[i + 1] - p->off[i]);
    ncol += m + (m > 1 ? m - 1 : 0);
  }
  glp_add_cols(mip, ncol);
  int *ia = malloc((size_t)(8 * ncol + 16) * sizeof *ia);
  int *ja = malloc((size_t)(8 * ncol + 16) * sizeof *ja);
  double *ar = malloc((size_t)(8 * ncol + 16) * sizeof *ar);
  int ne = 0, col = 1;
  int budget_row = glp_add_rows(mip, 1);
  glp_set_row_bnds(mip, budget_row, GLP_FX, B, B);
  for (size_t i = 0; i < p->njobs; i++) {
    int m = (int)(p->off[i + 1] - p->off[i]);
    int lam = col, z = col + m;
    for (int j = 0; j < m; j++) {
      glp_set_col_bnds(mip, lam + j, GLP_DB, 0, 1);
      glp_set_obj_coef(mip, lam + j, p->y[p->off[i] + j]);
      ne++;
      ia[ne] = budget_row;
      ja[ne] = lam + j;
      ar[ne] = p->x[p->off[i] + j];
    }
    int r = glp_add_rows(mip, 1); /* sum lambda = 1 */
    glp_set_row_bnds(mip, r, GLP_FX, 1, 1);
    for (int j = 0; j < m; j++) {
      ne++;
      ia[ne] = r;
      ja[ne] = lam + j;
      ar[ne] = 1;
    }
    if (m > 1) {
      for (int s = 0; s < m - 1; s++) {
        glp_set_col_kind(mip, z + s, GLP_BV);
      }
      int rz = glp_add_rows(mip, 1); /* sum z = 1 */
      glp_set_row_bnds(mip, rz, GLP_FX, 1, 1);
      for (int s = 0; s < m - 1; s++) {
        ne++;
        ia[ne] = rz;
        ja[ne] = z + s;
        ar[ne] = 1;
      }
      for (int j = 0; j < m; j++) { /* lambda_j - z_{j-1} - z_j <= 0 */
        int rr = glp_add_rows(mip, 1);
        glp_set_row_bnds(mip, rr, GLP_UP, 0, 0);
        ne++;
        ia[ne] = rr;
        ja[ne] = lam + j;
        ar[ne] = 1;
        if (j > 0) {
          ne++;
          ia[ne] = rr;
          ja[ne] = z + j - 1;
          ar[ne] = -1;
        }
        if (j < m - 1) {
          ne++;
          ia[ne] = rr;
          ja[ne] = z + j;
          ar[ne] = -1;
        }
      }
    }
    col += m + (m > 1 ? m - 1 : 0);
  }
  glp_load_matrix(mip, ne, ia, ja, ar);
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  int rc = glp_intopt(mip, &parm);
  double obj = NAN;
  if (rc == 0 && glp_mip_status(mip) == GLP_OPT)
    obj = glp_mip_obj_val(mip);
  free(ia);
  free(ja);
  free(ar);
  glp_delete_prob(mip);
  return obj;
}

static void check_feasible(const struct pfi_problem *p, const double *pw,
                           double B, const char *what) {
  double s = 0, scale = 1;
  for (size_t i = 0; i < p->njobs; i++) {
    double lo = pfi_problem_lo(p, i), hi = pfi_problem_hi(p, i);
    /* Ranges: exact up to rounding of sums of a few hundred watts. */
    if (pw[i] < lo - 1e-9 * hi || pw[i] > hi + 1e-9 * hi)
      fail_msg("%s: job %zu power %.12g outside [%.12g, %.12g]", what, i, pw[i],
               lo, hi);
    s += pw[i];
    scale += hi;
  }
  /* The budget is met up to rounding (relative 1e-9 of the total). */
  if (fabs(s - B) > 1e-9 * scale)
    fail_msg("%s: powers sum to %.12g, budget %.12g", what, s, B);
}

static void run_instances(int concave, int count, size_t maxn, double pcopy) {
  glp_term_out(GLP_OFF);
  struct pfi_problem p;
  pfi_problem_init(&p);
  double pw[16], pw2[16], pfi[16], dram[16];
  int moe_ft[16];
  size_t total_nodes = 0, branched = 0;
  for (int it = 0; it < count; it++) {
    pfi_problem_clear(&p);
    size_t n = 1 + (size_t)(urand() * maxn);
    for (size_t i = 0; i < n; i++) {
      /* Often a copy of an earlier job: workloads sampled with replacement
       * repeat jobs, and the oracle breaks that symmetry. */
      if (i > 0 && urand() < pcopy) {
        size_t j = (size_t)(urand() * i);
        size_t a = p.off[j], b = p.off[j + 1];
        struct pfi_error e2;
        if (pfi_problem_add(&p, p.x + a, p.y + a, b - a, p.x[a], p.x[b - 1],
                            &e2) != 0)
          fail_msg("copy: %s", e2.msg);
      } else {
        random_job(&p, concave);
      }
    }
    double lo, hi;
    pfi_problem_bounds(&p, &lo, &hi);
    double B = lo + (hi - lo) * urand();
    struct pfi_error err;
    double tot;
    struct pfi_oracle_stats st;
    int rc = pfi_oracle_solve(&p, B, pw, &tot, &st, &err);
    if (rc != 0)
      fail_msg("oracle failed on instance %d: %s", it, err.msg);
    total_nodes += st.nodes;
    branched += st.nodes > 1;
    check_feasible(&p, pw, B, "oracle");
    double ref = concave ? glpk_lp(&p, B) : glpk_milp(&p, B);
    if (isnan(ref))
      fail_msg("GLPK failed on instance %d", it);
    /* GLPK's feasibility and integrality tolerances are about 1e-7
     * relative; throughputs here are up to a few thousand per job. */
    double tol = 1e-6 * (fabs(ref) + 1);
    if (fabs(tot - ref) > tol)
      fail_msg("instance %d (%s, %zu jobs, B=%.9g): oracle %.12g, GLPK "
               "%.12g",
               it, concave ? "concave" : "non-concave", n, B, tot, ref);
    /* Every strategy is feasible and never beats the oracle. */
    for (size_t i = 0; i < n; i++) {
      pfi[i] = 0.5 + 2.5 * urand();
      dram[i] = urand() < 0.2 ? 0.0 : urand();
      moe_ft[i] = urand() < 0.5;
    }
    struct pfi_alloc_inputs in = {pfi, dram, moe_ft};
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      rc = pfi_alloc_run(&p, (enum pfi_strategy)s, B, &in, pw2, &err);
      if (rc != 0)
        fail_msg("%s failed: %s", pfi_strategy_name(s), err.msg);
      check_feasible(&p, pw2, B, pfi_strategy_name(s));
      double t2 = pfi_alloc_total_tokens(&p, pw2);
      if (t2 > tot + 1e-9 * (fabs(tot) + 1))
        fail_msg("%s (%.12g) beats the oracle (%.12g) on instance %d",
                 pfi_strategy_name(s), t2, tot, it);
    }
  }
  /* The non-concave set must exercise branch and bound. */
  if (!concave && branched == 0)
    fail_msg("no non-concave instance needed branching");
  print_message("%d %s instances, %zu branched, %zu nodes\n", count,
                concave ? "concave" : "non-concave", branched, total_nodes);
  pfi_problem_release(&p);
}

static void test_oracle_vs_glpk_concave(void **state) {
  (void)state;
  run_instances(1, 3000, 5, 0.4);
}

static void test_oracle_vs_glpk_nonconcave(void **state) {
  (void)state;
  run_instances(0, 3000, 5, 0.4);
}

/* Larger workloads made mostly of copies of a few jobs, as sampled
 * workloads are: exercises the symmetry breaking between identical jobs. */
static void test_oracle_vs_glpk_copies(void **state) {
  (void)state;
  run_instances(0, 400, 10, 0.75);
}

/* A non-concave case worked by hand: two identical jobs, points (0,0),
 * (10,0), (20,20) (convex), budget 20 W. Splitting 10/10 gives 0; giving
 * one job 20 W gives 20, the optimum. */
static void test_oracle_convex_by_hand(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  double x[] = {0, 10, 20}, y[] = {0, 0, 20};
  assert_int_equal(pfi_problem_add(&p, x, y, 3, 0, 20, &err), 0);
  assert_int_equal(pfi_problem_add(&p, x, y, 3, 0, 20, &err), 0);
  double pw[2], tot;
  assert_int_equal(pfi_oracle_solve(&p, 20, pw, &tot, NULL, &err), 0);
  ASSERT_NEAR(tot, 20.0, 1e-12);
  ASSERT_NEAR(fabs(pw[0] - pw[1]), 20.0, 1e-12);
  /* Budget 30 W: one job at 20 (20 tok/s) and the other at 10 (0), or
   * any split with one at 20: total 20; 15/15 would give 10. */
  assert_int_equal(pfi_oracle_solve(&p, 30, pw, &tot, NULL, &err), 0);
  ASSERT_NEAR(tot, 20.0, 1e-12);
  /* Infeasible budget: 45 W above the 40 W of ceilings by 5 W. */
  assert_int_equal(pfi_oracle_solve(&p, 45, pw, &tot, NULL, &err),
                   PFI_EINFEASIBLE);
  assert_non_null(strstr(err.msg, "infeasible by 5.000 W"));
  pfi_problem_release(&p);
}

/* Equal weight with no floor binding is a uniform cut: each job keeps
 * (1 - r) of its uncapped power. */
static void test_equal_uniform(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  double x1[] = {400, 800}, y1[] = {50, 100};
  double x2[] = {1000, 3000}, y2[] = {10, 30};
  assert_int_equal(pfi_problem_add(&p, x1, y1, 2, 400, 800, &err), 0);
  assert_int_equal(pfi_problem_add(&p, x2, y2, 2, 1000, 3000, &err), 0);
  double pw[2];
  double B = 0.8 * 3800; /* a 20 % cut: 640 + 2400 */
  assert_int_equal(pfi_alloc_run(&p, PFI_STRAT_EQUAL, B, NULL, pw, &err), 0);
  ASSERT_NEAR(pw[0], 640.0, 1e-9);
  ASSERT_NEAR(pw[1], 2400.0, 1e-9);
  pfi_problem_release(&p);
}

/* Floors bind: hi 100 and 100 W, floors 90 and 0 W, equal weights, cut
 * 40 W. The proportional share is 20 W each; job 0 can give only 10, so
 * job 1 gives 30: powers 90 and 70. */
static void test_floor_redistributed(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  double xa[] = {90, 100}, ya[] = {9, 10};
  double xb[] = {0, 100}, yb[] = {0, 10};
  assert_int_equal(pfi_problem_add(&p, xa, ya, 2, 90, 100, &err), 0);
  assert_int_equal(pfi_problem_add(&p, xb, yb, 2, 0, 100, &err), 0);
  double pw[2], w[2] = {1, 1};
  assert_int_equal(pfi_alloc_proportional(&p, 160, w, pw, &err), 0);
  ASSERT_NEAR(pw[0], 90.0, 1e-12);
  ASSERT_NEAR(pw[1], 70.0, 1e-12);
  /* Zero weight on job 1: job 0 reaches its floor (10 W), the other 30 W
   * fall back to job 1. */
  double w0[2] = {1, 0};
  assert_int_equal(pfi_alloc_proportional(&p, 160, w0, pw, &err), 0);
  ASSERT_NEAR(pw[0], 90.0, 1e-12);
  ASSERT_NEAR(pw[1], 70.0, 1e-12);
  /* Infeasible: floors sum to 90 W, budget 80 W. */
  assert_int_equal(pfi_alloc_proportional(&p, 80, w, pw, &err),
                   PFI_EINFEASIBLE);
  assert_non_null(strstr(err.msg, "infeasible by 10.000 W"));
  pfi_problem_release(&p);
}

/* The range of a measured curve is [power at the lowest cap, uncapped
 * power]; interior points outside it are dropped, end values interpolated.
 */
static void test_problem_range(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  double x[] = {300, 100, 200}, y[] = {30, 10, 25};
  assert_int_equal(pfi_problem_add(&p, x, y, 3, 150, 300, &err), 0);
  ASSERT_EQ_INT(p.off[1], 3); /* 150, 200, 300 */
  ASSERT_NEAR(p.x[0], 150.0, 0);
  ASSERT_NEAR(p.y[0], 17.5, 1e-12); /* halfway from 10 to 25 */
  ASSERT_NEAR(pfi_problem_eval(&p, 0, 250), 27.5, 1e-12);
  assert_int_equal(pfi_problem_add(&p, x, y, 3, 50, 300, &err), PFI_EINVAL);
  pfi_problem_release(&p);
}

/* pfi-aware by hand: job 0 P_max 1000 W, T_max 100, PFI 2 -> weight
 * 1000 * 2 / 100 = 20; job 1 P_max 1000 W, T_max 50, PFI 1 -> weight
 * 1000 * 1 / 50 = 20. Equal weights: a 400 W cut is 200 W each. With
 * PFI 3 for job 0 its weight is 30: cuts 240 and 160 W. dram-copy with
 * products 0.3 and 0.1 cuts 300 and 100 W. moe-ft-weighted with job 1 MoE
 * FT: weights 1000 and 2000, cuts 133.3 and 266.7 W. */
static void test_weights_by_hand(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  double x[] = {0, 1000}, y0[] = {0, 100}, y1[] = {0, 50};
  assert_int_equal(pfi_problem_add(&p, x, y0, 2, 0, 1000, &err), 0);
  assert_int_equal(pfi_problem_add(&p, x, y1, 2, 0, 1000, &err), 0);
  double pw[2], pfi[2] = {2, 1}, dram[2] = {0.3, 0.1};
  int moe[2] = {0, 1};
  struct pfi_alloc_inputs in = {pfi, dram, moe};
  assert_int_equal(pfi_alloc_run(&p, PFI_STRAT_PFI_AWARE, 1600, &in, pw, &err),
                   0);
  ASSERT_NEAR(pw[0], 800, 1e-9);
  ASSERT_NEAR(pw[1], 800, 1e-9);
  pfi[0] = 3;
  assert_int_equal(pfi_alloc_run(&p, PFI_STRAT_PFI_AWARE, 1600, &in, pw, &err),
                   0);
  ASSERT_NEAR(pw[0], 760, 1e-9);
  ASSERT_NEAR(pw[1], 840, 1e-9);
  assert_int_equal(pfi_alloc_run(&p, PFI_STRAT_DRAM_COPY, 1600, &in, pw, &err),
                   0);
  ASSERT_NEAR(pw[0], 700, 1e-9);
  ASSERT_NEAR(pw[1], 900, 1e-9);
  assert_int_equal(
      pfi_alloc_run(&p, PFI_STRAT_MOE_FT_WEIGHTED, 1600, &in, pw, &err), 0);
  ASSERT_NEAR(pw[0], 1000 - 400.0 / 3, 1e-9);
  ASSERT_NEAR(pw[1], 1000 - 800.0 / 3, 1e-9);
  /* Both curves are straight lines: the oracle cuts the flatter job 1
   * (0.05 tokens/s per W) first, all 400 W. */
  assert_int_equal(pfi_alloc_run(&p, PFI_STRAT_ORACLE, 1600, &in, pw, &err), 0);
  ASSERT_NEAR(pw[0], 1000, 1e-9);
  ASSERT_NEAR(pw[1], 600, 1e-9);
  /* A strategy without its input fails and says what is missing. */
  struct pfi_alloc_inputs none = {NULL, NULL, NULL};
  assert_int_equal(
      pfi_alloc_run(&p, PFI_STRAT_PFI_AWARE, 1600, &none, pw, &err),
      PFI_EINVAL);
  assert_non_null(strstr(err.msg, "PFI estimates"));
  pfi_problem_release(&p);
}

/* Only the ratios of the weights matter: weights near DBL_MAX (their sum
 * overflows) and subnormal ones (room / w and C / W overflow) give the
 * same cut as weights 1 and 1, and 1e308 against 1e-320 cuts only the
 * first job. Two jobs of 1000 W, floors 0, budget 1000 W: 500 W each. */
static void test_weights_extreme(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  double x[] = {0, 1000}, y[] = {0, 100};
  assert_int_equal(pfi_problem_add(&p, x, y, 2, 0, 1000, &err), 0);
  assert_int_equal(pfi_problem_add(&p, x, y, 2, 0, 1000, &err), 0);
  double pw[2];
  double big[2] = {1e308, 1e308}, tiny[2] = {1e-320, 1e-320};
  double mixed[2] = {1e308, 1e-320};
  assert_int_equal(pfi_alloc_proportional(&p, 1000, big, pw, &err), 0);
  ASSERT_NEAR(pw[0], 500, 1e-9);
  ASSERT_NEAR(pw[1], 500, 1e-9);
  assert_int_equal(pfi_alloc_proportional(&p, 1000, tiny, pw, &err), 0);
  ASSERT_NEAR(pw[0], 500, 1e-9);
  ASSERT_NEAR(pw[1], 500, 1e-9);
  /* Job 1's share is 1e-628 of job 0's: below one ulp of 1000 W. */
  assert_int_equal(pfi_alloc_proportional(&p, 1500, mixed, pw, &err), 0);
  ASSERT_NEAR(pw[0], 500, 1e-9);
  ASSERT_NEAR(pw[1], 1000, 1e-9);
  pfi_problem_release(&p);
}

/* Sums beyond DBL_MAX: two jobs of throughput 1e308 (the oracle's bound and
 * tolerance are measured on the sum) and two of power 1e308 (the budget's
 * bounds) are refused, never answered from overflowed sums. */
static void test_overflow_refused(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  double x[] = {1000, 2000}, y[] = {1e308, 1.5e308};
  assert_int_equal(pfi_problem_add(&p, x, y, 2, 1000, 2000, &err), 0);
  assert_int_equal(pfi_problem_add(&p, x, y, 2, 1000, 2000, &err), 0);
  double pw[2], tot;
  assert_int_equal(pfi_oracle_solve(&p, 3000, pw, &tot, NULL, &err),
                   PFI_EINVAL);
  assert_non_null(strstr(err.msg, "throughputs sum beyond"));
  pfi_problem_clear(&p);
  double xb[] = {1e307, 1e308}, yb[] = {1, 2};
  assert_int_equal(pfi_problem_add(&p, xb, yb, 2, 1e307, 1e308, &err), 0);
  assert_int_equal(pfi_problem_add(&p, xb, yb, 2, 1e307, 1e308, &err), 0);
  assert_int_equal(pfi_oracle_solve(&p, 1e308, pw, &tot, NULL, &err),
                   PFI_EINVAL);
  assert_non_null(strstr(err.msg, "powers sum beyond"));
  pfi_problem_release(&p);
}

static void test_cut_parse(void **state) {
  (void)state;
  double f;
  struct pfi_error err;
  assert_int_equal(pfi_cut_parse("0.3", &f, &err), 0);
  ASSERT_NEAR(f, 0.3, 0);
  assert_int_equal(pfi_cut_parse("30%", &f, &err), 0);
  ASSERT_NEAR(f, 0.3, 1e-15);
  assert_int_equal(pfi_cut_parse("30", &f, &err), PFI_EINVAL);
  assert_int_equal(pfi_cut_parse("100%", &f, &err), PFI_EINVAL);
  assert_int_equal(pfi_cut_parse("-1%", &f, &err), PFI_EINVAL);
  assert_int_equal(pfi_cut_parse("x", &f, &err), PFI_EINVAL);
}

/* The pfi-curve model reproduces the estimate: at the middle of the range
 * the ratio (1 - u) / (1 - h(u)) equals the PFI it was built from. */
static void test_curve_model(void **state) {
  (void)state;
  double lo = 400, hi = 1000, pfi = 1.8;
  double g = pfi_curve_model_exponent(pfi, lo, hi);
  double u = (lo / hi + 1) / 2;
  double h = 1 - pow(1 - u, g);
  ASSERT_NEAR((1 - u) / (1 - h), pfi, 1e-12);
}


/* ---- adversarial instances against exhaustive enumeration ----
 *
 * The reference: some optimum has every job but at most one at a
 * breakpoint of its own curve. (If two jobs i, j sit strictly inside
 * linear pieces, moving t watts from j to i changes the objective by
 * (s_i - s_j) t, linear in t; moving in the direction that does not lower
 * it until one of them reaches a breakpoint keeps the budget and the
 * ranges, and repeating ends with at most one such job.) So trying every
 * choice of a free job k and breakpoints for the others, with x_k = B minus
 * their sum, finds the optimum exactly. The reference builds each job's
 * breakpoints from the raw points itself (sort, drop repeated powers keeping
 * the first, clip to the range), independently of pfi_problem_add. */
struct ref_job {
  size_t m;
  double x[16], y[16];
};

static double ref_interp(const double *x, const double *y, size_t n,
                         double v) {
  if (v <= x[0])
    return y[0];
  for (size_t j = 1; j < n; j++)
    if (v <= x[j])
      return y[j - 1] + (y[j] - y[j - 1]) * (v - x[j - 1]) / (x[j] - x[j - 1]);
  return y[n - 1];
}

static void ref_build(struct ref_job *r, const double *px, const double *ty,
                      size_t n, double lo, double hi) {
  double xs[16], ys[16];
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    int dup = 0;
    for (size_t j = 0; j < m; j++)
      dup |= xs[j] == px[i];
    if (!dup) {
      xs[m] = px[i];
      ys[m++] = ty[i];
    }
  }
  for (size_t i = 1; i < m; i++) /* insertion sort by power */
    for (size_t j = i; j > 0 && xs[j - 1] > xs[j]; j--) {
      double t = xs[j];
      xs[j] = xs[j - 1];
      xs[j - 1] = t;
      t = ys[j];
      ys[j] = ys[j - 1];
      ys[j - 1] = t;
    }
  r->m = 0;
  r->x[r->m] = lo;
  r->y[r->m++] = ref_interp(xs, ys, m, lo);
  for (size_t i = 0; i < m; i++)
    if (xs[i] > lo && xs[i] < hi) {
      r->x[r->m] = xs[i];
      r->y[r->m++] = ys[i];
    }
  if (hi > lo) {
    r->x[r->m] = hi;
    r->y[r->m++] = ref_interp(xs, ys, m, hi);
  }
}

static double ref_best;

static void ref_enum(const struct ref_job *J, size_t n, size_t k, size_t i,
                     double used, double val, double B, double ptol) {
  if (i == n) {
    const struct ref_job *f = &J[k];
    double xk = B - used;
    if (xk < f->x[0] - ptol || xk > f->x[f->m - 1] + ptol)
      return;
    double v = val + ref_interp(f->x, f->y, f->m, xk);
    if (v > ref_best)
      ref_best = v;
    return;
  }
  if (i == k) {
    ref_enum(J, n, k, i + 1, used, val, B, ptol);
    return;
  }
  for (size_t j = 0; j < J[i].m; j++)
    ref_enum(J, n, k, i + 1, used + J[i].x[j], val + J[i].y[j], B, ptol);
}

static double ref_solve(const struct ref_job *J, size_t n, double B,
                        double ptol) {
  ref_best = -INFINITY;
  for (size_t k = 0; k < n; k++)
    ref_enum(J, n, k, 0, 0, 0, B, ptol);
  return ref_best;
}

/* Kinds of adversarial job: small integers (ties of slopes, collinear and
 * repeated powers, flat and falling pieces), throughput falling with power
 * with jumps, and near-identical slopes with dents (a weak bound). Ranges
 * are the points' span, a random sub-range, or zero width. */
static void adv_job(int kind, double *px, double *ty, size_t *np, double *lo,
                    double *hi) {
  size_t m = 1 + (size_t)(urand() * 6);
  for (size_t j = 0; j < m; j++) {
    if (kind == 0) {
      px[j] = (double)(int)(urand() * 6);
      ty[j] = (double)(int)(urand() * 5);
    } else if (kind == 1) {
      px[j] = j == 0 ? 100 * urand() : px[j - 1] + 1 + 50 * urand();
      ty[j] = j == 0 ? 1000 * urand()
                     : ty[j - 1] - 10 * urand() * (px[j] - px[j - 1]) +
                           (urand() < 0.3 ? 300 * urand() : 0);
    } else {
      px[j] = j == 0 ? 0 : px[j - 1] + 1 + 10 * urand();
      ty[j] = px[j] * (1 + 1e-6 * urand()) - (urand() < 0.5 ? 0.5 * urand() : 0);
    }
  }
  double mn = px[0], mx = px[0];
  for (size_t j = 1; j < m; j++) {
    mn = px[j] < mn ? px[j] : mn;
    mx = px[j] > mx ? px[j] : mx;
  }
  double r = urand();
  *lo = mn;
  *hi = mx;
  if (r < 0.2) {
    *lo = mn + (mx - mn) * urand();
    *hi = *lo + (mx - *lo) * urand();
  } else if (r < 0.3) {
    *lo = *hi = mn + (mx - mn) * urand();
  } else if (r < 0.35 && kind == 0) {
    *lo = *hi = (double)(int)(mn + (mx - mn) * urand());
  }
  *np = m;
}

static void test_oracle_adversarial(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct ref_job J[6];
  double pw[6], pw2[6], pfi[6], dram[6];
  int moe_ft[6];
  size_t total_nodes = 0;
  for (int it = 0; it < 3000; it++) {
    int kind = it % 3;
    pfi_problem_clear(&p);
    size_t n = 1 + (size_t)(urand() * 5);
    for (size_t i = 0; i < n; i++) {
      double px[8], ty[8], lo, hi;
      size_t m;
      struct pfi_error err;
      if (i > 0 && urand() < 0.3) {
        J[i] = J[(size_t)(urand() * i)]; /* a copy of an earlier job */
        m = J[i].m;
        memcpy(px, J[i].x, m * sizeof *px);
        memcpy(ty, J[i].y, m * sizeof *ty);
        lo = px[0];
        hi = px[m - 1];
      } else {
        adv_job(kind, px, ty, &m, &lo, &hi);
        ref_build(&J[i], px, ty, m, lo, hi);
      }
      if (pfi_problem_add(&p, px, ty, m, lo, hi, &err) != 0)
        fail_msg("instance %d: pfi_problem_add: %s", it, err.msg);
    }
    double lo = 0, hi = 0, scale = 1;
    for (size_t i = 0; i < n; i++) {
      lo += J[i].x[0];
      hi += J[i].x[J[i].m - 1];
      for (size_t j = 0; j < J[i].m; j++)
        scale += fabs(J[i].y[j]);
    }
    /* Budgets at the floors, at the ceilings, on whole watts (ties with
     * breakpoints of the integer kind) or anywhere between. */
    double u = urand(), B;
    if (u < 0.15)
      B = lo;
    else if (u < 0.3)
      B = hi;
    else if (u < 0.55)
      B = fmin(hi, fmax(lo, floor(lo + (hi - lo) * urand())));
    else
      B = lo + (hi - lo) * urand();
    struct pfi_error err;
    double tot;
    struct pfi_oracle_stats st;
    int rc = pfi_oracle_solve(&p, B, pw, &tot, &st, &err);
    if (rc != 0)
      fail_msg("oracle failed on adversarial instance %d: %s", it, err.msg);
    total_nodes += st.nodes;
    check_feasible(&p, pw, B, "oracle");
    double ref = ref_solve(J, n, B, 1e-9 * (hi + 1));
    /* Both are exact; the difference is rounding in sums of a few values
     * (relative 1e-12) and the oracle's stated tolerance, 1e-9 of the sum
     * of the largest |throughput| per job. */
    if (!(fabs(tot - ref) <= 1e-9 * scale))
      fail_msg("adversarial instance %d (kind %d, %zu jobs, B=%.17g): "
               "oracle %.15g, enumeration %.15g",
               it, kind, n, B, tot, ref);
    for (size_t i = 0; i < n; i++) {
      pfi[i] = urand() < 0.1 ? -0.5 : 0.5 + 2.5 * urand();
      dram[i] = urand() < 0.2 ? 0.0 : urand();
      moe_ft[i] = urand() < 0.5;
    }
    struct pfi_alloc_inputs in = {pfi, dram, moe_ft};
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      rc = pfi_alloc_run(&p, (enum pfi_strategy)s, B, &in, pw2, &err);
      if (rc != 0)
        fail_msg("%s failed on adversarial instance %d: %s",
                 pfi_strategy_name(s), it, err.msg);
      check_feasible(&p, pw2, B, pfi_strategy_name(s));
      double t2 = pfi_alloc_total_tokens(&p, pw2);
      if (t2 > tot + 1e-9 * scale)
        fail_msg("%s (%.12g) beats the oracle (%.12g) on adversarial "
                 "instance %d",
                 pfi_strategy_name(s), t2, tot, it);
    }
  }
  print_message("3000 adversarial instances, %zu nodes\n", total_nodes);
  pfi_problem_release(&p);
}

/* Two identical jobs, points (0,0), (1,0.9), (2,0.9), (3,3): the concave
 * envelope is the chord from (0,0) to (3,3), so all of (0,3) is a
 * non-concave region. With a 2 W budget the candidates are x and 2 - x:
 * f(x) + f(2 - x) is 1.8 at x = 1 and 0.9 at x = 0 or 2 (worked by hand),
 * so the optimum puts BOTH jobs strictly inside their non-concave region:
 * an exact method may not assume that at most one job is. */
static void test_oracle_two_inside_dents(void **state) {
  (void)state;
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  double x[] = {0, 1, 2, 3}, y[] = {0, 0.9, 0.9, 3};
  assert_int_equal(pfi_problem_add(&p, x, y, 4, 0, 3, &err), 0);
  assert_int_equal(pfi_problem_add(&p, x, y, 4, 0, 3, &err), 0);
  double pw[2], tot;
  assert_int_equal(pfi_oracle_solve(&p, 2, pw, &tot, NULL, &err), 0);
  ASSERT_NEAR(tot, 1.8, 1e-12);
  ASSERT_NEAR(pw[0], 1.0, 1e-12);
  ASSERT_NEAR(pw[1], 1.0, 1e-12);
  pfi_problem_release(&p);
}

/* Long curves (a sweep in fine cap steps), two jobs: A has NA points on a
 * slightly concave line with every third point 5 tokens/s low, B has NB
 * points on y = 1.7 x with every odd point up to 4 low (the even ones
 * nearly collinear after rounding: an exact cross-product hull test kept
 * vertices whose rounded slopes were out of order, and the oracle returned
 * 1188.09 where 1189.37 is reachable, for NA = 30, NB = 120, the fourth
 * budget). Checked against enumeration over one job's breakpoints with the
 * other job's power fixed by the budget. */
static double lin(const double *x, const double *y, size_t n, double v) {
  if (v <= x[0])
    return y[0];
  for (size_t j = 1; j < n; j++)
    if (v <= x[j])
      return y[j - 1] + (y[j] - y[j - 1]) * (v - x[j - 1]) / (x[j] - x[j - 1]);
  return y[n - 1];
}

static void many_points(size_t NA, size_t NB) {
  unsigned long long st = 0x2545F4914F6CDD1DULL; /* own stream: repeatable */
#define LRAND()                                                                \
  (st ^= st << 13, st ^= st >> 7, st ^= st << 17,                              \
   (double)(st >> 11) / 9007199254740992.0)
  double *xa = malloc(NA * sizeof *xa), *ya = malloc(NA * sizeof *ya);
  double *xb = malloc(NB * sizeof *xb), *yb = malloc(NB * sizeof *yb);
  assert_non_null(xa && ya && xb && yb);
  for (size_t j = 0; j < NA; j++) {
    xa[j] = 100 + 2.0 * (double)j;
    ya[j] = 2 * xa[j] - (j % 3 == 1 ? 5 : 0) - 0.001 * xa[j] * xa[j] / 100;
  }
  for (size_t j = 0; j < NB; j++) {
    xb[j] = 200 + 3.0 * (double)j;
    yb[j] = 1.7 * xb[j] - (j % 2 == 1 ? 4 * LRAND() : 0);
  }
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  assert_int_equal(pfi_problem_add(&p, xa, ya, NA, xa[0], xa[NA - 1], &err), 0);
  assert_int_equal(pfi_problem_add(&p, xb, yb, NB, xb[0], xb[NB - 1], &err), 0);
  double lo = xa[0] + xb[0], hi = xa[NA - 1] + xb[NB - 1];
  for (int it = 0; it < 60; it++) {
    double B = lo + (hi - lo) * LRAND();
    double pw[2], tot;
    assert_int_equal(pfi_oracle_solve(&p, B, pw, &tot, NULL, &err), 0);
    check_feasible(&p, pw, B, "oracle, many points");
    double best = -INFINITY;
    for (size_t j = 0; j < NB; j++) { /* B at a breakpoint, A free */
      double a = B - xb[j];
      if (a >= xa[0] - 1e-9 && a <= xa[NA - 1] + 1e-9)
        best = fmax(best, yb[j] + lin(xa, ya, NA, a));
    }
    for (size_t j = 0; j < NA; j++) { /* A at a breakpoint, B free */
      double b = B - xa[j];
      if (b >= xb[0] - 1e-9 && b <= xb[NB - 1] + 1e-9)
        best = fmax(best, ya[j] + lin(xb, yb, NB, b));
    }
    /* Tolerance: the oracle's 1e-9 of the throughput scale (~2,000). */
    if (!(fabs(tot - best) <= 3e-6))
      fail_msg("NA %zu, NB %zu, budget %d (%.9g W): oracle %.9g, "
               "enumeration %.9g",
               NA, NB, it, B, tot, best);
  }
#undef LRAND
  pfi_problem_release(&p);
  free(xa);
  free(ya);
  free(xb);
  free(yb);
}

static void test_oracle_many_points(void **state) {
  (void)state;
  many_points(30, 120);
  many_points(126, 126);
  many_points(300, 150);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_problem_range),
      cmocka_unit_test(test_cut_parse),
      cmocka_unit_test(test_curve_model),
      cmocka_unit_test(test_oracle_convex_by_hand),
      cmocka_unit_test(test_equal_uniform),
      cmocka_unit_test(test_floor_redistributed),
      cmocka_unit_test(test_weights_by_hand),
      cmocka_unit_test(test_weights_extreme),
      cmocka_unit_test(test_overflow_refused),
      cmocka_unit_test(test_oracle_vs_glpk_concave),
      cmocka_unit_test(test_oracle_vs_glpk_nonconcave),
      cmocka_unit_test(test_oracle_vs_glpk_copies),
      cmocka_unit_test(test_oracle_two_inside_dents),
      cmocka_unit_test(test_oracle_adversarial),
      cmocka_unit_test(test_oracle_many_points),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
