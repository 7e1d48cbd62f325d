/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the device layer's parameter parsers (nvml and fault open
 * parameters, GPU lists). Pure parsers: nothing is loaded or opened. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/device/params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  struct pfi_error err;
  char path[512];
  double win = 0.1;
  if (pfi__nvml_parse_params(s, path, sizeof path, &win, &err) == 0) {
    if (strlen(path) >= sizeof path || !(win >= 0.0 && win <= 3600.0))
      abort();
  }
  struct pfi__fault_conf cf;
  if (pfi__fault_parse_params(s, &cf, &err) == 0) {
    if (cf.inner_params && (cf.inner_params < s || cf.inner_params > s + size))
      abort();
  }
  static const unsigned counts[] = {1, 8, 64};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    unsigned *v = NULL;
    size_t n = 0;
    if (pfi__parse_gpu_list(s, counts[k], &v, &n, &err) == 0) {
      /* Distinct and in range, as documented. */
      unsigned char seen[64] = {0};
      if (n == 0 || n > counts[k])
        abort();
      for (size_t i = 0; i < n; i++) {
        if (v[i] >= counts[k] || seen[v[i]])
          abort();
        seen[v[i]] = 1;
      }
    }
    free(v);
  }
  free(s);
  return 0;
}
