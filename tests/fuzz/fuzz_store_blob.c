/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: the decoder of the trace store's samples rows (schema 2,
 * store.h), which reads bytes from a file anyone may have edited. Aborts
 * when it reads past the row, makes no progress, accepts an entry that
 * breaks the format (GPUs not ascending, unknown field bits, a value not
 * finite), or accepts one that pfi_store_blob_put does not write back to
 * the same bytes.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t off = 0;
  int64_t prev = -1;
  struct pfi_store_sample smp;
  const char *why = NULL;
  unsigned char again[8 + 8 * PFI_FIELD__COUNT];
  int r;
  while ((r = pfi_store_blob_next(data, size, &off, prev, &smp, &why)) == 1) {
    size_t n = pfi_store_blob_entry_size(smp.valid);
    if (n > sizeof again || off < n || off > size)
      abort();
    if ((int64_t)smp.gpu <= prev || smp.valid >> PFI_FIELD__COUNT)
      abort();
    for (int f = 0; f < PFI_FIELD__COUNT; f++)
      if (((smp.valid >> f) & 1u) ? !isfinite(smp.v[f]) : !isnan(smp.v[f]))
        abort();
    if (pfi_store_blob_put(again, smp.gpu, smp.valid, smp.v) != n ||
        memcmp(again, data + off - n, n) != 0)
      abort();
    prev = smp.gpu;
  }
  if (r < 0 && (!why || off > size))
    abort();
  if (r == 0 && off != size)
    abort();
  return 0;
}
