/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Allocation strategies: proportional rules with floors, and pfi-curve. */
#include "pfi/alloc.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "msort.h"
#include "problem_int.h"

static const char *const names[PFI_STRAT__COUNT] = {
    "oracle",    "equal",     "moe-ft-weighted",
    "pfi-aware", "dram-copy", "pfi-curve"};

const char *pfi_strategy_name(enum pfi_strategy s) {
  return (unsigned)s < PFI_STRAT__COUNT ? names[s] : "?";
}

int pfi_strategy_parse(const char *name) {
  for (int i = 0; i < PFI_STRAT__COUNT; i++)
    if (strcmp(name, names[i]) == 0)
      return i;
  return -1;
}

double pfi_alloc_total_tokens(const struct pfi_problem *p,
                              const double *power_w) {
  double t = 0;
  for (size_t i = 0; i < p->njobs; i++)
    t += pfi_problem_eval(p, i, power_w[i]);
  return t;
}

struct ratio {
  double r;
  size_t i;
};

static int cmp_ratio(const void *a, const void *b) {
  const struct ratio *x = a, *y = b;
  if (x->r < y->r)
    return -1;
  if (x->r > y->r)
    return 1;
  return (x->i > y->i) - (x->i < y->i);
}

#define RATIO_LESS(x, y)                                                       \
  ((x)->r < (y)->r || ((x)->r == (y)->r && (x)->i < (y)->i))
PFI_MSORT(sort_ratio, struct ratio, RATIO_LESS, cmp_ratio)

/*
 * Cuts `C` watts: cut_i = min(room_i, t w_i) over jobs with w_i > 0 (others
 * untouched). Adds to cut[]; returns the watts that could not be placed
 * because every weighted job reached its floor.
 */
static double waterfill(size_t n, const double *room, const double *w, double C,
                        double *cut, struct ratio *buf) {
  size_t m = 0;
  double W = 0;
  for (size_t i = 0; i < n; i++)
    if (w[i] > 0 && room[i] > 0) {
      buf[m].r = room[i] / w[i];
      buf[m].i = i;
      m++;
      W += w[i];
    }
  sort_ratio(buf, m);
  size_t k = 0;
  /* Jobs whose room is below their proportional share hit the floor; the
   * share they cannot take goes to the rest. */
  while (k < m && C > 0 && W > 0 && buf[k].r * W <= C) {
    size_t i = buf[k].i;
    cut[i] += room[i];
    C -= room[i];
    W -= w[i];
    k++;
  }
  if (k < m && C > 0 && W > 0) {
    double t = C / W;
    for (size_t q = k; q < m; q++) {
      size_t i = buf[q].i;
      double c = t * w[i];
      if (c > room[i])
        c = room[i];
      cut[i] += c;
    }
    C = 0;
  }
  return C > 0 ? C : 0;
}

int pfi_alloc_proportional(const struct pfi_problem *p, double budget_w,
                           const double *weight, double *power_w,
                           struct pfi_error *err) {
  int rc = pfi_problem_check_budget(p, budget_w, err);
  if (rc < 0)
    return rc;
  size_t n = p->njobs;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(weight[i]) || weight[i] < 0)
      return pfi_error_set(err, PFI_EINVAL,
                           "weight of job %zu is negative or not finite", i);
  double *room = calloc(n + 1, sizeof *room);
  double *cut = calloc(n + 1, sizeof *cut);
  double *w2 = calloc(n + 1, sizeof *w2);
  struct ratio *buf = malloc((n + 1) * sizeof *buf);
  if (!room || !cut || !w2 || !buf) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  double sum_hi = 0;
  for (size_t i = 0; i < n; i++) {
    room[i] = pfi_problem_hi(p, i) - pfi_problem_lo(p, i);
    sum_hi += pfi_problem_hi(p, i);
  }
  double C = sum_hi - budget_w;
  if (C < 0)
    C = 0;
  /* Water-filling on weights scaled to a largest weight of 1: the rule
   * depends only on their ratios, and raw weights near DBL_MAX (their sum
   * overflows) or subnormal (room / w overflows, C / W overflows) would
   * otherwise cut too little or too much, silently missing the budget. */
  double wmax = 0;
  for (size_t i = 0; i < n; i++)
    if (weight[i] > wmax)
      wmax = weight[i];
  for (size_t i = 0; i < n; i++)
    w2[i] = wmax > 0 ? weight[i] / wmax : 0.0;
  double left = waterfill(n, room, w2, C, cut, buf);
  if (left > 0) {
    /* Every weighted job is at its floor: the rest goes to the jobs with
     * zero weight, in proportion to their uncapped power. */
    double hmax = 0;
    for (size_t i = 0; i < n; i++)
      if (pfi_problem_hi(p, i) > hmax)
        hmax = pfi_problem_hi(p, i);
    for (size_t i = 0; i < n; i++) {
      w2[i] = weight[i] > 0 || !(hmax > 0) ? 0 : pfi_problem_hi(p, i) / hmax;
      room[i] -= cut[i];
    }
    waterfill(n, room, w2, left, cut, buf);
  }
  for (size_t i = 0; i < n; i++)
    power_w[i] = pfi_problem_hi(p, i) - cut[i];
  rc = 0;
