/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the CSV reader, the table loader and the curves reader. */
#include <stddef.h>
#include <stdint.h>

#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_error err;
  struct pfi_table t;
  if (pfi_table_load_mem(&t, "fuzz", (const char *)data, size, &err) == 0)
    pfi_table_release(&t);
  struct pfi_curveset set;
  if (pfi_curveset_read_mem(&set, "fuzz", (const char *)data, size, NULL,
                            &err) == 0) {
    for (size_t i = 0; i < set.n; i++) {
      struct pfi_index ix;
      if (pfi_index_compute(&set.c[i], &ix, &err) == 0)
        pfi_index_release(&ix);
    }
    pfi_curveset_release(&set);
  }
  /* The --map forms: a job from several columns, throughput as K/COLUMN. */
  if (pfi_curveset_read_mem(&set, "fuzz", (const char *)data, size,
                            "job=dataset+network+batch_size,cap_w=power_limit,"
                            "power_w=average_power,tokens_per_s=1/"
                            "time_per_epoch",
                            &err) == 0) {
    for (size_t i = 0; i < set.n; i++) {
      struct pfi_index ix;
      if (pfi_index_compute(&set.c[i], &ix, &err) == 0)
        pfi_index_release(&ix);
    }
    pfi_curveset_release(&set);
  }
  return 0;
}
