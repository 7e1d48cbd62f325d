/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: the curves reader with a --map string, the --caps
 * restriction, the noise estimate and the Monte Carlo interval with the
 * default and the estimated noise. The input's first line is the
 * map (empty for none), the rest the curves CSV. The caps kept are the
 * first job's lowest and highest, so that restriction both succeeds and
 * fails (a job lacking them) on generated inputs.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/curve.h"
#include "pfi/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  const char *nl = memchr(s, '\n', size);
  size_t mlen = nl ? (size_t)(nl - s) : size;
  char *map = malloc(mlen + 1);
  if (!map)
    return 0;
  memcpy(map, s, mlen);
  map[mlen] = '\0';
  const char *csv = nl ? nl + 1 : s + size;
  size_t clen = size - (size_t)(csv - s);
  struct pfi_error err;
  struct pfi_curveset set;
  if (pfi_curveset_read_mem(&set, "fuzz", csv, clen, *map ? map : NULL, &err) ==
      0) {
    if (set.n > 0) {
      const struct pfi_curve *c0 = &set.c[0];
      double caps[2] = {c0->pts[0].cap_w, c0->pts[c0->n - 1].cap_w};
      (void)pfi_curveset_restrict(&set, caps, 2, &err);
    }
    struct pfi_noise nz;
    pfi_noise_estimate(&set, &nz);
    if (!isfinite(nz.rel_sd_power) || !(nz.rel_sd_power >= 0) ||
        !isfinite(nz.rel_sd_tokens) || !(nz.rel_sd_tokens >= 0))
      abort();
    for (size_t i = 0; i < set.n; i++) {
      struct pfi_index ix;
      if (pfi_index_compute_noise(&set.c[i], PFI_INDEX_ALL, &nz, &ix, &err) ==
          0) {
        if ((ix.pfi_defined && !isfinite(ix.pfi)) ||
            (ix.pfi_defined != (ix.undefined_why == PFI_UNDEF_NONE)))
          abort();
        pfi_index_release(&ix);
      }
      double nlo, nhi;
      if (pfi_index_ci_noise(&set.c[i], 8, 1, &nz, &nlo, &nhi, &err) > 0 &&
          (!isfinite(nlo) || !isfinite(nhi) || nlo > nhi))
        abort();
      if (pfi_index_compute(&set.c[i], &ix, &err) == 0) {
        /* A computed index is finite, or it is an error: never inf/nan. */
        if ((ix.pfi_defined && !isfinite(ix.pfi)) || !isfinite(ix.pfi_area) ||
            (ix.ce_defined && !isfinite(ix.pfi_ce)))
          abort();
        pfi_index_release(&ix);
      }
      double lo, hi;
      if (pfi_index_ci(&set.c[i], 8, 1, PFI_INDEX_DEFAULT_REL_SD_POWER,
                       PFI_INDEX_DEFAULT_REL_SD_TOKENS, &lo, &hi, &err) > 0 &&
          (!isfinite(lo) || !isfinite(hi) || lo > hi))
        abort();
    }
    pfi_curveset_release(&set);
  }
  free(map);
  return 0;
}