out:
  free(room);
  free(cut);
  free(w2);
  free(buf);
  return rc;
}

double pfi_curve_model_exponent(double pfi, double lo_w, double hi_w) {
  if (!(hi_w > 0) || !(lo_w < hi_w) || !(pfi > 0) || !isfinite(pfi))
    return 1.0;
  double um = (lo_w / hi_w + 1.0) / 2.0;
  double g = 1.0 - log(pfi) / log(1.0 - um);
  /* g >= 1 keeps the model concave, so water-filling on it is exact and
   * takes one pass: an estimate below 1 (throughput falling faster than
   * power, never measured in the paper) is modeled as 1, a straight line.
   * The upper bound keeps pow() finite. */
  if (!(g >= 1.0))
    g = 1.0;
  if (g > 50)
    g = 50;
  return g;
}

/* Points of the pfi-curve model per job: evenly spaced in the job's range,
 * enough that the piecewise-linear model follows the smooth one closely. */
#define MODEL_POINTS 9

/* The pfi-curve model problem of p: one concave model curve per job. */
static int curve_model(const struct pfi_problem *p, const double *pfi,
                       struct pfi_problem *m, struct pfi_error *err) {
  int rc = 0;
  for (size_t i = 0; i < p->njobs; i++) {
    double lo = pfi_problem_lo(p, i), hi = pfi_problem_hi(p, i);
    double tmax = p->y[p->off[i + 1] - 1];
    double g = pfi_curve_model_exponent(pfi[i], lo, hi);
    double px[MODEL_POINTS], ty[MODEL_POINTS];
    size_t k = lo < hi ? MODEL_POINTS : 1;
    for (size_t j = 0; j < k; j++) {
      double x = k > 1 ? lo + (hi - lo) * (double)j / (double)(k - 1) : hi;
      /* A range near DBL_MAX: the fraction first (the usual order
       * otherwise, for the same bits as always). */
      if (!isfinite(x))
        x = lo + (hi - lo) * ((double)j / (double)(k - 1));
      double u = hi > 0 ? x / hi : 1.0;
      if (u > 1)
        u = 1;
      px[j] = x;
      ty[j] = tmax * (1.0 - pow(1.0 - u, g));
    }
    if ((rc = pfi_problem_add(m, px, ty, k, lo, hi, err)) < 0)
      return rc;
  }
  return 0;
}

static int run_pfi_curve(const struct pfi_problem *p, double budget_w,
                         const double *pfi, double *power_w,
                         struct pfi_error *err) {
  struct pfi_problem m;
  pfi_problem_init(&m);
  int rc = curve_model(p, pfi, &m, err);
  if (rc == 0)
    rc = pfi_oracle_solve(&m, budget_w, power_w, NULL, NULL, err);
  pfi_problem_release(&m);
  return rc;
}

