/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Notes on standard error shared by the deciding commands (allocate,
 * capacity, simulate, replay): which curves were decided on their
 * monotone fit, and how jobs without a ratio PFI were counted.
 */
#ifndef PFI_CLI_CURVE_NOTE_H
#define PFI_CLI_CURVE_NOTE_H

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pfi/index.h"
#include "pfi/jobset.h"
#include "pfi/monotone.h"

/* --noise P,T of the deciding commands, as pfi index's: the value read
 * (pfi_noise_parse()) and whether it was given. */
struct noise_opt {
  struct pfi_noise nz;
  int given;
};

/* The row's parser (pfi_opt_cb): row o's var is the struct noise_opt. */
static inline int noise_opt_cb(const struct pfi_opt *o, const char *v,
                               char *why, size_t n) {
  struct noise_opt *no = o->var;
  struct pfi_error e;
  if (pfi_noise_parse(v, &no->nz, &e) != 0) {
    const char *m = e.msg; /* the parser's message names the option */
    if (strncmp(m, "--noise: ", 9) == 0)
      m += 9;
    snprintf(why, n, "%s", m);
    return -1;
  }
  no->given = 1;
  return 0;
}

/* The option table's row, bound to `no` (a struct noise_opt *). */
#define NOISE_OPT_BOUND(no)                                                    \
  PFI_OPT_CALLBACK(                                                            \
      "noise", no, noise_opt_cb, "P,T",                                        \
      "relative noise, in %, of points without power_sd_w / tokens_sd, "       \
      "behind each job's own PFI and interval (as pfi index --noise; "         \
      "default: estimated from the file as pfi index does, the paper's "       \
      "0.04,0.05 for emulated data or when nothing gives an estimate)")

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
