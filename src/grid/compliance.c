/* SPDX-License-Identifier: GPL-3.0-or-later */
/* One event's record against the tier contract. See
 * include/pfi/compliance.h for the definitions. */
#include "pfi/compliance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pfi_compliance_release(struct pfi_compliance *c) {
  if (!c)
    return;
  free(c->job);
  free(c->tenant);
  memset(c, 0, sizeof *c);
}

static int finite_nonneg(double x) { return isfinite(x) && x >= 0; }

int pfi_compliance_compute(const struct pfi_compliance_input *in,
                           struct pfi_compliance *out, struct pfi_error *err) {
  memset(out, 0, sizeof *out);
  if (in->nt == 0 || !(in->dt_s > 0) || !isfinite(in->dt_s))
    return pfi_error_set(err, PFI_EINVAL,
                         "compliance: needs periods and a period length > 0");
  if (!finite_nonneg(in->baseline_w) || !finite_nonneg(in->baseline_meter_w))
    return pfi_error_set(err, PFI_EINVAL,
                         "compliance: baselines must be finite and >= 0");
  double tol = in->tol >= 0 && isfinite(in->tol) ? in->tol : 0;
  for (size_t t = 0; t < in->nt; t++) {
    if (!finite_nonneg(in->target_w[t]) || !finite_nonneg(in->realized_w[t]) ||
        !finite_nonneg(in->meter_w[t]))
      return pfi_error_set(err, PFI_EINVAL,
                           "compliance: period %zu: power not finite and "
                           ">= 0",
                           t);
    out->requested_cut_w += in->baseline_w - in->target_w[t];
    out->realized_cut_w += in->baseline_w - in->realized_w[t];
    out->energy_shed_wh +=
        (in->baseline_meter_w - in->meter_w[t]) * in->dt_s / 3600;
    double over = in->realized_w[t] - in->target_w[t];
    if (t == 0 || over > out->worst_over_w)
      out->worst_over_w = over;
    if (in->realized_w[t] > in->target_w[t] * (1 + tol))
      out->above_target_s += in->dt_s;
  }
  out->requested_cut_w /= (double)in->nt;
  out->realized_cut_w /= (double)in->nt;
  out->job = calloc(in->nj ? in->nj : 1, sizeof *out->job);
  out->tenant = calloc(in->nj ? in->nj : 1, sizeof *out->tenant);
  if (!out->job || !out->tenant) {
    pfi_compliance_release(out);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  out->nj = in->nj;
  for (size_t j = 0; j < in->nj; j++) {
    const struct pfi_contract_job *cj = &in->jobs[j];
    struct pfi_compliance_job *r = &out->job[j];
    const struct pfi_tier *tier = NULL;
    for (size_t k = 0; k < in->ntier; k++)
      if (cj->tier && strcmp(in->tiers[k].name, cj->tier) == 0)
        tier = &in->tiers[k];
    if (!tier || !(cj->baseline_tput > 0) || !isfinite(cj->baseline_tput)) {
      int code =
          pfi_error_set(err, PFI_EINVAL, "compliance: job %s: %s", cj->job,
                        !tier ? "unknown tier" : "baseline <= 0");
      pfi_compliance_release(out);
      return code;
    }
    double s = 0;
    for (size_t t = 0; t < in->nt; t++) {
      double x = in->tput[t * in->nj + j];
      if (!finite_nonneg(x)) {
        int code = pfi_error_set(err, PFI_EINVAL,
                                 "compliance: job %s, period %zu: throughput "
                                 "not finite and >= 0",
                                 cj->job, t);
        pfi_compliance_release(out);
        return code;
      }
      s += x;
    }
    r->mean_tput = s / (double)in->nt;
    r->loss = 1 - r->mean_tput / cj->baseline_tput;
    r->allowance = tier->max_loss;
    size_t w = 0;
    char *why = r->why;
#define WHY(...)                                                               \
  do {                                                                         \
    if (w < sizeof r->why)                                                     \
      w += (size_t)snprintf(why + w, sizeof r->why - w, "%s", w ? "; " : "");  \
    if (w < sizeof r->why)                                                     \
      w += (size_t)snprintf(why + w, sizeof r->why - w, __VA_ARGS__);          \
    r->violation = 1;                                                          \
  } while (0)
    if (r->loss > tier->max_loss + tol)
      WHY("lost %.1f %% of throughput, tier %s allows %.1f %%", 100 * r->loss,
          tier->name, 100 * tier->max_loss);
    double held = in->held_s ? in->held_s[j] : in->event_s;
    if (!(held >= 0) || !isfinite(held)) {
      int code = pfi_error_set(err, PFI_EINVAL,
                               "compliance: job %s: held_s not finite and "
                               ">= 0",
                               cj->job);
      pfi_compliance_release(out);
      return code;
    }
    /* Held times are counted in periods: one shows the job held up to a
     * period before the end of its count, so the longest event is broken
     * when the count exceeds it by more than a period. */
    if (in->held_s ? held - in->dt_s > tier->max_event_s
                   : held > tier->max_event_s) {
      if (in->held_s)
        WHY("held under its caps %.0f s, tier %s allows %.0f s", held,
            tier->name, tier->max_event_s);
      else
        WHY("event of %.0f s, tier %s allows %.0f s", in->event_s, tier->name,
            tier->max_event_s);
    }
    if (in->notice_s < tier->notice_s && held > 0)
      WHY("notice of %.0f s, tier %s needs %.0f s", in->notice_s, tier->name,
          tier->notice_s);
    if (!isnan(cj->deadline_tput) && r->mean_tput < cj->deadline_tput)
      WHY("mean throughput %.6g below the deadline's %.6g", r->mean_tput,
          cj->deadline_tput);
#undef WHY
    out->violations += r->violation;
    /* Tenants, in order of their first job. */
    const char *tn = cj->tenant ? cj->tenant : "";
    size_t k = 0;
    while (k < out->ntenant && strcmp(out->tenant[k].tenant, tn) != 0)
      k++;
    if (k == out->ntenant) {
      snprintf(out->tenant[k].tenant, sizeof out->tenant[k].tenant, "%s", tn);
      out->ntenant++;
    }
    out->tenant[k].jobs++;
    out->tenant[k].baseline_tput += cj->baseline_tput;
    out->tenant[k].mean_tput += r->mean_tput;
    out->tenant[k].violations += r->violation;
  }
  for (size_t k = 0; k < out->ntenant; k++)
    out->tenant[k].loss =
        1 - out->tenant[k].mean_tput / out->tenant[k].baseline_tput;
  return 0;
}