/* The inputs strategy s needs: 0 or PFI_EINVAL naming what is missing. */
static int check_inputs(enum pfi_strategy s, const struct pfi_alloc_inputs *in,
                        struct pfi_error *err) {
  if ((s == PFI_STRAT_PFI_AWARE || s == PFI_STRAT_PFI_CURVE) && !in->pfi)
    return pfi_error_set(err, PFI_EINVAL, "strategy %s needs PFI estimates",
                         names[s]);
  if (s == PFI_STRAT_DRAM_COPY && !in->dram_copy)
    return pfi_error_set(err, PFI_EINVAL,
                         "strategy dram-copy needs the DRAM copy product");
  if (s == PFI_STRAT_MOE_FT_WEIGHTED && !in->moe_ft)
    return pfi_error_set(err, PFI_EINVAL,
                         "strategy moe-ft-weighted needs each job's "
                         "architecture and task");
  return 0;
}

/* The weights of proportional strategy s into w[0..njobs-1]. */
static void strategy_weights(const struct pfi_problem *p, enum pfi_strategy s,
                             const struct pfi_alloc_inputs *in, double *w) {
  for (size_t i = 0; i < p->njobs; i++) {
    double pmax = pfi_problem_hi(p, i);
    double tmax = p->y[p->off[i + 1] - 1];
    switch (s) {
    case PFI_STRAT_EQUAL:
      w[i] = pmax;
      break;
    case PFI_STRAT_MOE_FT_WEIGHTED:
      w[i] = pmax * (in->moe_ft[i] ? 2.0 : 1.0);
      break;
    case PFI_STRAT_PFI_AWARE:
      /* The inverse of the job's linearized throughput lost per watt;
       * a non-positive estimate (a linear model can give one) means the
       * job should not be cut before the others. */
      w[i] = (in->pfi[i] > 0 && tmax > 0) ? pmax * in->pfi[i] / tmax : 0.0;
      break;
    case PFI_STRAT_DRAM_COPY:
      w[i] = in->dram_copy[i] > 0 ? in->dram_copy[i] : 0.0;
      break;
    default:
      w[i] = pmax;
      break;
    }
    if (!isfinite(w[i]))
      w[i] = 0;
  }
}

int pfi_alloc_run(const struct pfi_problem *p, enum pfi_strategy s,
                  double budget_w, const struct pfi_alloc_inputs *in,
                  double *power_w, struct pfi_error *err) {
  static const struct pfi_alloc_inputs none = {NULL, NULL, NULL};
  if (!in)
    in = &none;
  size_t n = p->njobs;
  if (s == PFI_STRAT_ORACLE)
    return pfi_oracle_solve(p, budget_w, power_w, NULL, NULL, err);
  int rc = check_inputs(s, in, err);
  if (rc < 0)
    return rc;
  if (s == PFI_STRAT_PFI_CURVE) {
    rc = pfi_problem_check_budget(p, budget_w, err);
    if (rc < 0)
      return rc;
    return run_pfi_curve(p, budget_w, in->pfi, power_w, err);
  }
  if ((unsigned)s >= PFI_STRAT__COUNT)
    return pfi_error_set(err, PFI_EINVAL, "unknown strategy %d", (int)s);
  double *w = malloc((n + 1) * sizeof *w);
  if (!w)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  strategy_weights(p, s, in, w);
  rc = pfi_alloc_proportional(p, budget_w, w, power_w, err);
  free(w);
  return rc;
}

int pfi_cut_parse(const char *s, double *fraction, struct pfi_error *err) {
  if (!s)
    return pfi_error_set(err, PFI_EINVAL, "missing cut");
  char *end;
  double v = strtod(s, &end);
  if (end == s)
    return pfi_error_set(err, PFI_EINVAL,
                         "cut '%s' is not a number (use 0.3 or 30%%)", s);
  while (isspace((unsigned char)*end))
    end++;
  int pct = 0;
  if (*end == '%') {
    pct = 1;
    end++;
  }
  while (isspace((unsigned char)*end))
    end++;
  if (*end != '\0' || !isfinite(v))
    return pfi_error_set(err, PFI_EINVAL,
                         "cut '%s' is not a number (use 0.3 or 30%%)", s);
  if (pct)
    v /= 100.0;
  else if (v > 1)
    return pfi_error_set(err, PFI_EINVAL,
                         "cut '%s' above 1: write a percentage as '%g%%'", s,
                         v);
  if (v < 0 || v >= 1)
    return pfi_error_set(err, PFI_EINVAL,
                         "cut '%s' must be at least 0 and below 100%%", s);
  *fraction = v;
  return 0;
}

