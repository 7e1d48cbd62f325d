/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to libpfi: a problem's bounds kept for many budget checks. */
#ifndef PFI_PROBLEM_INT_H
#define PFI_PROBLEM_INT_H

#include "pfi/oracle.h"

struct pfi_bounds {
  double lo, hi; /* pfi_problem_bounds() */
  double tol;    /* the budget's tolerance: 1e-9 (sum |hi_i| + 1) */
};

void pfi__bounds(const struct pfi_problem *p, struct pfi_bounds *b);

/* pfi_problem_check_budget() on bounds computed once. */
int pfi__check_budget(const struct pfi_bounds *b, double budget_w,
                      struct pfi_error *err);

#endif
