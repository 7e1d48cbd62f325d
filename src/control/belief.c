/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * What the controller believes about one job's power-throughput curve
 * (docs/control.md "Beliefs"): the prior from the estimated PFI, the
 * uncapped point, and the settled points the job's own cap changes made.
 */
#include <math.h>
#include <string.h>

#include "ctl_int.h"
#include "pfi/alloc.h"
#include "pfi/monotone.h"
#include "pfi/objective.h"

/* The prior when the telemetry model gave no estimate: a moderately
 * inelastic job, with a wide interval. */
#define PRIOR_PFI 1.5
#define PRIOR_PFI_LO 1.0
/* A tier floor's clearance above a point measured under the tier, share
 * of P_max (pfi__ctl_floor). */
#define TIER_CLEAR 0.01

double pfi__ctl_cap_hi(const struct pfi_ctl *c, const struct pfi__ctl_job *j) {
  double hi = INFINITY;
  for (size_t k = 0; k < j->ngpus; k++) {
    size_t g = j->gpu[k];
    /* Outside an event the cap in force is the top of the job's range:
     * an operator's own limit under the GPU's maximum is never lifted, so
     * the job at it is the job uncapped (its P_max, T_max learned there). */
    double v = c->in_event || c->recovering ? c->pre[g] : c->cap[g];
    if (v < hi)
      hi = v;
  }
  double lo = pfi__ctl_cap_lo(c, j);
  return hi < lo ? lo : hi;
}

/* A raise goes on from the caps the job's GPUs have, not only from the
 * caps decided: raises decided while its node did not hear them (it was
 * away, its assignments lost or held) would otherwise reach it together,
 * one jump of as many ramp steps. One step may be set and not yet read
 * back (the node reports after it applied it), so two steps above the
 * lowest cap read back; a cap not read back (0, not finite) limits
 * nothing. */
double pfi__ctl_raise_limit(const struct pfi_ctl *c,
                            const struct pfi__ctl_job *j,
                            const struct pfi_ctl_input *in, double up) {
  (void)c;
  double seen = INFINITY;
  for (size_t k = 0; k < j->ngpus; k++) {
    const struct pfi_ctl_gpu_obs *o = &in->gpu[j->gpu[k]];
    if (!o->valid)
      return -INFINITY;
    if (isfinite(o->cap_w) && o->cap_w > 0 && o->cap_w < seen)
      seen = o->cap_w;
  }
  double lim = j->cap + up;
  return seen + 2 * up < lim ? seen + 2 * up : lim;
}

double pfi__ctl_cap_lo(const struct pfi_ctl *c, const struct pfi__ctl_job *j) {
  (void)c;
  return j->cap_lo; /* fixed when the job is added */
}

/* Caps within this many W of a draw point share it. */
#define DRAW_BIN_W 5.0

/* The draw model (docs/control.md "Draw"): before a job is seen under a
 * binding cap, the first guess min(ratio x GPUs x cap, P_max); then the
 * draws it was seen at: between two learned points the line through them,
 * below the lowest its draw per cap, above the highest its draw per cap
 * up to P_max but never under the chord from it to (ceiling, P_max) (a
 * GPU's draw is concave in its cap: segments of the step under the cap
 * keep their power, those over it are clipped, so the draw lies between
 * that chord and the draw per cap carried on). Non-decreasing in the cap. */