/* ---- a strategy prepared for many budgets ---- */

struct pfi_alloc_plan {
  const struct pfi_problem *p;
  enum pfi_strategy s;
  int rc;                    /* an error every run returns (after the budget's
                                check where pfi_alloc_run checks it first) */
  int rc_first;              /* 1: rc comes before the budget's check */
  struct pfi_error err;      /* rc's message */
  struct pfi_bounds bounds;  /* of p, for the budget's check */
  struct pfi_oracle *oracle; /* oracle, pfi-curve */
  struct pfi_problem model;  /* pfi-curve */
  /* Proportional: the first water-filling's sorted ratios, m of them, and
   * the sum of their weights; room, scaled weights; scratch. */
  size_t n, m;
  double W0;
  struct ratio *buf, *buf2;
  double *room, *w2, *cut, *room2, *w3, *weight;
  /* While the plan is built (pfi__alloc_plan_new_lib): job i's class. */
  const size_t *cls;
  size_t ncls;
};

/* Sorts buf[0..m) as sort_ratio() does, by (r, i), when every job of a
 * class cls[i] < ncls has the same ratio: the classes' distinct ratios
 * sorted, then one stable counting pass (buf is in index order). Returns 1
 * when done, 0 when the classes do not fit (the caller sorts), -1 out of
 * memory. */
static int sort_ratio_cls(struct ratio *buf, size_t m, const size_t *cls,
                          size_t ncls) {
  /* A sampled workload's few classes and jobs: work space on the stack. */
  enum { SC = 64, SM = 256 };
  double src[SC];
  size_t srank[SC], sord[SC], scnt[SC + 2];
  struct ratio stmp[SM];
  int small = ncls <= SC && m <= SM;
  double *rc = small ? src : malloc((ncls + 1) * sizeof *rc);
  size_t *rank = small ? srank : malloc((ncls + 1) * sizeof *rank),
         *ord = small ? sord : malloc((ncls + 1) * sizeof *ord),
         *cnt = small ? scnt : malloc((ncls + 2) * sizeof *cnt);
  struct ratio *tmp = small ? stmp : malloc((m + 1) * sizeof *tmp);
  int ok = -1;
  if (!rc || !rank || !ord || !cnt || !tmp)
    goto out;
  memset(cnt, 0, (ncls + 2) * sizeof *cnt);
  ok = 0;
  for (size_t c = 0; c < ncls; c++)
    rank[c] = SIZE_MAX;
  size_t nd = 0;
  for (size_t q = 0; q < m; q++) {
    size_t c = cls[buf[q].i];
    if (c >= ncls)
      goto out;
    if (rank[c] == SIZE_MAX) {
      rank[c] = 0;
      rc[c] = buf[q].r;
      /* Classes in order of their ratio (insertion; few classes). */
      size_t k = nd++;
      while (k > 0 && rc[ord[k - 1]] > buf[q].r) {
        ord[k] = ord[k - 1];
        k--;
      }
      ord[k] = c;
    } else if (!(rc[c] == buf[q].r)) {
      goto out;
    }
  }
  size_t r = 0;
  for (size_t k = 0; k < nd; k++) {
    if (k > 0 && rc[ord[k]] != rc[ord[k - 1]])
      r++;
    rank[ord[k]] = r;
  }
  for (size_t q = 0; q < m; q++)
    cnt[rank[cls[buf[q].i]] + 1]++;
  for (size_t k = 0; k + 1 < nd + 1; k++)
    cnt[k + 1] += cnt[k];
  for (size_t q = 0; q < m; q++)
    tmp[cnt[rank[cls[buf[q].i]]]++] = buf[q];
  memcpy(buf, tmp, m * sizeof *buf);
  ok = 1;
out:
  if (!small) {
    free(rc);
    free(rank);
    free(ord);
    free(cnt);
    free(tmp);
  }
  return ok;
}

