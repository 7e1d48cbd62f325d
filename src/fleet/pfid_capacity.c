/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's live flexible capacity (GET /v1/capacity, /metrics): the fleet's
 * jobs as the agents report them, each on the control module's belief of
 * its curve (where it has one) with its PFI estimate's interval (--model),
 * handed to the library's flexcap (pfi_flex_live_event, include/pfi/
 * flexcap.h): in total, for each longest event the tiers (--tiers) allow,
 * and per tier. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/flexcap.h"
#include "pfid_int.h"

int pfid_capacity_open(struct pfi_pfid *d, struct pfi_error *err) {
  int rc = 0;
  if (d->o.tiers_file)
    rc = pfi_tiers_load(d->o.tiers_file, &d->cap_tier, &d->n_cap_tier, err);
  if (rc == 0 && !d->o.model_file != !d->o.features_file)
    return pfi_error_set(err, PFI_EINVAL, "--model and --features go together");
  if (rc == 0 && d->o.model_file)
    rc = pfi_flex_estimates_load(d->o.model_file, d->o.features_file, &d->est,
                                 &d->n_est, err);
  /* A file that cannot be read or used is bad input to pfid (exit 2). */
  if (rc < 0 && rc != PFI_ENOMEM && rc != PFI_EPARSE && rc != PFI_EINVAL) {
    if (err)
      err->code = PFI_EPARSE;
    rc = PFI_EPARSE;
  }
  return rc;
}

void pfid_capacity_close(struct pfi_pfid *d) {
  free(d->cap_tier);
  free(d->est);
  d->cap_tier = NULL;
  d->est = NULL;
  d->n_cap_tier = d->n_est = 0;
}

const struct pfi_flex_estimate *pfid_estimate(const struct pfi_pfid *d,
                                              const char *job) {
  return pfi_flex_estimate_find(d->est, d->n_est, job);
}

/* The longest event of the tier with this max_loss (the first row of the
 * tier file with it), 0 (none) when there is no such tier. */
static double tier_event_s(const struct pfi_pfid *d, double max_loss) {
  for (size_t t = 0; t < d->n_cap_tier; t++)
    if (fabs(d->cap_tier[t].max_loss - max_loss) < 1e-9)
      return d->cap_tier[t].max_event_s;
  return 0;
}

void pfid_job_terms(const struct pfi_pfid *d, const char *job, double loss,
                    double *max_event_s, double *notice_s,
                    double *deadline_tput, const char **source) {
  const struct pfi_fleet_tier *a = NULL;
  for (size_t i = 0; i < d->n_tier && !a; i++)
    if (strcmp(d->tier[i].job, job) == 0)
      a = &d->tier[i];
  const struct pfi_tier *f = NULL;
  for (size_t t = 0; loss >= 0 && t < d->n_cap_tier && !f; t++)
    if (fabs(d->cap_tier[t].max_loss - loss) < 1e-9)
      f = &d->cap_tier[t];
  *max_event_s = *notice_s = *deadline_tput = 0;
  *source = "";
  if (f) {
    *max_event_s = isfinite(f->max_event_s) ? f->max_event_s : 0;
    *notice_s = f->notice_s;
    if (*max_event_s > 0 || *notice_s > 0)
      *source = "file";
  }
  /* The job's own tier file (its node's telemetry: the Slurm prolog). */
  const struct pfi_fleet_job *nj = NULL;
  for (size_t i = 0; i < d->n_nodes && !nj; i++)
    for (unsigned q = 0; q < d->node[i].tel.n_jobs && !nj; q++)
      if (strcmp(d->node[i].tel.job[q].id, job) == 0)
        nj = &d->node[i].tel.job[q];
  if (nj && nj->max_event_s > 0) {
    *max_event_s = nj->max_event_s;
    *source = "node";
  }
  if (nj && nj->notice_s > 0) {
    *notice_s = nj->notice_s;
    *source = "node";
  }
  if (nj && nj->deadline_tput > 0)
    *deadline_tput = nj->deadline_tput;
  if (a && a->max_event_s > 0) {
    *max_event_s = a->max_event_s;
    *source = "api";
  }
  if (a && a->notice_s > 0) {
    *notice_s = a->notice_s;
    *source = "api";
  }
  if (a && a->deadline_tput > 0)
    *deadline_tput = a->deadline_tput;
}

