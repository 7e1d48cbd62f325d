/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The replay gate: after a driver, training-stack, hardware or policy
 * change, compares a new sweep of a job with its reference sweep and says
 * whether the change is beyond noise and beyond tolerance
 * (docs/gate.md states the statistics).
 *
 *  PFI      the ratio PFI of each sweep (index.h, noise rule included) and
 *           the difference new - ref with a 95 % interval: the 2.5 and 97.5
 *           percentiles of d_k = new_k - ref_k over Monte Carlo draws k of
 *           both curves (pfi_index_draws(), the two curves drawn
 *           independently, seeds `seed` and `seed + 1`). The change is
 *           beyond noise when that interval excludes 0. It fails the gate
 *           when beyond noise and |new - ref| > pfi_tol * |ref|.
 *  throughput  at every cap both sweeps measured (matched within 1e-9
 *           relative), the relative change T_new/T_ref - 1; the largest
 *           drop (most negative change) is reported with its cap. A drop is
 *           beyond noise when it exceeds z times its standard error
 *           sqrt(r_ref^2 + r_new^2) (r each point's relative standard
 *           error: tokens_sd, or the default 0.05 %), z = 2. It fails the
 *           gate when beyond noise and larger than tput_tol.
 *  per watt throughput per watt at each sweep's uncapped point, and its
 *           relative change (reported; not part of the verdict).
 *
 * A job passes when neither check fails. A PFI that is undefined in either
 * sweep cannot be compared (reported so; the verdict rests on throughput);
 * a job with neither a comparable PFI nor a common cap fails (nothing
 * could be checked).
 */
#ifndef PFI_GATE_H
#define PFI_GATE_H

#include <stddef.h>

#include "pfi/curve.h"
#include "pfi/error.h"
#include "pfi/index.h"

struct pfi_gate_opts {
  double pfi_tol;  /* relative PFI change allowed (default 0.10) */
  double tput_tol; /* throughput drop allowed at a common cap (0.02) */
  size_t draws;    /* Monte Carlo draws (default 2000) */
  unsigned long seed;
  /* The noise of each sweep's points without sd columns (index.h,
   * pfi_noise_estimate()); NULL: the paper's default. It drives the PFI
   * rule, the draws and the throughput check's standard errors. */
  const struct pfi_noise *ref_noise, *new_noise;
};

void pfi_gate_opts_init(struct pfi_gate_opts *o);

enum pfi_gate_verdict { PFI_GATE_PASS = 0, PFI_GATE_FAIL = 1 };

struct pfi_gate_job {
  int ref_ok, new_ok; /* ratio PFI defined */
  double pfi_ref, ref_lo, ref_hi;
  double pfi_new, new_lo, new_hi; /* 95 % intervals (equal the estimate
                                     when no draw was finite) */
  int diff_ok; /* both defined and the difference has an interval */
  double diff, diff_lo, diff_hi;
  int pfi_beyond_noise, pfi_fail;
  size_t ncommon;      /* caps both sweeps measured */
  double worst_cap_w;  /* cap of the largest drop (or smallest rise) */
  double worst_change; /* T_new/T_ref - 1 there */
  double worst_sigma;  /* its standard error */
  int tput_beyond_noise, tput_fail;
  double tpw_ref, tpw_new, tpw_change; /* throughput per watt, uncapped */
  enum pfi_gate_verdict verdict;
  size_t ref_points, new_points; /* capped points behind each ratio PFI */
  int ref_undef, new_undef;      /* enum pfi_index_undefined of each */
  double tput_z; /* the throughput check's z: PFI_GATE_ALPHA_TPUT split
                    over the common caps (one-sided, Bonferroni) */
};

/* The false-alarm level of each check: the PFI interval is 95 % (two-sided
 * 5 %), and the throughput check's level is split over the common caps. */
#define PFI_GATE_ALPHA_TPUT 0.025

/*
 * Compares `new_c` with `ref` by `o` (NULL: defaults) into `out`. Returns
 * 0, PFI_EINVAL (a curve with fewer than 2 points, a tolerance that is
 * negative or not finite, 0 draws) or PFI_ENOMEM.
 */
int pfi_gate_compare(const struct pfi_curve *ref, const struct pfi_curve *new_c,
                     const struct pfi_gate_opts *o, struct pfi_gate_job *out,
                     struct pfi_error *err);

#endif