void pfi_alloc_plan_free(struct pfi_alloc_plan *pl) {
  if (!pl)
    return;
  pfi_oracle_free(pl->oracle);
  pfi_problem_release(&pl->model);
  free(pl->buf);
  free(pl->buf2);
  free(pl->room);
  free(pl->w2);
  free(pl->cut);
  free(pl->room2);
  free(pl->w3);
  free(pl->weight);
  free(pl);
}

/* The part of pfi_alloc_proportional that does not depend on the budget. */
static int plan_proportional(struct pfi_alloc_plan *pl, struct pfi_error *err) {
  const struct pfi_problem *p = pl->p;
  size_t n = p->njobs;
  const double *weight = pl->weight;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(weight[i]) || weight[i] < 0)
      return pfi_error_set(err, PFI_EINVAL,
                           "weight of job %zu is negative or not finite", i);
  pl->room = calloc(n + 1, sizeof *pl->room);
  pl->cut = calloc(n + 1, sizeof *pl->cut);
  pl->w2 = calloc(n + 1, sizeof *pl->w2);
  pl->room2 = calloc(n + 1, sizeof *pl->room2);
  pl->w3 = calloc(n + 1, sizeof *pl->w3);
  pl->buf = malloc((n + 1) * sizeof *pl->buf);
  pl->buf2 = malloc((n + 1) * sizeof *pl->buf2);
  if (!pl->room || !pl->cut || !pl->w2 || !pl->room2 || !pl->w3 || !pl->buf ||
      !pl->buf2)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    pl->room[i] = pfi_problem_hi(p, i) - pfi_problem_lo(p, i);
  double wmax = 0;
  for (size_t i = 0; i < n; i++)
    if (weight[i] > wmax)
      wmax = weight[i];
  for (size_t i = 0; i < n; i++)
    pl->w2[i] = wmax > 0 ? weight[i] / wmax : 0.0;
  size_t m = 0;
  double W = 0;
  for (size_t i = 0; i < n; i++)
    if (pl->w2[i] > 0 && pl->room[i] > 0) {
      pl->buf[m].r = pl->room[i] / pl->w2[i];
      pl->buf[m].i = i;
      m++;
      W += pl->w2[i];
    }
  int sorted = 0;
  /* (Classes far more than ratios: the counting pass would cost more.) */
  if (pl->cls && m > 1 && pl->ncls <= 8 * m + 256 &&
      (sorted = sort_ratio_cls(pl->buf, m, pl->cls, pl->ncls)) < 0)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  if (!sorted)
    sort_ratio(pl->buf, m);
  pl->m = m;
  pl->W0 = W;
  return 0;
}

static int plan_new(struct pfi_alloc_plan **out, const struct pfi_problem *p,
                    enum pfi_strategy s, const struct pfi_alloc_inputs *in,
                    const struct pfi__hull_lib *h, const size_t *from,
                    size_t nclass, struct pfi_error *err) {
  static const struct pfi_alloc_inputs none = {NULL, NULL, NULL};
  if (!in)
    in = &none;
  *out = NULL;
  struct pfi_alloc_plan *pl = calloc(1, sizeof *pl);
  if (!pl)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  pl->p = p;
  pl->s = s;
  pl->n = p->njobs;
  pfi__bounds(p, &pl->bounds);
  pfi_problem_init(&pl->model);
  pfi_error_clear(&pl->err);
  int rc = 0;
  pl->cls = from;
  pl->ncls = nclass;
  if (s == PFI_STRAT_ORACLE) {
    rc = h ? pfi__oracle_prepare_lib(&pl->oracle, p, h, from, &pl->err)
           : pfi_oracle_prepare(&pl->oracle, p, &pl->err);
  } else if ((rc = check_inputs(s, in, &pl->err)) < 0 ||
             (unsigned)s >= PFI_STRAT__COUNT) {
    if (rc == 0)
      rc = pfi_error_set(&pl->err, PFI_EINVAL, "unknown strategy %d", (int)s);
    pl->rc_first = 1;
  } else if (s == PFI_STRAT_PFI_CURVE) {
    rc = curve_model(p, in->pfi, &pl->model, &pl->err);
    if (rc == 0)
      rc = pfi_oracle_prepare(&pl->oracle, &pl->model, &pl->err);
  } else if (!(pl->weight = malloc((pl->n + 1) * sizeof *pl->weight))) {
    rc = pfi_error_set(&pl->err, PFI_ENOMEM, "out of memory");
  } else {
    strategy_weights(p, s, in, pl->weight);
    rc = plan_proportional(pl, &pl->err);
  }
  if (rc == PFI_ENOMEM) {
    if (err)
      *err = pl->err;
    pfi_alloc_plan_free(pl);
    return rc;
  }
  pl->rc = rc;
  pl->cls = NULL;
  *out = pl;
  return 0;
}

