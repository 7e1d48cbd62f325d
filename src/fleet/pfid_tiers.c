/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid: the tiers set through the API (the bucket's "tier." keys) and a
 * job's tier: the API's, else the one its node reports. */
#include "pfi/transport.h"
#include "pfid_int.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- tiers set through the API ------------------------------------------ */

static int tier_cmp(const void *a, const void *b) {
  return strcmp(((const struct pfi_fleet_tier *)a)->job,
                ((const struct pfi_fleet_tier *)b)->job);
}

/* keys: the bucket's keys; those that start with "tier." are read. */
void pfid_load_tiers(struct pfi_pfid *d, char **keys, size_t nk) {
  struct pfi_error e;
  struct pfi_fleet_tier *t = calloc(PFID_MAX_TIERS, sizeof *t);
  size_t n = 0;
  for (size_t i = 0; t && i < nk && n < PFID_MAX_TIERS; i++) {
    if (strncmp(keys[i], "tier.", 5) != 0)
      continue;
    char *val = NULL;
    size_t len = 0;
    if (pfi_nats_kv_get(d->nc, keys[i], &val, &len, NULL, &e) == 1 &&
        pfi_fleet_tier_decode(val, len, &t[n], NULL) == 0 &&
        strcmp(keys[i] + 5, t[n].job) == 0)
      n++;
    free(val);
  }
  if (!t)
    return;
  qsort(t, n, sizeof *t, tier_cmp);
  pthread_mutex_lock(&d->mu);
  memcpy(d->tier, t, n * sizeof *t);
  d->n_tier = n;
  pthread_mutex_unlock(&d->mu);
  free(t);
}

double pfid_api_tier(const struct pfi_pfid *d, const char *job) {
  struct pfi_fleet_tier key;
  snprintf(key.job, sizeof key.job, "%s", job);
  const struct pfi_fleet_tier *t =
      bsearch(&key, d->tier, d->n_tier, sizeof *t, tier_cmp);
  return t ? t->max_loss : -1;
}

double pfid_job_tier(struct pfi_pfid *d, const char *job,
                     const struct pfid_node *hint, const char **source) {
  double loss = pfid_api_tier(d, job);
  if (loss >= 0) {
    *source = "api";
    return loss;
  }
  for (size_t i = 0; i < d->n_nodes; i++) {
    const struct pfid_node *n = hint ? hint : &d->node[i];
    for (unsigned q = 0; q < n->tel.n_jobs; q++)
      if (strcmp(n->tel.job[q].id, job) == 0 && n->tel.job[q].max_loss >= 0) {
        *source = "node";
        return n->tel.job[q].max_loss;
      }
    if (hint)
      break;
  }
  *source = "";
  return -1;
}
