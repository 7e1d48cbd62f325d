/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the cap plan reader and the GPU list parser; the
 * objective's per-job weights file (a plan's jobs named by it) and the
 * power parser of --budget (objective.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/objective.h"
#include "pfi/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_error err;
  struct pfi_plan p;
  if (pfi_plan_read_mem(&p, "fuzz", (const char *)data, size, &err) == 0)
    pfi_plan_release(&p);
  /* The input as a weights file for jobs a and b. */
  static const char *const jobs[2] = {"a", "b"};
  double w[2];
  (void)pfi_objective_weights_read_mem("fuzz", (const char *)data, size, jobs,
                                       2, w, &err);
  /* The input as one GPU list. */
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  unsigned *ids;
  size_t n;
  if (pfi_plan_parse_gpus(s, &ids, &n, &err) == 0)
    free(ids);
  /* And as a power: accepted values are finite, above 0, at most 1 TW. */
  double watts;
  if (pfi_power_parse(s, &watts, &err) == 0 && !(watts > 0 && watts <= 1e12))
    abort();
  free(s);
  return 0;
}