int pfi_alloc_plan_new(struct pfi_alloc_plan **out, const struct pfi_problem *p,
                       enum pfi_strategy s, const struct pfi_alloc_inputs *in,
                       struct pfi_error *err) {
  return plan_new(out, p, s, in, NULL, NULL, 0, err);
}

int pfi__alloc_plan_new_lib(struct pfi_alloc_plan **out,
                            const struct pfi_problem *p, enum pfi_strategy s,
                            const struct pfi_alloc_inputs *in,
                            const struct pfi__hull_lib *h, const size_t *from,
                            size_t nclass, struct pfi_error *err) {
  return plan_new(out, p, s, in, h, from, nclass, err);
}

/* pfi_alloc_proportional's budget-dependent part, on the plan. */
static void run_proportional(struct pfi_alloc_plan *pl, double budget_w,
                             double *power_w) {
  const struct pfi_problem *p = pl->p;
  size_t n = pl->n;
  double *room = pl->room, *w2 = pl->w2, *cut = pl->cut;
  /* The same sum, in the same order, as pfi_problem_bounds' (the plan's). */
  double sum_hi = pl->bounds.hi;
  double C = sum_hi - budget_w;
  if (C < 0)
    C = 0;
  memset(cut, 0, n * sizeof *cut);
  /* waterfill() from its sorted ratios on. */
  size_t k = 0, m = pl->m;
  double W = pl->W0;
  const struct ratio *buf = pl->buf;
  while (k < m && C > 0 && W > 0 && buf[k].r * W <= C) {
    size_t i = buf[k].i;
    cut[i] += room[i];
    C -= room[i];
    W -= w2[i];
    k++;
  }
  if (k < m && C > 0 && W > 0) {
    double t = C / W;
    for (size_t q = k; q < m; q++) {
      size_t i = buf[q].i;
      double c = t * w2[i];
      if (c > room[i])
        c = room[i];
      cut[i] += c;
    }
    C = 0;
  }
  double left = C > 0 ? C : 0;
  if (left > 0) {
    /* As pfi_alloc_proportional, on copies: the plan stays as it was. */
    const double *weight = pl->weight;
    double hmax = 0;
    for (size_t i = 0; i < n; i++)
      if (pfi_problem_hi(p, i) > hmax)
        hmax = pfi_problem_hi(p, i);
    for (size_t i = 0; i < n; i++) {
      pl->w3[i] =
          weight[i] > 0 || !(hmax > 0) ? 0 : pfi_problem_hi(p, i) / hmax;
      pl->room2[i] = room[i] - cut[i];
    }
    waterfill(n, pl->room2, pl->w3, left, cut, pl->buf2);
  }
  for (size_t i = 0; i < n; i++)
    power_w[i] = pfi_problem_hi(p, i) - cut[i];
}

int pfi_alloc_plan_run(struct pfi_alloc_plan *pl, double budget_w,
                       double *power_w, struct pfi_error *err) {
  if (pl->s == PFI_STRAT_ORACLE)
    return pfi_oracle_run(pl->oracle, budget_w, power_w, NULL, NULL, err);
  if (pl->rc < 0 && pl->rc_first) {
    if (err)
      *err = pl->err;
    return pl->rc;
  }
  int rc = pfi__check_budget(&pl->bounds, budget_w, err);
  if (rc < 0)
    return rc;
  if (pl->rc < 0) {
    if (err)
      *err = pl->err;
    return pl->rc;
  }
  if (pl->s == PFI_STRAT_PFI_CURVE)
    return pfi_oracle_run(pl->oracle, budget_w, power_w, NULL, NULL, err);
  run_proportional(pl, budget_w, power_w);
  return 0;
}
