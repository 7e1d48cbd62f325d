/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to libpfi: pfi_scan_decimal_prefix() in line, for the readers
 * that call it for every field. */
#ifndef PFI_BASE_SCAN_DECIMAL_H
#define PFI_BASE_SCAN_DECIMAL_H

#include <stdint.h>

/* pfi_scan_decimal_prefix() (pfi/fmt.h). */
static inline int pfi__scan_decimal_prefix(const char *s, const char **end,
                                           double *out) {
  static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char *p = s;
  int neg = *p == '-';
  p += neg;
  uint64_t m = 0;
  const char *d0 = p;
  unsigned d;
  while ((d = (unsigned)(*p - '0')) < 10u) {
    m = m * 10 + d;
    p++;
  }
  long nd = p - d0, frac = 0;
  if (*p == '.') {
    const char *f0 = ++p;
    while ((d = (unsigned)(*p - '0')) < 10u) {
      m = m * 10 + d;
      p++;
    }
    frac = p - f0;
    nd += frac;
  }
  *end = p;
  /* The limits of pfi_scan_decimal_n(), where m has not wrapped and both
   * m and 10^frac are exact; an exponent is left to it. */
  if (nd == 0 || nd > 19 || m > (1ULL << 53) || frac > 22 || *p == 'e' ||
      *p == 'E')
    return 0;
  double v = (double)m;
  if (frac)
    v /= p10[frac];
  *out = neg ? -v : v;
  return 1;
}

#endif
