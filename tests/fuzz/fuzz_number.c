/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: pfi_parse_double() against the C library's strtod(), the
 * reference its exact fast path must match bit for bit. Aborts on any
 * difference (accepting what strtod cannot convert entirely, rejecting
 * what it can, or a different double).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256)
    return 0;
  char s[257];
  memcpy(s, data, size);
  s[size] = '\0';
  /* The CSV layer hands over fields without embedded NULs. */
  if (strlen(s) != size)
    return 0;
  char *end;
  double ref = strtod(s, &end);
  int none = end == s;
  while (*end == ' ' || *end == '\t')
    end++;
  double v;
  int rc = pfi_parse_double(s, &v);
  int want_ok = !none && !*end && isfinite(ref);
  if ((rc == 0) != want_ok)
    abort();
  if (rc == 0 && memcmp(&v, &ref, sizeof v) != 0)
    abort();
  return 0;
}