double pfi__ctl_draw_at(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                        double cap_w) {
  double n = (double)j->ngpus, pm = isfinite(j->pmax) ? j->pmax : INFINITY;
  if (j->ndpts == 0) {
    double p = j->ratio * n * cap_w;
    return p > pm ? pm : p;
  }
  double ax[PFI__CTL_MAXDPTS], ay[PFI__CTL_MAXDPTS];
  size_t m = 0;
  for (size_t i = 0; i < j->ndpts; i++) {
    size_t k = m;
    while (k > 0 && ax[k - 1] > j->dpts[i].cap_w) {
      ax[k] = ax[k - 1];
      ay[k] = ay[k - 1];
      k--;
    }
    ax[k] = j->dpts[i].cap_w;
    ay[k] = j->dpts[i].draw_w < pm ? j->dpts[i].draw_w : pm;
    m++;
  }
  for (size_t i = m - 1; i-- > 0;)
    if (ay[i] > ay[i + 1])
      ay[i] = ay[i + 1];
  if (cap_w <= ax[0])
    return ay[0] * cap_w / ax[0];
  if (cap_w >= ax[m - 1]) {
    double p = ay[m - 1] * cap_w / ax[m - 1];
    if (p > pm)
      p = pm;
    double hi = pfi__ctl_cap_hi(c, j);
    if (isfinite(pm) && hi > ax[m - 1] + 1e-9) {
      double u = (cap_w - ax[m - 1]) / (hi - ax[m - 1]);
      double chord = ay[m - 1] + (u < 1 ? u : 1) * (pm - ay[m - 1]);
      if (p < chord)
        p = chord;
    }
    return p;
  }
  size_t i = 0;
  while (i + 2 < m && ax[i + 1] < cap_w)
    i++;
  return ay[i] + (ay[i + 1] - ay[i]) * (cap_w - ax[i]) / (ax[i + 1] - ax[i]);
}

void pfi__ctl_learn_draw(struct pfi__ctl_job *j, double cap_w, double draw_w) {
  size_t w = 0;
  double best = INFINITY;
  for (size_t i = 0; i < j->ndpts; i++) {
    double d = fabs(j->dpts[i].cap_w - cap_w);
    if (d < best) {
      best = d;
      w = i;
    }
  }
  if (best < DRAW_BIN_W) {
    /* A running mean of at most 10 periods, cap and draw together. */
    struct pfi__ctl_dpt *q = &j->dpts[w];
    q->n = (q->n < 10 ? q->n : 9) + 1;
    q->cap_w += (cap_w - q->cap_w) / q->n;
    q->draw_w += (draw_w - q->draw_w) / q->n;
    return;
  }
  if (j->ndpts < PFI__CTL_MAXDPTS)
    w = j->ndpts++; /* else: the nearest point gives its place */
  j->dpts[w] = (struct pfi__ctl_dpt){cap_w, draw_w, 1};
}

double pfi__ctl_cap_for(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                        double p) {
  double hi = pfi__ctl_cap_hi(c, j), lo = pfi__ctl_cap_lo(c, j);
  if (isfinite(j->pmax) && p >= j->pmax * 0.999)
    return hi;
  double cap;
  if (j->ndpts == 0) {
    cap = p / (j->ratio * (double)j->ngpus);
  } else {
    /* Bisection on the non-decreasing draw model: 30 halvings. */
    double a = lo, b = hi;
    if (pfi__ctl_draw_at(c, j, a) >= p)
      return lo;
    for (int k = 0; k < 30; k++) {
      double mid = 0.5 * (a + b);
      if (pfi__ctl_draw_at(c, j, mid) >= p)
        b = mid;
      else
        a = mid;
    }
    cap = b;
  }
  return cap < lo ? lo : cap > hi ? hi : cap;
}

/* The prior's shape T/T_max = 1 - (1 - u)^g on u = P/P_max (alloc.h's
 * pfi-curve model), its exponent from the PFI on the job's range. */
static double prior_frac(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                         double p, int lcb) {
  double pfi = lcb ? j->pfi_lo : j->pfi;
  if (!isfinite(pfi))
    pfi = lcb ? PRIOR_PFI_LO : PRIOR_PFI;
  if (lcb == 2) {
    /* Cautious: the lower end, but no lower than PFI 1.0 (an interval's
     * far end there would keep a tiered job from ever being cut, and so
     * from ever being learned), and no higher than the estimate. */
    double mid = isfinite(j->pfi) ? j->pfi : PRIOR_PFI;
    if (pfi < PRIOR_PFI_LO)
      pfi = PRIOR_PFI_LO;
    if (pfi > mid)
      pfi = mid;
  }
  double lo = pfi__ctl_draw_at(c, j, pfi__ctl_cap_lo(c, j));
  /* The exponent is remembered for the inputs it was computed from (the
   * cache is not part of the belief: const is kept for callers). */
  struct pfi__ctl_job *m = (struct pfi__ctl_job *)j;
  double g;
  if (m->g_pfi[lcb] == pfi && m->g_lo[lcb] == lo && m->g_hi[lcb] == j->pmax) {
    g = m->g_val[lcb];
  } else {
    g = pfi_curve_model_exponent(pfi, lo, j->pmax);
    m->g_pfi[lcb] = pfi;
    m->g_lo[lcb] = lo;
    m->g_hi[lcb] = j->pmax;
    m->g_val[lcb] = g;
  }
  double u = p / j->pmax;
  if (u >= 1)
    return 1;
  if (u <= 0)
    return 0;
  return 1.0 - pow(1.0 - u, g);
}

