/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "alloc_plan.h"

#include <stdlib.h>
#include <string.h>

#include "pfi/monotone.h"
#include "pfi/plan.h"

int alloc_write_plan(const struct pfi_jobset *d, const struct pfi_problem *p,
                     const double *pw, const char *strategy,
                     const char *objective, double cut,
                     const char *path, const char *gpu_map,
                     struct pfi_error *err) {
  struct pfi_plan plan;
  pfi_plan_init(&plan);
  int rc = 0;
  plan.cut = cut;
  plan.strategy = strdup(strategy);
  plan.objective = strdup(objective);
  plan.unit = strdup(d->cs.unit ? d->cs.unit : "tokens/s");
  if (!plan.strategy || !plan.objective || !plan.unit) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < d->cs.n && rc == 0; i++) {
    struct pfi_plan_job j;
    memset(&j, 0, sizeof j);
    j.job = d->cs.c[i].job;
    struct pfi_error ge;
    int g = 0;
    if (pfi_jobset_gpus(d, i, &g, &ge) == 0)
      j.gpus = g;
    j.cap_w = pfi_curve_fit_cap_at(&d->cs.c[i],
                                   (enum pfi_curve_fit)d->curve_fit, pw[i]);
    j.power_w = pw[i];
    j.tokens = pfi_problem_eval(p, i, pw[i]);
    j.uncapped_power_w = pfi_problem_hi(p, i);
    j.uncapped_tokens = pfi_problem_eval(p, i, j.uncapped_power_w);
    j.retained = j.tokens / j.uncapped_tokens;
    rc = pfi_plan_add(&plan, &j, err);
  }
  if (rc == 0 && gpu_map)
    rc = pfi_plan_assign_gpus(&plan, gpu_map, err);
  if (rc == 0)
    rc = pfi_plan_write(&plan, path, err);
out:
  pfi_plan_release(&plan);
  return rc;
}
