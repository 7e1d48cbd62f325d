/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the Prometheus text parser. Besides not crashing, every
 * value it reports valid must be finite and the counts consistent. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_prom_gpu *g = NULL;
  struct pfi_prom_stats st;
  struct pfi_error err;
  int n = pfi_prom_parse("fuzz", (const char *)data, size, &g, &st, &err);
  if (n >= 0) {
    if (st.nbad > PFI_PROM_BAD_MAX || st.malformed < st.nbad ||
        st.mapped + st.unknown != st.samples || (n > 0) != (g != NULL))
      abort();
    for (int i = 0; i < n; i++)
      for (int f = 0; f < PFI_FIELD__COUNT; f++)
        if (pfi_sample_has(&g[i].s, (enum pfi_field)f) &&
            !isfinite(g[i].s.v[f]))
          abort();
    for (int i = 0; i < st.nbad; i++)
      if (st.bad[i].line < 1 || st.bad[i].column < 1)
        abort();
  }
  free(g);
  return 0;
}
