/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The flexible-tier contract and the record of one event against it.
 *
 * A tier (as Emerald AI's Flex 0/10/25/50 %) bounds what an event may take
 * from a job: the largest throughput loss over the event, the longest
 * event, the least notice. A job may also carry a deadline: a minimum mean
 * throughput over the event. After an event, pfi_compliance_compute()
 * writes, per job and per tenant, the requested and realized cut, energy
 * shed at the meter, throughput lost against the tier's allowance, and
 * every violation with its reason (docs/grid.md).
 *
 * Definitions (all over the event's periods t = 0..nt-1 of dt_s seconds):
 *   requested cut   = mean_t (baseline_w - target_w[t])
 *   realized cut    = mean_t (baseline_w - realized_w[t])
 *   energy shed     = sum_t (baseline_meter_w - meter_w[t]) dt_s / 3600, Wh
 *   above target    = dt_s x #{t : realized_w[t] > target_w[t] (1 + tol)}
 *   job loss        = 1 - mean_t tput[t][j] / baseline_tput[j]
 *   tenant loss     = 1 - sum_j mean_t tput[t][j] / sum_j baseline_tput[j]
 *                     over the tenant's jobs (throughput-weighted)
 *   violation       loss > allowance + tol, or the job held under its caps
 *                   longer than the tier's longest event (held_s, counted
 *                   in periods: by more than one period dt_s; without it
 *                   the event's length), or held at all with notice
 *                   shorter than the tier's, or mean throughput below the
 *                   job's deadline minimum.
 */
#ifndef PFI_COMPLIANCE_H
#define PFI_COMPLIANCE_H

#include <stddef.h>

#include "pfi/error.h"

#define PFI_NAME_MAX 64

struct pfi_tier {
  char name[PFI_NAME_MAX];
  double max_loss;    /* largest throughput loss per event, fraction */
  double max_event_s; /* longest event, s (INFINITY: no bound) */
  double notice_s;    /* least notice, s (0: none) */
};

struct pfi_contract_job {
  const char *job, *tenant, *tier; /* tier names one of the tiers */
  double baseline_tput;            /* uncapped throughput, > 0 */
  double deadline_tput;            /* minimum mean throughput; NAN: none */
};

struct pfi_compliance_input {
  size_t nt;
  double dt_s;
  const double *target_w;   /* nt, the limit at the accounting level */
  const double *realized_w; /* nt, realized power at that level */
  const double *meter_w;    /* nt, power at the meter (may equal realized) */
  double baseline_w, baseline_meter_w;
  size_t nj;
  const struct pfi_contract_job *jobs;
  const double *tput; /* nt * nj, row t holds every job's throughput */
  size_t ntier;
  const struct pfi_tier *tiers;
  double event_s, notice_s; /* the event's length and the notice given */
  double tol;               /* noise tolerance, fraction (e.g. 0.005) */
  /* nj (may be NULL): how long each job was held under its caps from the
   * event's start, s: the controller keeps the contract live (docs/
   * control.md "Contract"), so a job released at its tier's longest event
   * is held that long, one its tier's notice exempted 0, counted in
   * periods (a job held in k of them: k dt_s, released within the last).
   * The longest event and the notice are judged on it, the first broken
   * when held_s - dt_s exceeds it; NULL: every job held for the whole
   * event (event_s). */
  const double *held_s;
};

struct pfi_compliance_job {
  double mean_tput, loss, allowance;
  int violation;
  char why[192]; /* empty when compliant */
};

struct pfi_compliance_tenant {
  char tenant[PFI_NAME_MAX];
  size_t jobs;
  double baseline_tput, mean_tput, loss;
  int violations;
};

struct pfi_compliance {
  double requested_cut_w, realized_cut_w, energy_shed_wh, above_target_s;
  double worst_over_w; /* largest realized - target, W (<= 0: never over) */
  size_t nj, ntenant;
  struct pfi_compliance_job *job;       /* nj; owned */
  struct pfi_compliance_tenant *tenant; /* ntenant, in order of first job */
  int violations;
};

/* Computes the record. PFI_EINVAL naming the job or period for a job with
 * an unknown tier, a baseline <= 0, a non-finite or negative sample. Free
 * with pfi_compliance_release(). */
int pfi_compliance_compute(const struct pfi_compliance_input *in,
                           struct pfi_compliance *out, struct pfi_error *err);
void pfi_compliance_release(struct pfi_compliance *c);

#endif
