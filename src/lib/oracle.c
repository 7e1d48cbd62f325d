/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Allocation problems and the exact oracle. The proof of exactness is in
 * docs/predict-allocate.md ("Why the oracle is exact"); in short:
 *
 *  1. Replace every job's throughput f_i by its concave envelope g_i on the
 *     job's current domain. The envelope problem is a fractional knapsack:
 *     filling hull segments in order of decreasing slope is optimal, all
 *     segments are full or empty except at most one, and its value is an
 *     upper bound on the true problem over the same domains.
 *  2. Every job whose segments are all full or empty sits on a hull vertex,
 *     which is an original breakpoint, so g_i = f_i there. Only the one
 *     partially filled job k can have g_k > f_k; the relaxation's point is
 *     feasible, so (bound - gap_k) is a true objective value.
 *  3. If the gap is zero the point is optimal. Otherwise job k lies strictly
 *     inside a hull segment spanning original breakpoints u0 < ... < um;
 *     its domain is split into [lo, u0], each original segment
 *     [u_j, u_j+1] (on which f_k is linear), and [um, hi]. The pieces cover
 *     the domain, so the best child is the optimum; each child strictly
 *     shrinks k's domain, so the search is finite. A child whose bound does
 *     not exceed the best value found (plus the tolerance) is pruned.
 *
 * Speed: hull segments are radix-sorted once by slope with prefix sums of
 * lengths and gains, so a node that restricts s jobs is evaluated by a
 * binary search costing O(s log M) for M segments, not O(M).
 */
#include "pfi/oracle.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "msort.h"
#include "oracle_int.h"
#include "problem_int.h"

#define MAX_NODES 2000000u

/* Linear interpolation on sorted, strictly increasing xs; clamped (the
 * same function as problem.c's, for the relaxation's gap). */
