/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the model JSON reader, and prediction with what it read. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_error err;
  struct pfi_model m;
  if (pfi_model_load_mem(&m, "fuzz", (const char *)data, size, &err) != 0)
    return 0;
  double *row = calloc(m.k + 1, sizeof *row);
  if (row) {
    (void)pfi_model_predict(&m, row);
    free(row);
  }
  pfi_model_release(&m);
  return 0;
}