static double pt_se(const struct pfi__ctl_pt *q) {
  double sd = q->n > 1 ? sqrt(q->m2 / (q->n - 1)) : 0;
  double se = sd / sqrt(q->n > 0 ? q->n : 1);
  /* Never claim more precision than the run-to-run floor allows. */
  double floor = 0.002 * fabs(q->tokens);
  return se > floor ? se : floor;
}

size_t pfi__ctl_anchors(const struct pfi__ctl_job *j, int lcb, double *ax,
                        double *ay) {
  /* The learned points below P_max in cap order, each weighted by the
   * periods behind it. */
  double cap[PFI__CTL_MAXPTS], pw[PFI__CTL_MAXPTS], y[PFI__CTL_MAXPTS],
      w[PFI__CTL_MAXPTS];
  size_t n = 0;
  for (size_t i = 0; i < j->npts; i++) {
    const struct pfi__ctl_pt *q = &j->pts[i];
    if (!(q->power_w < j->pmax * 0.998))
      continue;
    size_t k = n;
    while (k > 0 && cap[k - 1] > q->cap_w) {
      cap[k] = cap[k - 1];
      pw[k] = pw[k - 1];
      y[k] = y[k - 1];
      w[k] = w[k - 1];
      k--;
    }
    cap[k] = q->cap_w;
    pw[k] = q->power_w;
    y[k] = q->tokens + (lcb < 0 ? 2.0 : lcb > 0 ? -2.0 : 0) * pt_se(q);
    w[k] = q->n >= 1 ? q->n : 1;
    n++;
  }
  if (n == 0)
    return 0;
  /* The fit allocation, capacity and the oracle decide on
   * (pfi_problem_add_curve(), monotone.h): power and throughput each the
   * closest sequence, in least squares weighted by the periods, that does
   * not fall as the cap rises, so that one noisy window neither drags the
   * curve below it down nor makes a lower cap look faster. The uncapped
   * point is measured over far more periods than any capped one: it stays
   * fixed, and a fit above it is clipped to it (the isotonic fit under an
   * upper bound is the fit clipped). Inputs are finite: the fit cannot
   * fail; if it did the raw points would stand. */
  if (pfi_isotonic(pw, w, n, pw) < 0 || pfi_isotonic(y, w, n, y) < 0)
    return 0;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    /* Points the fit pooled to one power: the highest cap's (the most
     * throughput at that power) stands for them. */
    if (i + 1 < n && !(pw[i + 1] > pw[i]))
      continue;
    ax[m] = pw[i];
    ay[m] = y[i] < j->tmax ? y[i] : j->tmax;
    m++;
  }
  return m;
}

double pfi__ctl_believe(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                        double p, int lcb) {
  if (!isfinite(j->pmax) || !isfinite(j->tmax) || j->pmax <= 0)
    return NAN;
  if (p >= j->pmax)
    return j->tmax;
  /* Anchors: the monotone fit of the learned points below P_max, then
   * (P_max, T_max). */
  double ax[PFI__CTL_MAXPTS + 1], ay[PFI__CTL_MAXPTS + 1];
  size_t n = pfi__ctl_anchors(j, lcb, ax, ay);
  ax[n] = j->pmax;
  ay[n] = j->tmax;
  if (n == 0 || p <= ax[0]) {
    /* Below every learned point: the prior's shape through the lowest
     * anchor. */
    double f0 = prior_frac(c, j, ax[0], lcb), f = prior_frac(c, j, p, lcb);
    double y = f0 > 0 ? ay[0] * f / f0 : j->tmax * f;
    return y > 0 ? y : 0;
  }
  size_t i = 0;
  while (i + 1 < n && ax[i + 1] < p)
    i++;
  /* Between two anchors the prior's shape, stretched to pass through
   * both: the share of the prior's rise from one to the other that it
   * has made at p (a chord would lie under a concave curve everywhere
   * between them, and a job learned only near its floor would look
   * flatter in the middle than its prior says). */
  double f0 = prior_frac(c, j, ax[i], lcb),
         f1 = prior_frac(c, j, ax[i + 1], lcb);
  double w = (p - ax[i]) / (ax[i + 1] - ax[i]);
  if (f1 > f0 + 1e-12)
    w = (prior_frac(c, j, p, lcb) - f0) / (f1 - f0);
  return ay[i] + w * (ay[i + 1] - ay[i]);
}

