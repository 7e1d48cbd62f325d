/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Notes on standard error shared by the deciding commands (allocate,
 * capacity, simulate, replay): which curves were decided on their
 * monotone fit, and how jobs without a ratio PFI were counted.
 */
#ifndef PFI_CLI_CURVE_NOTE_H
#define PFI_CLI_CURVE_NOTE_H

#include <stdio.h>

#include "pfi/jobset.h"
#include "pfi/monotone.h"

static inline void curve_note(const char *cmd, const struct pfi_curveset *cs,
                              enum pfi_curve_fit fit) {
  size_t k = pfi_curveset_violations(cs);
  if (k == 0)
    return;
  if (fit == PFI_CURVE_MONOTONE)
    fprintf(stderr,
            "pfi %s: %zu of %zu curves fall as the cap rises (noise): decided "
            "on their monotone fit (--curve raw: on the raw points)\n",
            cmd, k, cs->n);
  else
    fprintf(stderr,
            "pfi %s: %zu of %zu curves fall as the cap rises: decided on the "
            "raw points (--curve raw)\n",
            cmd, k, cs->n);
}

static inline void undefined_note(const char *cmd,
                                  const struct pfi_jobset *js) {
  char buf[400];
  size_t k = pfi_jobset_undefined_note(js, buf, sizeof buf);
  if (k)
    fprintf(stderr,
            "pfi %s: %zu job%s without a ratio PFI count as PFI 0, the least "
            "flexible (pfi-aware takes no power from them): %s\n",
            cmd, k, k == 1 ? "" : "s", buf);
}

#endif
