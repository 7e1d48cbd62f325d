/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: allocation problems decoded from bytes (up to 8 jobs of up
 * to 8 points, any shape), solved by the oracle and every strategy. Aborts
 * when a result leaves a job's range, misses the budget, or when a strategy
 * beats the oracle: the invariants docs/predict-allocate.md states.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/alloc.h"
#include "pfi/oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t pos = 0;
#define BYTE() (pos < size ? data[pos++] : 0)
  struct pfi_problem p;
  pfi_problem_init(&p);
  struct pfi_error err;
  size_t njobs = 1 + BYTE() % 8;
  double pfi[8], dram[8];
  int moe[8];
  for (size_t i = 0; i < njobs; i++) {
    size_t m = 1 + BYTE() % 8;
    double x[8], y[8];
    double at = 1 + BYTE();
    for (size_t j = 0; j < m; j++) {
      x[j] = at;
      at += 1 + BYTE();
      y[j] = (double)BYTE() - 32;
    }
    pfi[i] = BYTE() / 50.0;
    dram[i] = BYTE() / 255.0;
    moe[i] = BYTE() & 1;
    if (pfi_problem_add(&p, x, y, m, x[0], x[m - 1], &err) != 0)
      abort();
  }
  double lo, hi;
  pfi_problem_bounds(&p, &lo, &hi);
  double B = lo + (hi - lo) * (BYTE() / 255.0);
  double pw[8], best;
  if (pfi_oracle_solve(&p, B, pw, &best, NULL, &err) != 0) {
    if (err.code != PFI_ENUMERIC)
      abort();
    pfi_problem_release(&p);
    return 0;
  }
  struct pfi_alloc_inputs in = {pfi, dram, moe};
  for (int s = 0; s < PFI_STRAT__COUNT; s++) {
    if (pfi_alloc_run(&p, (enum pfi_strategy)s, B, &in, pw, &err) != 0)
      abort();
    double sum = 0;
    for (size_t i = 0; i < njobs; i++) {
      if (pw[i] < pfi_problem_lo(&p, i) - 1e-9 * hi ||
          pw[i] > pfi_problem_hi(&p, i) + 1e-9 * hi)
        abort();
      sum += pw[i];
    }
    if (fabs(sum - B) > 1e-9 * (hi + 1))
      abort();
    if (pfi_alloc_total_tokens(&p, pw) > best + 1e-9 * (fabs(best) + 300))
      abort();
  }
  /* Out-of-range budgets are refused, never solved. */
  if (pfi_oracle_solve(&p, lo - 1 - 1e-6 * hi, pw, &best, NULL, &err) !=
      PFI_EINFEASIBLE)
    abort();
  pfi_problem_release(&p);
  return 0;
}