double pfi__ctl_floor(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                      int tiers) {
  double lo = pfi__ctl_draw_at(c, j, pfi__ctl_cap_lo(c, j));
  double hi = pfi__ctl_draw_at(c, j, pfi__ctl_cap_hi(c, j));
  double f = lo;
  if (tiers && j->max_loss < 1 && isfinite(j->tmax) && isfinite(j->pmax)) {
    /* On the cautious bound for every tiered job: where the curve is not
     * learned yet the prior is the cautious one (PFI 1.0 without an
     * estimate), so that a cut never goes past the tier on the strength of
     * a guess; each settled point then lets the floor come down. */
    double want = (1.0 - j->max_loss) * j->tmax;
    if (pfi__ctl_believe(c, j, lo, 2) < want) {
      /* Bisection on a non-decreasing function: 30 halvings (a
       * billionth of the range). */
      double a = lo, b = hi;
      for (int k = 0; k < 30; k++) {
        double m = 0.5 * (a + b);
        if (pfi__ctl_believe(c, j, m, 2) >= want)
          b = m;
        else
          a = m;
      }
      f = b;
    }
    /* A point measured under the tier (on its upper bound) shows that the
     * job needs more than that power, whatever the curve says between
     * points: two points a few W apart whose throughputs differ by more
     * than the noise (a window whose mean power read low) would put the
     * bisection's floor on that step, where the job's true throughput is
     * the lower one. The floor clears such a point by TIER_CLEAR of P_max
     * (the realized draw wanders around its caps by more than a point's
     * power error). The points are read on their monotone fit, as the
     * curve is: one short window that read low among well-measured points
     * at lower caps does not hold the job at its cap. */
    double ax[PFI__CTL_MAXPTS], ay[PFI__CTL_MAXPTS];
    size_t na = pfi__ctl_anchors(j, -1, ax, ay);
    for (size_t i = 0; i < na; i++)
      if (ay[i] < want && ax[i] + TIER_CLEAR * j->pmax > f)
        f = ax[i] + TIER_CLEAR * j->pmax;
  }
  if (j->rollback_floor > f)
    f = j->rollback_floor;
  return f > hi ? hi : f;
}

/* Least concave majorant of points sorted by x (upper hull), in place. */
static size_t concave_hull(double *x, double *y, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    while (m >= 2) {
      double cross = (x[m - 1] - x[m - 2]) * (y[i] - y[m - 2]) -
                     (y[m - 1] - y[m - 2]) * (x[i] - x[m - 2]);
      if (cross >= 0)
        m--; /* the middle point lies on or below the chord */
      else
        break;
    }
    x[m] = x[i];
    y[m] = y[i];
    m++;
  }
  return m;
}

size_t pfi__ctl_curve(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                      double lo, double hi, double *x, double *y, size_t max) {
  /* Six evenly spaced breakpoints plus every learned power inside. */
  size_t n = 0;
  int lcb = j->protect;
  if (hi <= lo) {
    x[0] = lo;
    y[0] = pfi__ctl_believe(c, j, lo, lcb);
    return 1;
  }
  for (int k = 0; k <= 5 && n < max; k++) {
    x[n] = lo + (hi - lo) * k / 5.0;
    n++;
  }
  for (size_t i = 0; i < j->npts && n < max; i++) {
    double p = j->pts[i].power_w;
    if (p <= lo || p >= hi)
      continue;
    size_t k = n;
    while (k > 0 && x[k - 1] > p) {
      x[k] = x[k - 1];
      k--;
    }
    x[k] = p;
    n++;
  }
  /* Drop duplicates (a learned point on the grid). */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || x[i] > x[m - 1] + 1e-9)
      x[m++] = x[i];
  for (size_t i = 0; i < m; i++)
    y[i] = pfi__ctl_believe(c, j, x[i], lcb);
  m = concave_hull(x, y, m);
  /* The allocation's objective (objective.h): under work each job is
   * valued by its share of its uncapped throughput times its GPUs, so that
   * no job's unit (tokens/s, samples/s) weighs in the split. */
  double s = pfi_objective_factor((enum pfi_objective_kind)c->cfg.objective,
                                  1.0, (double)j->ngpus, j->tmax);
  for (size_t i = 0; i < m; i++)
    y[i] *= s;
  return m;
}

