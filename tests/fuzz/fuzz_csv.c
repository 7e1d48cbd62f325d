/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the CSV reader, the table loader and the curves reader. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/index.h"

/* One thread and two read the same set or fail with the same error. */
static void same_on_two_threads(const uint8_t *data, size_t size) {
  struct pfi_curveset a, b;
  struct pfi_error ea, eb;
  memset(&ea, 0, sizeof ea);
  memset(&eb, 0, sizeof eb);
  int ra = pfi_curveset_read_mem_threads(&a, "fuzz", (const char *)data, size,
                                         NULL, 1, &ea);
  int rb = pfi_curveset_read_mem_threads(&b, "fuzz", (const char *)data, size,
                                         NULL, 2, &eb);
  if (ra != rb)
    abort();
  if (ra < 0 &&
      (ea.code != eb.code || ea.line != eb.line || ea.column != eb.column ||
       strcmp(ea.msg, eb.msg) != 0 || strcmp(ea.file, eb.file) != 0))
    abort();
  if (ra == 0) {
    if (a.n != b.n)
      abort();
    for (size_t i = 0; i < a.n; i++) {
      const struct pfi_curve *x = &a.c[i], *y = &b.c[i];
      if (strcmp(x->job, y->job) != 0 || x->n != y->n || x->gpus != y->gpus ||
          x->first_line != y->first_line)
        abort();
      for (size_t k = 0; k < x->n; k++)
        if (memcmp(&x->pts[k].cap_w, &y->pts[k].cap_w, 5 * sizeof(double)) ||
            x->pts[k].runs != y->pts[k].runs ||
            x->pts[k].line != y->pts[k].line)
          abort();
    }
    pfi_curveset_release(&a);
    pfi_curveset_release(&b);
  }
}

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
  same_on_two_threads(data, size);
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
