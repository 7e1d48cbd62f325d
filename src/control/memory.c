/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A job's memory carried from one controller to the next (control.h
 * pfi_ctl_job_save, pfi_ctl_job_restore; docs/control.md "Carrying a job's
 * memory"): its learned curve points, its uncapped point when learned, its
 * draw model, and the tokens it delivered in the event in progress.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctl_int.h"

_Static_assert(PFI_CTL_MEMORY_POINTS == PFI__CTL_MAXPTS,
               "a memory holds every learned point");
_Static_assert(PFI_CTL_MEMORY_DRAWS == PFI__CTL_MAXDPTS,
               "a memory holds every draw point");
_Static_assert(sizeof((struct pfi_ctl_memory *)0)->id ==
                   sizeof((struct pfi__ctl_job *)0)->id,
               "a memory holds a job's id");
_Static_assert(sizeof((struct pfi_ctl_memory *)0)->event ==
                   sizeof((struct pfi_ctl *)0)->event,
               "a memory holds an event's id");

int pfi_ctl_job_save(const struct pfi_ctl *c, int slot,
                     struct pfi_ctl_memory *m, struct pfi_error *err) {
  if (slot < 0 || (size_t)slot >= c->nslots || !c->job[slot].used)
    return pfi_error_set(err, PFI_ENOTFOUND, "no job in slot %d", slot);
  const struct pfi__ctl_job *j = &c->job[slot];
  memset(m, 0, sizeof *m);
  snprintf(m->id, sizeof m->id, "%s", j->id);
  m->ngpus = j->ngpus;
  m->max_loss = j->max_loss;
  /* The uncapped point only when the job's own periods made it (a hint is
   * the caller's to give again). */
  if (j->nmax > 0) {
    m->pmax_w = j->pmax;
    m->tmax = j->tmax;
    m->nmax = j->nmax;
  } else {
    m->pmax_w = m->tmax = NAN;
  }
  m->npoints = j->npts;
  for (size_t i = 0; i < j->npts; i++) {
    const struct pfi__ctl_pt *q = &j->pts[i];
    m->point[i].cap_w = q->cap_w;
    m->point[i].power_w = q->power_w;
    m->point[i].tokens = q->tokens;
    m->point[i].n = q->n;
    m->point[i].m2 = q->m2;
  }
  m->draw_ratio = j->ratio;
  m->ndraws = j->ndpts;
  for (size_t i = 0; i < j->ndpts; i++) {
    m->draw[i].cap_w = j->dpts[i].cap_w;
    m->draw[i].draw_w = j->dpts[i].draw_w;
    m->draw[i].n = j->dpts[i].n;
  }
  m->delivered = m->delivered_t0 = m->delivered_tlast = NAN;
  if (c->in_event && isfinite(j->ct_t0) && isfinite(j->ct_tokens)) {
    snprintf(m->event, sizeof m->event, "%s", c->event);
    m->delivered = j->ct_tokens;
    m->delivered_t0 = j->ct_t0;
    m->delivered_tlast = j->ct_tlast;
    m->contract_noted = j->ct_noted;
    m->delivered_own = j->ct_late;
  }
  return 0;
}

static int pos_fin(double v) { return isfinite(v) && v > 0; }

