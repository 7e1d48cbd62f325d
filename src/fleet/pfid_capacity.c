/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's live flexible capacity (GET /v1/capacity, /metrics): the fleet's
 * jobs as the agents report them, handed to the library's flexcap
 * (pfi_flex_live, include/pfi/flexcap.h), in total and per tier. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/flexcap.h"
#include "pfid_int.h"

/* The live nodes' jobs: draw of their GPUs, lowest caps, throughput, tier
 * (the API's, else the node's); the uncapped point is the controller's
 * belief when it has one (it runs on the leader outside events too).
 * Caller frees *out. */
static size_t fleet_jobs(struct pfi_pfid *d, struct pfi_flex_live_job **out) {
  size_t cap = 0, n = 0;
  struct pfi_flex_live_job *v = NULL;
  for (size_t i = 0; i < d->n_nodes; i++) {
    const struct pfid_node *nd = &d->node[i];
    if (!nd->have_tel || nd->stale)
      continue;
    for (unsigned q = 0; q < nd->tel.n_jobs; q++) {
      const struct pfi_fleet_job *fj = &nd->tel.job[q];
      size_t k = 0;
      while (k < n && strcmp(v[k].job, fj->id) != 0)
        k++;
      if (k == n) {
        if (n == cap) {
          size_t nc = cap ? 2 * cap : 16;
          struct pfi_flex_live_job *a = realloc(v, nc * sizeof *a);
          if (!a)
            break;
          v = a;
          cap = nc;
        }
        v[n++] = (struct pfi_flex_live_job){fj->id, 0, -1, 0, NAN, NAN, -1};
      }
      /* A job on several nodes: each reports the whole job's throughput. */
      if (fj->tokens_per_s > v[k].tput)
        v[k].tput = fj->tokens_per_s;
      if (fj->max_loss >= 0)
        v[k].max_loss = fj->max_loss;
      for (unsigned g = 0; g < nd->tel.n; g++)
        if (strcmp(nd->tel.gpu[g].job, fj->id) == 0) {
          if (nd->tel.gpu[g].power_w >= 0)
            v[k].power_w += nd->tel.gpu[g].power_w;
          v[k].min_w += nd->tel.gpu[g].min_mw / 1000.0;
        }
    }
  }
  /* A tier set through the API (/v1/tiers) wins over the node's. */
  for (size_t k = 0; k < n; k++) {
    double l = pfid_api_tier(d, v[k].job);
    if (l >= 0)
      v[k].max_loss = l;
  }
  for (size_t k = 0; d->ctl && k < n; k++) {
    struct pfi_ctl_belief b;
    int s = pfi_ctl_job_find(d->ctl, v[k].job);
    if (s >= 0 && pfi_ctl_job_belief(d->ctl, s, &b, NULL) == 0 &&
        isfinite(b.pmax_w) && isfinite(b.tmax) && b.pmax_w > 0) {
      v[k].power_w = b.pmax_w;
      v[k].tput = b.tmax;
    }
  }
  *out = v;
  return n;
}

int pfid_capacity(struct pfi_pfid *d, struct pfid_capacity *c,
                  struct pfi_error *err) {
  memset(c, 0, sizeof *c);
  struct pfi_flex_live_job *v = NULL;
  size_t n = fleet_jobs(d, &v);
  c->njobs = n;
  int rc = n ? pfi_flex_live(v, n, 200, &c->all, &c->skipped, err)
             : pfi_error_set(err, PFI_EINVAL, "flexible capacity: no jobs");
  /* Per tier: the jobs of one max_loss alone. */
  for (size_t k = 0; rc == 0 && k < n; k++) {
    double ml = v[k].max_loss >= 0 && v[k].max_loss < 1 ? v[k].max_loss : 1;
    size_t t = 0;
    while (t < c->ntiers && c->tier[t].max_loss != ml)
      t++;
    if (t < c->ntiers || c->ntiers == PFID_CAP_TIERS)
      continue;
    struct pfi_flex_live_job *sub = malloc(n * sizeof *sub);
    size_t m = 0;
    for (size_t i = 0; sub && i < n; i++) {
      double mi = v[i].max_loss >= 0 && v[i].max_loss < 1 ? v[i].max_loss : 1;
      if (mi == ml)
        sub[m++] = v[i];
    }
    struct pfi_flexcap fc;
    size_t skip = 0;
    if (sub && pfi_flex_live(sub, m, 200, &fc, &skip, NULL) == 0) {
      c->tier[t].max_loss = ml;
      c->tier[t].jobs = m - skip;
      c->tier[t].uncapped_w = fc.uncapped_w;
      c->tier[t].floor_w = fc.floor_w;
      c->ntiers++;
    }
    free(sub);
  }
  free(v);
  return rc;
}