static double interp(const double *xs, const double *ys, size_t n, double x) {
  if (n == 1 || x <= xs[0])
    return ys[0];
  if (x >= xs[n - 1])
    return ys[n - 1];
  size_t lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (xs[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  double t = (x - xs[lo]) / (xs[hi] - xs[lo]);
  return ys[lo] + t * (ys[hi] - ys[lo]);
}

static double power_tol(const struct pfi_problem *p) {
  double s = 0;
  for (size_t i = 0; i < p->njobs; i++)
    s += fabs(pfi_problem_hi(p, i));
  return 1e-9 * (s + 1.0);
}

/* ---- the oracle ---- */

/* A branch-and-bound node: job `job` restricted to breakpoints [a, b]. */
struct node {
  size_t parent; /* SIZE_MAX at the root */
  size_t job;
  uint32_t a, b;
};

struct restr {
  size_t job;
  uint32_t a, b;
  size_t nseg; /* its segments in ctx->nseg_buf */
  size_t segoff;
};

struct ctx {
  const struct pfi_problem *p;
  size_t M; /* global hull segments, sorted by slope, descending */
  struct seg *g;
  double *lpre, *vpre; /* M + 1 prefix sums of lengths and of gains */
  size_t *jseg;        /* njobs + 1 offsets into gpos */
  size_t *gpos;        /* sorted position of each job's root hull segments */
  double base_pow, base_val; /* sum of floors and of f at the floors */
  double budget;
  double tol_val, tol_pow;
  unsigned char *mark; /* njobs flags: job restricted in this node */
  /* Identical jobs (same breakpoints) form a group, members in index
   * order: grp_mem[grp_start[g] .. grp_start[g + 1]), job i is member
   * grp_pos[i] of group grp_of[i]. */
  size_t *grp_start, *grp_mem, *grp_of, *grp_pos;
  int groups_ok; /* groups, jseg and gpos built: only a branching needs
                    them */
  /* scratch for one node */
  struct restr *r;
  size_t nr, rcap;
  struct seg *ns;
  size_t nns, nscap;
};

static double gslope(const struct ctx *c, long t) {
  if (t < 0)
    return INFINITY;
  if ((size_t)t >= c->M)
    return -INFINITY;
  return c->g[t].slope;
}

static const struct restr *find_restr(const struct ctx *c, size_t job) {
  for (size_t i = 0; i < c->nr; i++)
    if (c->r[i].job == job)
      return &c->r[i];
  return NULL;
}

/* Collects the restrictions on the path from `id` to the root, intersecting
 * those on the same job, and computes their hull segments. Returns 0, 1
 * when a job's domain became empty (the node is infeasible), or -1 (out of
 * memory). */
static int gather(struct ctx *c, const struct node *nodes, size_t id) {
  c->nr = 0;
  c->nns = 0;
  for (size_t k = id; k != SIZE_MAX; k = nodes[k].parent) {
    if (nodes[k].job == SIZE_MAX)
      continue;
    struct restr *r = (struct restr *)find_restr(c, nodes[k].job);
    if (r) {
      if (nodes[k].a > r->a)
        r->a = nodes[k].a;
      if (nodes[k].b < r->b)
        r->b = nodes[k].b;
      continue;
    }
    if (c->nr == c->rcap) {
      size_t nc = c->rcap ? 2 * c->rcap : 16;
      struct restr *nr = realloc(c->r, nc * sizeof *nr);
      if (!nr)
        return -1;
      c->r = nr;
      c->rcap = nc;
    }
    r = &c->r[c->nr++];
    r->job = nodes[k].job;
    r->a = nodes[k].a;
    r->b = nodes[k].b;
  }
  for (size_t i = 0; i < c->nr; i++) {
    struct restr *r = &c->r[i];
    if (r->a > r->b)
      return 1;
    r->segoff = c->nns;
    if (pfi__oracle_hull(c->p, r->job, r->a, r->b, &c->ns, &c->nns, &c->nscap) <
        0)
      return -1;
    r->nseg = c->nns - r->segoff;
  }
  return 0;
}

/* Length and gain of the merged list before global position t. */
static void merged_before(const struct ctx *c, long t, double *len,
                          double *val) {
  size_t tt = t < 0 ? 0 : (size_t)t;
  double L = c->lpre[tt], V = c->vpre[tt];
  double sl = gslope(c, t);
  for (size_t i = 0; i < c->nr; i++) {
    const struct restr *r = &c->r[i];
    for (size_t k = c->jseg[r->job]; k < c->jseg[r->job + 1]; k++) {
      size_t pos = c->gpos[k];
      if (pos < tt) {
        L -= c->g[pos].len;
        V -= c->g[pos].len * c->g[pos].slope;
      }
    }
    for (size_t k = 0; k < r->nseg; k++) {
      const struct seg *s = &c->ns[r->segoff + k];
      if (s->slope >= sl) {
        L += s->len;
        V += s->len * s->slope;
      }
    }
  }
  *len = L;
  *val = V;
}

struct fill {
  size_t job;
  double amt;
};

struct nres {
  int feasible;
  double ub;    /* envelope bound */
  double val;   /* true value of the relaxation's point */
  double gap;   /* ub - val */
  long tstar;   /* global items before this position are full */
  int has_frac; /* one segment is partially filled */
  struct seg frac;
  double frac_amt;
  size_t nfill; /* window fills (global item tstar and node segments) */
  struct fill *fill;
};

static int cmp_seg_desc(const void *a, const void *b) {
  const struct seg *x = *(const struct seg *const *)a,
                   *y = *(const struct seg *const *)b;
  if (x->slope > y->slope)
    return -1;
  if (x->slope < y->slope)
    return 1;
  return (x > y) - (x < y);
}

/* Evaluates the relaxation of the node whose restrictions are gathered;
 * `fillbuf` has room for 1 + c->nns entries, `ptrbuf` for c->nns. */
static void eval_node(const struct ctx *c, struct nres *o, struct fill *fillbuf,
                      const struct seg **ptrbuf) {
  const struct pfi_problem *p = c->p;
  memset(o, 0, sizeof *o);
  o->fill = fillbuf;
  double bpow = c->base_pow, bval = c->base_val, total = c->lpre[c->M];
  for (size_t i = 0; i < c->nr; i++) {
    const struct restr *r = &c->r[i];
    size_t o0 = p->off[r->job];
    bpow += p->x[o0 + r->a] - p->x[o0];
    bval += p->y[o0 + r->a] - p->y[o0];
    for (size_t k = c->jseg[r->job]; k < c->jseg[r->job + 1]; k++)
      total -= c->g[c->gpos[k]].len;
    for (size_t k = 0; k < r->nseg; k++)
      total += c->ns[r->segoff + k].len;
  }
  double R = c->budget - bpow;
  if (R < -c->tol_pow || R > total + c->tol_pow)
    return;
  if (R < 0)
    R = 0;
  if (R > total)
    R = total;
  o->feasible = 1;
  /* Largest t in [-1, M] with C(t) <= R, C the merged length before t. */
  long lo = -1, hi = (long)c->M;
  double L, V;
  merged_before(c, hi, &L, &V);
  if (L <= R) {
    lo = hi;
  } else {
    while (hi - lo > 1) {
      long mid = lo + (hi - lo) / 2;
      merged_before(c, mid, &L, &V);
      if (L <= R)
        lo = mid;
      else
        hi = mid;
    }
  }
  o->tstar = lo;
  merged_before(c, lo, &L, &V);
  double rem = R - L, val = bval + V;
  /* The window: global item tstar (unless its job is restricted), then
   * node segments with slope in [gslope(tstar + 1), gslope(tstar)). */
  size_t nw = 0;
  const struct seg **w = ptrbuf;
  if (lo >= 0 && (size_t)lo < c->M && !c->mark[c->g[lo].job])
    w[nw++] = &c->g[lo];
  size_t first_node = nw;
  double shi = gslope(c, lo), slo = gslope(c, lo + 1);
  for (size_t k = 0; k < c->nns; k++)
    if (c->ns[k].slope < shi && c->ns[k].slope >= slo)
      w[nw++] = &c->ns[k];
  qsort(w + first_node, nw - first_node, sizeof *w, cmp_seg_desc);
  for (size_t k = 0; k < nw && rem > 0; k++) {
    const struct seg *s = w[k];
    double amt = rem >= s->len ? s->len : rem;
    o->fill[o->nfill].job = s->job;
    o->fill[o->nfill].amt = amt;
    o->nfill++;
    val += s->slope * amt;
    rem -= amt;
    if (amt < s->len) {
      o->has_frac = 1;
      o->frac = *s;
      o->frac_amt = amt;
    }
  }
  o->ub = val;
  o->val = val;
  if (o->has_frac && o->frac.b - o->frac.a > 1) {
    size_t o0 = p->off[o->frac.job];
    const double *x = p->x + o0 + o->frac.a, *y = p->y + o0 + o->frac.a;
    size_t m = o->frac.b - o->frac.a + 1;
    double at = x[0] + o->frac_amt;
    double g = y[0] + o->frac.slope * o->frac_amt;
    double f = interp(x, y, m, at);
    if (g > f)
      o->gap = g - f;
    o->val = val - o->gap;
  }
}

/* Writes the powers of the node's relaxation point. */
static void materialize(const struct ctx *c, const struct nres *o,
                        double *power) {
  const struct pfi_problem *p = c->p;
  for (size_t i = 0; i < p->njobs; i++)
    power[i] = pfi_problem_lo(p, i);
  size_t tt = o->tstar < 0 ? 0 : (size_t)o->tstar;
  for (size_t pos = 0; pos < tt; pos++)
    if (!c->mark[c->g[pos].job])
      power[c->g[pos].job] += c->g[pos].len;
  double sl = gslope(c, o->tstar);
  for (size_t i = 0; i < c->nr; i++) {
    const struct restr *r = &c->r[i];
    double v = p->x[p->off[r->job] + r->a];
    for (size_t k = 0; k < r->nseg; k++)
      if (c->ns[r->segoff + k].slope >= sl)
        v += c->ns[r->segoff + k].len;
    power[r->job] = v;
  }
  for (size_t k = 0; k < o->nfill; k++)
    power[o->fill[k].job] += o->fill[k].amt;
  /* Rounding in the sums can leave a power an ulp outside its range. */
  for (size_t i = 0; i < p->njobs; i++) {
    if (power[i] < pfi_problem_lo(p, i))
      power[i] = pfi_problem_lo(p, i);
    if (power[i] > pfi_problem_hi(p, i))
      power[i] = pfi_problem_hi(p, i);
  }
}

static void ctx_free(struct ctx *c) {
  free(c->g);
  free(c->lpre);
  free(c->vpre);
  free(c->jseg);
  free(c->gpos);
  free(c->mark);
  free(c->grp_start);
  free(c->grp_mem);
  free(c->grp_of);
  free(c->grp_pos);
  free(c->r);
  free(c->ns);
}

struct hjob {
  uint64_t h;
  size_t i;
};

static int cmp_hjob(const void *a, const void *b) {
  const struct hjob *x = a, *y = b;
  if (x->h != y->h)
    return x->h < y->h ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static int same_job(const struct pfi_problem *p, size_t i, size_t j) {
  size_t ni = p->off[i + 1] - p->off[i], nj = p->off[j + 1] - p->off[j];
  return ni == nj &&
         memcmp(p->x + p->off[i], p->x + p->off[j], ni * sizeof *p->x) == 0 &&
         memcmp(p->y + p->off[i], p->y + p->off[j], ni * sizeof *p->y) == 0;
}

#define HJOB_LESS(x, y)                                                        \
  ((x)->h < (y)->h || ((x)->h == (y)->h && (x)->i < (y)->i))
PFI_MSORT(sort_hjob, struct hjob, HJOB_LESS, cmp_hjob)

/* Groups identical jobs (workloads sampled with replacement repeat them). */
static int build_groups(struct ctx *c) {
  const struct pfi_problem *p = c->p;
  size_t n = p->njobs;
  struct hjob *h = malloc((n + 1) * sizeof *h);
  c->grp_start = malloc((n + 2) * sizeof *c->grp_start);
  c->grp_mem = malloc((n + 1) * sizeof *c->grp_mem);
  c->grp_of = malloc((n + 1) * sizeof *c->grp_of);
  c->grp_pos = malloc((n + 1) * sizeof *c->grp_pos);
  if (!h || !c->grp_start || !c->grp_mem || !c->grp_of || !c->grp_pos) {
    free(h);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    /* A hash of the breakpoints' bits, a double at a time (equal jobs
     * hash alike; others that collide are told apart by same_job). */
    uint64_t v = 0x9E3779B97F4A7C15ULL;
    for (size_t q = p->off[i]; q < p->off[i + 1]; q++) {
      uint64_t bx, by;
      memcpy(&bx, &p->x[q], sizeof bx);
      memcpy(&by, &p->y[q], sizeof by);
      v = (v ^ bx) * 0xFF51AFD7ED558CCDULL;
      v ^= v >> 32;
      v = (v ^ by) * 0xC4CEB9FE1A85EC53ULL;
      v ^= v >> 29;
    }
    h[i].h = v;
    h[i].i = i;
  }
  sort_hjob(h, n);
  size_t ng = 0;
  for (size_t q = 0; q < n; q++) {
    size_t i = h[q].i;
    if (q == 0 || h[q].h != h[q - 1].h ||
        !same_job(p, c->grp_mem[c->grp_start[ng - 1]], i))
      c->grp_start[ng++] = q;
    c->grp_mem[q] = i;
    c->grp_of[i] = ng - 1;
    c->grp_pos[i] = q - c->grp_start[ng - 1];
  }
  c->grp_start[ng] = n;
  free(h);
  return 0;
}

/* Each job's root hull segments by sorted position (jseg, gpos): only a
 * node that restricts jobs needs them, so they are built at the first
 * branching. Returns 0 or -1 (out of memory). */
static int build_jobpos(struct ctx *c) {
  size_t njobs = c->p->njobs;
  c->jseg = calloc(njobs + 1, sizeof *c->jseg);
  c->gpos = malloc((c->M + 1) * sizeof *c->gpos);
  size_t *fillpos = calloc(njobs + 1, sizeof *fillpos);
  if (!c->jseg || !c->gpos || !fillpos) {
    free(fillpos);
    return -1;
  }
  for (size_t t = 0; t < c->M; t++)
    c->jseg[c->g[t].job + 1]++;
  for (size_t i = 0; i < njobs; i++)
    c->jseg[i + 1] += c->jseg[i];
  for (size_t t = 0; t < c->M; t++) {
    size_t j = c->g[t].job;
    c->gpos[c->jseg[j] + fillpos[j]++] = t;
  }
  free(fillpos);
  return 0;
}

static void set_marks(struct ctx *c, unsigned char v) {
  for (size_t i = 0; i < c->nr; i++)
    c->mark[c->r[i].job] = v;
}

/* A problem prepared for the oracle: everything that does not depend on
 * the budget (hulls, their sort, prefix sums, groups of identical jobs),
 * and the search's buffers, kept from one budget to the next. */
struct pfi_oracle {
  struct ctx c;
  struct pfi_bounds bounds; /* for the budget's check */
  int rc;                   /* 0, or the error the preparation met */
  struct pfi_error err;     /* its message */
  struct node *nodes;
  size_t nodes_cap;
  size_t *stack, stack_cap;
  struct fill *fillbuf;
  const struct seg **ptrbuf;
  size_t fillcap;
  uint32_t (*pieces)[2]; /* one branching's children */
  size_t pieces_cap;
};

void pfi_oracle_free(struct pfi_oracle *o) {
  if (!o)
    return;
  ctx_free(&o->c);
  free(o->nodes);
  free(o->stack);
  free(o->fillbuf);
  free(o->ptrbuf);
  free(o->pieces);
  free(o);
}

/* The root hull segments of p, whose job i is a copy of library job
 * from[i], taken from the library and put in the order pfi__oracle_sort_segs()
 * gives (by key, ties in build order) by one counting pass over the ranks. */
static int lib_segs(struct ctx *c, const struct pfi__hull_lib *h,
                    const size_t *from) {
  size_t njobs = c->p->njobs, M = 0;
  for (size_t i = 0; i < njobs; i++)
    M += h->off[from[i] + 1] - h->off[from[i]];
  size_t *cnt = calloc(h->nrank + 1, sizeof *cnt);
  c->g = malloc((M + 1) * sizeof *c->g);
  if (!cnt || !c->g) {
    free(cnt);
    return -1;
  }
  for (size_t i = 0; i < njobs; i++)
    for (size_t t = h->off[from[i]]; t < h->off[from[i] + 1]; t++)
      cnt[h->rank[t] + 1]++;
  for (size_t r = 0; r < h->nrank; r++)
    cnt[r + 1] += cnt[r];
  for (size_t i = 0; i < njobs; i++)
    for (size_t t = h->off[from[i]]; t < h->off[from[i] + 1]; t++) {
      struct seg *s = &c->g[cnt[h->rank[t]]++];
      *s = h->seg[t];
      s->job = i;
    }
  c->M = M;
  free(cnt);
  return 0;
}

/* Builds the budget-independent part; returns 0 or an error (kept in o).
 * With a library h, job i of the problem is a copy of its job from[i]. */
static int prepare(struct pfi_oracle *o, const struct pfi__hull_lib *h,
                   const size_t *from, struct pfi_error *err) {
  struct ctx *cp = &o->c;
  struct ctx c = *cp;
  const struct pfi_problem *p = c.p;
  int rc = 0;
  size_t njobs = p->njobs;
  size_t cap = 0;
  double yscale = 0;
  if (h) {
    /* A library far larger than the problem: one counting pass over its
     * ranks would cost more than the problem's own sort. */
    size_t M = 0;
    for (size_t i = 0; i < njobs; i++)
      M += h->off[from[i] + 1] - h->off[from[i]];
    if (h->nrank > 8 * M + 4096)
      h = NULL;
  }
  for (size_t i = 0; i < njobs; i++) {
    c.base_pow += pfi_problem_lo(p, i);
    c.base_val += p->y[p->off[i]];
    yscale += h ? h->ymax[from[i]] : pfi__oracle_job_ymax(p, i);
    if (h)
      continue;
    size_t m = p->off[i + 1] - p->off[i];
    if (m > UINT32_MAX / 2) { /* breakpoint indices are 32-bit */
      rc = pfi_error_set(err, PFI_EINVAL, "job %zu has too many points", i);
      goto out;
    }
    if (pfi__oracle_hull(p, i, 0, (uint32_t)(m - 1), &c.g, &c.M, &cap) < 0)
      goto nomem;
  }
  if (h && lib_segs(&c, h, from) < 0)
    goto nomem;
  /* The sum of throughputs must be finite: the tolerance and every bound
   * are measured on it, and an overflowed bound would prune blindly. */
  if (!isfinite(yscale)) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "the jobs' throughputs sum beyond the floating-point "
                       "range");
    goto out;
  }
  c.tol_val = 1e-9 * (yscale + 1e-300);
  if (!h && pfi__oracle_sort_segs(&c.g, c.M) < 0)
    goto nomem;
  c.lpre = malloc((c.M + 1) * sizeof *c.lpre);
  c.vpre = malloc((c.M + 1) * sizeof *c.vpre);
  c.mark = calloc(njobs + 1, 1);
  if (!c.lpre || !c.vpre || !c.mark)
    goto nomem;
  c.lpre[0] = c.vpre[0] = 0;
  for (size_t t = 0; t < c.M; t++) {
    c.lpre[t + 1] = c.lpre[t] + c.g[t].len;
    c.vpre[t + 1] = c.vpre[t] + c.g[t].len * c.g[t].slope;
  }
  o->nodes_cap = 64;
  o->nodes = malloc(o->nodes_cap * sizeof *o->nodes);
  o->stack_cap = 64;
  o->stack = malloc(o->stack_cap * sizeof *o->stack);
  if (!o->nodes || !o->stack)
    goto nomem;
  goto out;
nomem:
  rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
out:
  *cp = c;
  return rc;
}

static int oracle_new(struct pfi_oracle **out, const struct pfi_problem *p,
                      const struct pfi__hull_lib *h, const size_t *from,
                      struct pfi_error *err) {
  *out = NULL;
  struct pfi_oracle *o = calloc(1, sizeof *o);
  if (!o)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  o->c.p = p;
  o->c.tol_pow = power_tol(p);
  pfi__bounds(p, &o->bounds);
  pfi_error_clear(&o->err);
  o->rc = prepare(o, h, from, &o->err);
  *out = o;
  return 0;
}

int pfi_oracle_prepare(struct pfi_oracle **out, const struct pfi_problem *p,
                       struct pfi_error *err) {
  return oracle_new(out, p, NULL, NULL, err);
}

int pfi__oracle_prepare_lib(struct pfi_oracle **out,
                            const struct pfi_problem *p,
                            const struct pfi__hull_lib *h, const size_t *from,
                            struct pfi_error *err) {
  return oracle_new(out, p, h, from, err);
}

/* The branch and bound for one budget on a prepared problem. */
static int solve(struct pfi_oracle *orc, double budget_w, double *power_w,
                 double *total_tokens, struct pfi_oracle_stats *stats,
                 struct pfi_error *err) {
  struct ctx *cp = &orc->c;
  const struct pfi_problem *p = cp->p;
  int rc = 0;
  size_t njobs = p->njobs;
  cp->budget = budget_w;
#define c (*cp)
  struct node *nodes = orc->nodes;
  size_t nodes_cap = orc->nodes_cap;
  size_t *stack = orc->stack, stack_cap = orc->stack_cap;
  struct fill *fillbuf = orc->fillbuf;
  const struct seg **ptrbuf = orc->ptrbuf;
  size_t fillcap = orc->fillcap;
  uint32_t(*pieces)[2] = orc->pieces;
  size_t pieces_cap = orc->pieces_cap;
  size_t nnodes = 0, nstack = 0;
  /* Depth-first branch and bound from the root (no restriction). */
  double best_val = -INFINITY;
  size_t best = SIZE_MAX;
  nodes[0] = (struct node){SIZE_MAX, SIZE_MAX, 0, 0};
  nnodes = 1;
  stack[nstack++] = 0;
  while (nstack > 0) {
    size_t id = stack[--nstack];
    int gr = gather(&c, nodes, id);
    if (gr < 0)
      goto nomem;
    if (gr > 0) {
      if (stats)
        stats->nodes++;
      continue;
    }
    if (c.nns + 1 > fillcap) {
      fillcap = 2 * (c.nns + 1);
      free(fillbuf);
      free(ptrbuf);
      fillbuf = malloc(fillcap * sizeof *fillbuf);
      ptrbuf = malloc(fillcap * sizeof *ptrbuf);
      if (!fillbuf || !ptrbuf)
        goto nomem;
    }
    set_marks(&c, 1);
    struct nres o;
    eval_node(&c, &o, fillbuf, ptrbuf);
    set_marks(&c, 0);
    if (stats) {
      stats->nodes++;
      if (id == 0)
        stats->upper_bound = o.ub;
    }
    if (!o.feasible || o.ub <= best_val + c.tol_val)
      continue;
    if (o.val > best_val) {
      best_val = o.val;
      best = id;
    }
    if (o.gap <= c.tol_val)
      continue;
    /* Branch on the partially filled job's domain. */
    size_t k = o.frac.job;
    const struct restr *r = find_restr(&c, k);
    uint32_t ca = r ? r->a : 0,
             cb = r ? r->b : (uint32_t)(p->off[k + 1] - p->off[k] - 1);
    size_t np = 0, npmax = (size_t)(o.frac.b - o.frac.a) + 2;
    if (npmax > pieces_cap) {
      uint32_t(*pn)[2] = realloc(pieces, npmax * sizeof *pn);
      if (!pn)
        goto nomem;
      pieces = pn;
      pieces_cap = npmax;
    }
    if (o.frac.a > ca) {
      pieces[np][0] = ca;
      pieces[np++][1] = o.frac.a;
    }
    for (uint32_t j = o.frac.a; j < o.frac.b; j++) {
      pieces[np][0] = j;
      pieces[np++][1] = j + 1;
    }
    if (o.frac.b < cb) {
      pieces[np][0] = o.frac.b;
      pieces[np++][1] = cb;
    }
    /* Identical jobs are interchangeable, so some optimum has their powers
     * non-increasing in index order; each child adds what that order
     * implies for the other members of k's group (x >= the piece's start
     * for earlier members, <= its end for later ones). */
    if (!c.groups_ok) {
      if (build_groups(&c) < 0 || build_jobpos(&c) < 0)
        goto nomem;
      c.groups_ok = 1;
    }
    size_t g = c.grp_of[k], g0 = c.grp_start[g], g1 = c.grp_start[g + 1];
    size_t per = 1 + (g1 - g0 - 1);
    if (nnodes + np * per > MAX_NODES) {
      rc = pfi_error_set(err, PFI_ENUMERIC,
                         "oracle: branch and bound exceeded %u nodes",
                         MAX_NODES);
      goto out;
    }
    if (nnodes + np * per > nodes_cap) {
      while (nnodes + np * per > nodes_cap)
        nodes_cap *= 2;
      struct node *nn = realloc(nodes, nodes_cap * sizeof *nn);
      if (!nn)
        goto nomem;
      nodes = nn;
    }
    if (nstack + np > stack_cap) {
      while (nstack + np > stack_cap)
        stack_cap *= 2;
      size_t *ns = realloc(stack, stack_cap * sizeof *ns);
      if (!ns)
        goto nomem;
      stack = ns;
    }
    uint32_t last = (uint32_t)(p->off[k + 1] - p->off[k] - 1);
    for (size_t q = 0; q < np; q++) {
      size_t parent = id;
      nodes[nnodes] = (struct node){parent, k, pieces[q][0], pieces[q][1]};
      parent = nnodes++;
      for (size_t m = g0; m < g1; m++) {
        size_t o2 = c.grp_mem[m];
        if (o2 == k)
          continue;
        if (c.grp_pos[o2] < c.grp_pos[k] && pieces[q][0] > 0)
          nodes[nnodes] = (struct node){parent, o2, pieces[q][0], last};
        else if (c.grp_pos[o2] > c.grp_pos[k] && pieces[q][1] < last)
          nodes[nnodes] = (struct node){parent, o2, 0, pieces[q][1]};
        else
          continue;
        parent = nnodes++;
      }
      stack[nstack++] = parent;
    }
  }
  if (best == SIZE_MAX) {
    /* Cannot happen for a budget within the bounds: the root is feasible. */
    rc = pfi_error_set(err, PFI_ENUMERIC, "oracle found no feasible point");
    goto out;
  }
  if (gather(&c, nodes, best) != 0)
    goto nomem; /* the best node was feasible when evaluated */
  if (c.nns + 1 > fillcap) {
    fillcap = c.nns + 1;
    free(fillbuf);
    free(ptrbuf);
    fillbuf = malloc(fillcap * sizeof *fillbuf);
    ptrbuf = malloc(fillcap * sizeof *ptrbuf);
    if (!fillbuf || !ptrbuf)
      goto nomem;
  }
  {
    set_marks(&c, 1);
    struct nres o;
    eval_node(&c, &o, fillbuf, ptrbuf);
    materialize(&c, &o, power_w);
    set_marks(&c, 0);
  }
  if (total_tokens) {
    double t = 0;
    for (size_t i = 0; i < njobs; i++)
      t += pfi_problem_eval(p, i, power_w[i]);
    *total_tokens = t;
  }
  rc = 0;
  goto out;
nomem:
  rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
out:
  /* The buffers (grown or not) serve the next budget, which starts from a
   * clean scratch state. */
  if (!fillbuf || !ptrbuf)
    fillcap = 0;
  /* A failed allocation can leave a capacity above what is allocated: the
   * prepared oracle is then out of service, as out of memory. */
  if (rc == PFI_ENOMEM)
    orc->rc = pfi_error_set(&orc->err, PFI_ENOMEM, "out of memory");
  orc->nodes = nodes;
  orc->nodes_cap = nodes_cap;
  orc->stack = stack;
  orc->stack_cap = stack_cap;
  orc->fillbuf = fillbuf;
  orc->ptrbuf = ptrbuf;
  orc->fillcap = fillcap;
  orc->pieces = pieces;
  orc->pieces_cap = pieces_cap;
  set_marks(cp, 0);
  cp->nr = 0;
  cp->nns = 0;
  return rc;
#undef c
}

int pfi_oracle_run(struct pfi_oracle *o, double budget_w, double *power_w,
                   double *total_tokens, struct pfi_oracle_stats *stats,
                   struct pfi_error *err) {
  int rc = pfi__check_budget(&o->bounds, budget_w, err);
  if (rc < 0)
    return rc;
  if (stats)
    memset(stats, 0, sizeof *stats);
  if (o->rc < 0) {
    if (err)
      *err = o->err;
    return o->rc;
  }
  return solve(o, budget_w, power_w, total_tokens, stats, err);
}

int pfi_oracle_solve(const struct pfi_problem *p, double budget_w,
                     double *power_w, double *total_tokens,
                     struct pfi_oracle_stats *stats, struct pfi_error *err) {
  int rc = pfi_problem_check_budget(p, budget_w, err);
  if (rc < 0)
    return rc;
  struct pfi_oracle *o;
  if ((rc = pfi_oracle_prepare(&o, p, err)) < 0)
    return rc;
  rc = pfi_oracle_run(o, budget_w, power_w, total_tokens, stats, err);
  pfi_oracle_free(o);
  return rc;
}
