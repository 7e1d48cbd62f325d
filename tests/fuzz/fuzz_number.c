/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: pfi_parse_double() against the C library's strtod(), the
 * reference its exact fast path must match bit for bit. Aborts on any
 * difference (accepting what strtod cannot convert entirely, rejecting
 * what it can, or a different double). The same for
 * pfi_scan_decimal_prefix(), the scan of the curves rows read in place: a
 * number it takes is strtod's double of the bytes it read, and
 * pfi_scan_decimal_n()'s. And pfi_noise_parse() (--noise P,T): what it
 * takes has a comma and gives finite fractions from 0 to 1, given; what it
 * refuses leaves the noise untouched.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/fmt.h"
#include "pfi/index.h"

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
  const char *pe;
  double pv, nv;
  if (pfi_scan_decimal_prefix(s, &pe, &pv)) {
    char cp[257];
    size_t n = (size_t)(pe - s);
    memcpy(cp, s, n);
    cp[n] = '\0';
    double pref = strtod(cp, NULL);
    if (memcmp(&pv, &pref, sizeof pv) != 0 || !pfi_scan_decimal_n(s, n, &nv) ||
        memcmp(&pv, &nv, sizeof pv) != 0)
      abort();
  }
  struct pfi_noise nz;
  struct pfi_error e;
  memset(&nz, 0xa5, sizeof nz);
  struct pfi_noise before = nz;
  if (pfi_noise_parse(s, &nz, &e) == 0) {
    if (!strchr(s, ',') || nz.source != PFI_NOISE_GIVEN ||
        !(nz.rel_sd_power >= 0 && nz.rel_sd_power <= 1) ||
        !(nz.rel_sd_tokens >= 0 && nz.rel_sd_tokens <= 1) || nz.dof != 0)
      abort();
  } else if (memcmp(&nz, &before, sizeof nz) != 0 || !e.msg[0]) {
    abort();
  }
  return 0;
}