int pfi_ctl_job_restore(struct pfi_ctl *c, int slot,
                        const struct pfi_ctl_memory *m, double t_shift_s,
                        struct pfi_error *err) {
  if (slot < 0 || (size_t)slot >= c->nslots || !c->job[slot].used)
    return pfi_error_set(err, PFI_ENOTFOUND, "no job in slot %d", slot);
  struct pfi__ctl_job *j = &c->job[slot];
  if (memchr(m->id, 0, sizeof m->id) == NULL || strcmp(m->id, j->id) != 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "memory of job %.95s restored into job %s",
                         memchr(m->id, 0, sizeof m->id) ? m->id : "?", j->id);
  if (!isfinite(t_shift_s))
    return pfi_error_set(err, PFI_EINVAL, "job %s: time shift %g", j->id,
                         t_shift_s);
  if (m->npoints > PFI__CTL_MAXPTS || m->ndraws > PFI__CTL_MAXDPTS)
    return pfi_error_set(err, PFI_EINVAL,
                         "job %s: memory of %zu points, %zu draws (at most "
                         "%d, %d)",
                         j->id, m->npoints, m->ndraws, PFI__CTL_MAXPTS,
                         PFI__CTL_MAXDPTS);
  for (size_t i = 0; i < m->npoints; i++)
    if (!pos_fin(m->point[i].cap_w) || !pos_fin(m->point[i].power_w) ||
        !(isfinite(m->point[i].tokens) && m->point[i].tokens >= 0) ||
        !pos_fin(m->point[i].n) ||
        !(isfinite(m->point[i].m2) && m->point[i].m2 >= 0))
      return pfi_error_set(err, PFI_EINVAL, "job %s: memory point %zu", j->id,
                           i);
  for (size_t i = 0; i < m->ndraws; i++)
    if (!pos_fin(m->draw[i].cap_w) || !pos_fin(m->draw[i].draw_w) ||
        !pos_fin(m->draw[i].n))
      return pfi_error_set(err, PFI_EINVAL, "job %s: memory draw %zu", j->id,
                           i);
  if (m->nmax > 0 &&
      (!pos_fin(m->pmax_w) || !pos_fin(m->tmax) || !isfinite(m->nmax)))
    return pfi_error_set(err, PFI_EINVAL, "job %s: memory uncapped point",
                         j->id);
  if (!pos_fin(m->draw_ratio))
    return pfi_error_set(err, PFI_EINVAL, "job %s: memory draw ratio %g", j->id,
                         m->draw_ratio);
  int counted = m->event[0] != 0;
  if (counted &&
      (memchr(m->event, 0, sizeof m->event) == NULL ||
       !(isfinite(m->delivered) && m->delivered >= 0) ||
       !isfinite(m->delivered_t0) || !(m->delivered_tlast >= m->delivered_t0) ||
       !isfinite(m->delivered_tlast)))
    return pfi_error_set(err, PFI_EINVAL, "job %s: memory delivered tokens",
                         j->id);
  /* The rule: the same GPU count and the same tier, else its curve is not
   * the one learned and it starts again. */
  if (m->ngpus != j->ngpus || m->max_loss != j->max_loss)
    return 0;
  if (m->nmax > 0) {
    j->pmax = m->pmax_w;
    j->tmax = m->tmax;
    j->nmax = m->nmax;
  }
  j->npts = m->npoints;
  for (size_t i = 0; i < m->npoints; i++)
    j->pts[i] =
        (struct pfi__ctl_pt){m->point[i].cap_w, m->point[i].power_w,
                             m->point[i].tokens, m->point[i].n, m->point[i].m2};
  j->ratio = m->draw_ratio;
  j->ndpts = m->ndraws;
  for (size_t i = 0; i < m->ndraws; i++)
    j->dpts[i] = (struct pfi__ctl_dpt){m->draw[i].cap_w, m->draw[i].draw_w,
                                       m->draw[i].n};
  for (int k = 0; k < 3; k++) /* the prior's exponent: computed again */
    j->g_pfi[k] = j->g_lo[k] = j->g_hi[k] = j->g_val[k] = NAN;
  j->ct_event[0] = 0;
  if (counted && (!c->in_event || strcmp(c->event, m->event) == 0)) {
    /* Kept when that event starts here (contract.c), or now when it is
     * already in progress. */
    j->ct_tokens = m->delivered;
    j->ct_t0 = m->delivered_t0 + t_shift_s;
    j->ct_tlast = m->delivered_tlast + t_shift_s;
    j->ct_noted = m->contract_noted;
    j->ct_late = m->delivered_own;
    if (!c->in_event)
      snprintf(j->ct_event, sizeof j->ct_event, "%s", m->event);
  }
  return 1;
}
