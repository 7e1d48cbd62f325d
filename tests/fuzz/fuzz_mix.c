/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: mix files (pfi simulate --mix FILE.csv) against a fixed
 * library of pretraining and fine-tuning jobs. Aborts when accepted
 * weights are negative or not finite. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int ft[] = {0, 0, 0, 1, 1, 1, 1};
  static const int gpus[] = {8, 16, 32, 8, 8, 16, 2};
  double w[7];
  size_t fb;
  struct pfi_error err;
  if (pfi_mix_weights_mem("fuzz", (const char *)data, size, ft, gpus, 7, w, &fb,
                          &err) == 0)
    for (int i = 0; i < 7; i++)
      if (!(w[i] >= 0) || !isfinite(w[i]))
        abort();
  return 0;
}
