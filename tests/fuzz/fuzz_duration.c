/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: pfi_parse_duration(). The first byte picks the kind; the
 * rest is the text. Aborts when a value is accepted outside its kind's
 * bounds or is not finite, or when the checker and the parser disagree.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 128)
    return 0;
  enum pfi_duration_kind kind = (enum pfi_duration_kind)(data[0] % 6);
  char s[129];
  memcpy(s, data + 1, size - 1);
  s[size - 1] = '\0';
  double v = -1;
  struct pfi_error err;
  int rc = pfi_parse_duration(s, kind, &v, &err);
  if (kind == PFI_DUR__COUNT) { /* not a kind: always refused */
    if (rc == 0)
      abort();
    return 0;
  }
  if (rc == 0) {
    double lo = pfi_duration_min(kind), hi = pfi_duration_max(kind);
    if (!isfinite(v) || v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9))
      abort();
    if (pfi_duration_check(kind, v, "x", &err) != 0)
      abort();
  } else if (rc != PFI_EINVAL || !err.msg[0]) {
    abort();
  }
  return 0;
}
