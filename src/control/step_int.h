/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Shared by the control period (step.c) and the recovery (recovery.c):
 * a job's state in a period, the cap setter that records decisions.
 * Private to the library.
 */
#ifndef PFI_CONTROL_STEP_INT_H
#define PFI_CONTROL_STEP_INT_H

#include <stdint.h>

#include "ctl_int.h"

/* A paused job's resumption is provided for from this many seconds before
 * the end of its shortest pause seen. */
#define PAUSE_LEAD_S 5.0

/* The job's contribution to cluster power and whether the allocation may
 * move it this period. */
struct jstate {
  double model; /* modelled draw at its current caps, W */
  double jump;  /* rise if it resumed full draw now, W */
  int movable;  /* 1: in the allocation */
  int paused;   /* 1: starting, evaluation or checkpoint: its caps may be
                   lowered to bound its resumption */
  int soon;     /* 1: its jump can come this period (held in reserve) */
  int foreseen; /* 1: training, a pause of its schedule due next period */
  int falls;    /* 1: paused, its draw expected to fall further by itself */
  double next;  /* draw counted for the next period, W (model, but for a
                   foreseen pause the draw expected in it) */
  double lo_t, lo_hw, hi; /* floor with and without its tier, ceiling, W */
  int term;               /* the contract term raising lo_t, or -1 */
};

/* Classifies job j for the period ending at t_s (step.c). */
void pfi__ctl_classify(const struct pfi_ctl *c, const struct pfi__ctl_job *j,
                       double t_s, struct jstate *s);
/* Sets job j's requested cap, recording the decision when it moves
 * (step.c). Returns 0 or a negative PFI error. */
int pfi__ctl_set_job_cap(struct pfi_ctl *c, struct pfi__ctl_job *j,
                         const struct pfi_ctl_input *in, double cap,
                         int reason, double shortfall);
/* The recovery's period and its start (recovery.c). */
int pfi__ctl_recover(struct pfi_ctl *c, const struct pfi_ctl_input *in,
                     double realized, struct pfi_error *err);
int pfi__ctl_start_recovery(struct pfi_ctl *c);

/* splitmix64's finalizer: the recovery order's stream. */
static inline uint64_t pfi__ctl_mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#endif