void pfi__ctl_learn(struct pfi__ctl_job *j, double cap_w, double power_w,
                    double tokens, double n, double m2) {
  size_t i;
  for (i = 0; i < j->npts; i++)
    if (fabs(j->pts[i].cap_w - cap_w) < 1.0)
      break;
  if (i == j->npts) {
    if (j->npts == PFI__CTL_MAXPTS) {
      /* Full: replace the point measured least. */
      size_t w = 0;
      for (size_t k = 1; k < j->npts; k++)
        if (j->pts[k].n < j->pts[w].n)
          w = k;
      i = w;
    } else {
      j->npts++;
    }
    j->pts[i] = (struct pfi__ctl_pt){cap_w, power_w, tokens, n, m2};
    return;
  }
  /* Merge two groups of periods (Chan's parallel variance). */
  struct pfi__ctl_pt *q = &j->pts[i];
  double nt = q->n + n, d = tokens - q->tokens;
  q->m2 += m2 + d * d * q->n * n / nt;
  q->tokens += d * n / nt;
  q->power_w += (power_w - q->power_w) * n / nt;
  q->n = nt;
}

double pfi__ctl_belief_pfi(const struct pfi_ctl *c,
                           const struct pfi__ctl_job *j) {
  if (!isfinite(j->pmax) || !isfinite(j->tmax))
    return NAN;
  double lo = pfi__ctl_draw_at(c, j, pfi__ctl_cap_lo(c, j));
  double s = 0;
  int n = 0;
  for (int k = 0; k < 5; k++) {
    double p = lo + (j->pmax - lo) * k / 5.0;
    double t = pfi__ctl_believe(c, j, p, 0);
    if (!(p < j->pmax) || !(t < j->tmax))
      continue;
    s += (1.0 - p / j->pmax) / (1.0 - t / j->tmax);
    n++;
  }
  return n ? s / n : NAN;
}

/* The belief's uncertainty at p: its lower confidence bound lies two
 * standard deviations under it (the prior's PFI interval where nothing is
 * learned, two standard errors at a learned point). If the truth there is
 * higher by d (flatter than believed), the watts the job could give from
 * a to p earn d tokens/s more elsewhere than the belief allows; knowing it
 * is worth E[max(0, d)] = sigma phi(0) a second over the horizon, sigma
 * less the run-to-run noise a settled point cannot see through. The
 * probe costs the believed loss of holding the job at p for hold_s less
 * what the freed watts earn at `slope`. */
double pfi__ctl_probe_value(const struct pfi_ctl *c,
                            const struct pfi__ctl_job *j, double a,
                            double delta, double slope, double horizon_s,
                            double hold_s, double *cost) {
  double p = a - delta;
  double sigma =
      0.5 * (pfi__ctl_believe(c, j, p, 0) - pfi__ctl_believe(c, j, p, 1));
  double loss = pfi__ctl_believe(c, j, a, 0) - pfi__ctl_believe(c, j, p, 0) -
                slope * delta;
  *cost = (isfinite(loss) && loss > 0 ? loss : 0) * hold_s;
  /* A settled point tells the curve apart only beyond the run-to-run
   * noise of throughput: that much of the uncertainty a probe cannot
   * remove. */
  sigma -= c->cfg.tokens_cv * pfi__ctl_believe(c, j, p, 0);
  if (!(sigma > 0))
    return 0;
  return 0.3989422804014327 * sigma * horizon_s;
}