/* The control module's belief of a job's curve. */
struct belief_arg {
  const struct pfi_ctl *ctl;
  int slot;
};
static double believe(const void *arg, double power_w) {
  const struct belief_arg *a = arg;
  return pfi_ctl_job_predict(a->ctl, a->slot, power_w);
}

/* The live nodes' jobs: draw of their GPUs, lowest caps, throughput, tier
 * (the API's, else the node's); the uncapped point is the controller's
 * belief when it has one (it runs on the leader outside events too).
 * Caller frees *out. */
static size_t fleet_jobs(struct pfi_pfid *d, struct pfi_flex_live_job **out,
                         struct belief_arg **args, size_t *believed,
                         size_t *estimated) {
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
        v[n++] = (struct pfi_flex_live_job){fj->id, 0,   -1, 0,    NAN, NAN,
                                            -1,     NAN, 0,  NULL, NULL};
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
  struct belief_arg *ba = calloc(n ? n : 1, sizeof *ba);
  *believed = *estimated = 0;
  for (size_t k = 0; k < n; k++) {
    const struct pfi_flex_estimate *es = pfid_estimate(d, v[k].job);
    if (es && es->pfi > 0) {
      v[k].pfi = es->pfi;
      v[k].pfi_lo = es->lo;
      v[k].pfi_hi = es->hi;
      (*estimated)++;
    }
    if (v[k].max_loss >= 0 && v[k].max_loss < 1)
      v[k].max_event_s = tier_event_s(d, v[k].max_loss);
    struct pfi_ctl_belief b;
    int s = d->ctl ? pfi_ctl_job_find(d->ctl, v[k].job) : -1;
    if (ba && s >= 0 && pfi_ctl_job_belief(d->ctl, s, &b, NULL) == 0 &&
        isfinite(b.pmax_w) && isfinite(b.tmax) && b.pmax_w > 0 && b.tmax > 0) {
      /* Its uncapped point and its curve below it as the controller
       * believes them (the prior, from the estimate or PFI 1.5, until its
       * own settled points replace it). */
      v[k].power_w = b.pmax_w;
      v[k].tput = b.tmax;
      ba[k] = (struct belief_arg){d->ctl, s};
      v[k].believe = believe;
      v[k].believe_arg = &ba[k];
      (*believed)++;
    }
  }
  *args = ba;
  *out = v;
  return n;
}

int pfid_capacity(struct pfi_pfid *d, struct pfid_capacity *c,
                  struct pfi_error *err) {
  memset(c, 0, sizeof *c);
  struct pfi_flex_live_job *v = NULL;
  struct belief_arg *ba = NULL;
  size_t n = fleet_jobs(d, &v, &ba, &c->believed, &c->estimated);
  c->njobs = n;
  int rc = n ? pfi_flex_live(v, n, 200, &c->all, &c->skipped, err)
             : pfi_error_set(err, PFI_EINVAL, "flexible capacity: no jobs");
  /* Longer events: past each tier's longest event its jobs are held;
   * each entry is the quote for the events longer than the one before,
   * up to its own duration_s. */
  double last = c->all.duration_s;
  while (rc == 0 && isfinite(last) && c->ndur < PFID_CAP_DURS) {
    struct pfi_flexcap fc;
    if (pfi_flex_live_event(v, n, nextafter(last, INFINITY), 200, &fc, NULL,
                            NULL) < 0)
      break;
    c->dur[c->ndur++] = fc;
    last = fc.duration_s;
  }
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
      c->tier[t].max_event_s = ml < 1 ? tier_event_s(d, ml) : 0;
      c->ntiers++;
    }
    free(sub);
  }
  free(v);
  free(ba);
  return rc;
}
