/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Exact decimal text of doubles in 128-bit integer arithmetic.
 *
 * A finite double is v = m * 2^e (m < 2^53). For a decimal scale s,
 * v * 10^s = m * 10^s * 2^e is a ratio num / den of integers: num = m *
 * 10^max(s,0) * 2^max(e,0), den = 10^max(-s,0) * 2^max(-e,0). Where both
 * fit in 127 bits the quotient and remainder are exact, so the digits and
 * the rounding (half to even, on the exact value, as glibc's printf does)
 * are exact too. Outside that range snprintf is called instead.
 */
#include "pfi/fmt.h"

#include "scan_decimal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

static const uint64_t p10_64[20] = {1ULL,
                                    10ULL,
                                    100ULL,
                                    1000ULL,
                                    10000ULL,
                                    100000ULL,
                                    1000000ULL,
                                    10000000ULL,
                                    100000000ULL,
                                    1000000000ULL,
                                    10000000000ULL,
                                    100000000000ULL,
                                    1000000000000ULL,
                                    10000000000000ULL,
                                    100000000000000ULL,
                                    1000000000000000ULL,
                                    10000000000000000ULL,
                                    100000000000000000ULL,
                                    1000000000000000000ULL,
                                    10000000000000000000ULL};

static u128 p10_128(int k) {
  u128 r = 1;
  if (k >= 19) {
    r = p10_64[19];
    k -= 19;
  }
  return r * p10_64[k];
}

static int bits128(u128 x) {
  uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
  if (hi)
    return 128 - __builtin_clzll(hi);
  return lo ? 64 - __builtin_clzll(lo) : 0;
}

/*
 * floor(M * 2^e2 * 10^s) into *q (must fit in 64 bits), the remainder and
 * the denominator of the exact fraction into *r, *den. Returns 0, or -1
 * when the numbers do not fit (the caller falls back).
 */
static int scaled(uint64_t M, int e2, int s, uint64_t *q, u128 *r, u128 *den) {
  if (s > 38 || s < -38)
    return -1;
  u128 num = M, d = 1;
  if (s >= 0) {
    u128 p = p10_128(s);
    if (bits128(num) + bits128(p) > 126)
      return -1;
    num *= p;
  } else {
    d = p10_128(-s);
  }
  if (e2 >= 0) {
    if (bits128(num) + e2 > 126)
      return -1;
    num <<= e2;
  } else {
    if (bits128(d) - e2 > 126)
      return -1;
    d <<= -e2;
  }
  u128 qq;
  if (s >= 0) /* d is a power of two */
    qq = num >> (-e2 > 0 ? -e2 : 0);
  else
    qq = num / d;
  if (qq >> 64)
    return -1;
  *q = (uint64_t)qq;
  *r = num - qq * d;
  *den = d;
  return 0;
}

/* m, e of |v| (finite, nonzero): |v| = m * 2^e. */
static void decompose(double v, uint64_t *m, int *e) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  int be = (int)((bits >> 52) & 0x7ff);
  uint64_t frac = bits & ((1ULL << 52) - 1);
  if (be == 0) {
    *m = frac;
    *e = -1074;
  } else {
    *m = frac | (1ULL << 52);
    *e = be - 1075;
  }
}

/* floor(log10(|v|)) or one less, from the binary exponent. */
static int estimate_e10(uint64_t m, int e) {
  int b = e + 63 - __builtin_clzll(m); /* |v| in [2^b, 2^(b+1)) */
  /* floor(b * log10(2)) for |b| < 1650 (78913 / 2^18 ~ log10(2)). */
  return b >= 0 ? (b * 78913) >> 18 : -((-b * 78913 + (1 << 18) - 1) >> 18);
}

static size_t put_exp(char *p, int x) {
  size_t n = 0;
  p[n++] = 'e';
  p[n++] = x < 0 ? '-' : '+';
  unsigned ux = (unsigned)(x < 0 ? -x : x);
  if (ux >= 100) {
    p[n++] = (char)('0' + ux / 100);
    ux %= 100;
  }
  p[n++] = (char)('0' + ux / 10);
  p[n++] = (char)('0' + ux % 10);
  return n;
}

/*
 * The %g layout of the nd-digit integer q (no trailing zeros are assumed;
 * they are stripped here) times 10^(x - nd + 1), for precision prec: fixed
 * notation when -4 <= x < prec, else d.ddde+XX.
 */
static size_t layout(char *buf, int neg, uint64_t q, int nd, int x, int prec) {
  static const char pairs[201] = "00010203040506070809"
                                 "10111213141516171819"
                                 "20212223242526272829"
                                 "30313233343536373839"
                                 "40414243444546474849"
                                 "50515253545556575859"
                                 "60616263646566676869"
                                 "70717273747576777879"
                                 "80818283848586878889"
                                 "90919293949596979899";
  char dig[20];
  int i = nd - 1;
  /* Two digits per division. */
  for (; i >= 1; i -= 2) {
    unsigned d = (unsigned)(q % 100);
    q /= 100;
    dig[i - 1] = pairs[2 * d];
    dig[i] = pairs[2 * d + 1];
  }
  if (i == 0)
    dig[0] = (char)('0' + q % 10);
  while (nd > 1 && dig[nd - 1] == '0')
    nd--;
  size_t n = 0;
  if (neg)
    buf[n++] = '-';
  if (x < -4 || x >= prec) {
    buf[n++] = dig[0];
    if (nd > 1) {
      buf[n++] = '.';
      memcpy(buf + n, dig + 1, (size_t)nd - 1);
      n += (size_t)nd - 1;
    }
    n += put_exp(buf + n, x);
  } else if (x >= 0) {
    int ip = x + 1; /* integer digits */
    for (int i = 0; i < ip; i++)
      buf[n++] = i < nd ? dig[i] : '0';
    if (nd > ip) {
      buf[n++] = '.';
      memcpy(buf + n, dig + ip, (size_t)(nd - ip));
      n += (size_t)(nd - ip);
    }
  } else {
    buf[n++] = '0';
    buf[n++] = '.';
    for (int i = 0; i < -x - 1; i++)
      buf[n++] = '0';
    memcpy(buf + n, dig, (size_t)nd);
    n += (size_t)nd;
  }
  buf[n] = '\0';
  return n;
}

static size_t fallback_g(char *buf, double v, int prec) {
  int n = snprintf(buf, PFI_FMT_MAX, "%.*g", prec, v);
  return n > 0 ? (size_t)n : 0;
}

size_t pfi_fmt_g(char *buf, double v, int prec) {
  if (prec < 1)
    prec = 1;
  if (prec > 17)
    prec = 17;
  if (!isfinite(v))
    return fallback_g(buf, v, prec);
  int neg = signbit(v) != 0;
  if (v == 0) {
    size_t n = 0;
    if (neg)
      buf[n++] = '-';
    buf[n++] = '0';
    buf[n] = '\0';
    return n;
  }
  uint64_t m, q;
  int e;
  u128 r, den;
  decompose(v, &m, &e);
  int x = estimate_e10(m, e);
  for (int tries = 0;; tries++) {
    if (tries > 2 || scaled(m, e, prec - 1 - x, &q, &r, &den) < 0)
      return fallback_g(buf, v, prec);
    if (q >= p10_64[prec])
      x++;
    else if (q < p10_64[prec - 1])
      x--;
    else
      break;
  }
  u128 r2 = r << 1;
  if (r2 > den || (r2 == den && (q & 1)))
    q++;
  if (q == p10_64[prec]) {
    q = p10_64[prec - 1];
    x++;
  }
  return layout(buf, neg, q, prec, x, prec);
}

static int digits10(uint64_t q) {
  int n = 1;
  while (n < 20 && q >= p10_64[n])
    n++;
  return n;
}

static size_t fallback_shortest(char *buf, double v) {
  for (int p = 1; p <= 17; p++) {
    size_t n = pfi_fmt_g(buf, v, p);
    if (strtod(buf, NULL) == v)
      return n;
  }
  return pfi_fmt_g(buf, v, 17);
}

size_t pfi_fmt_shortest(char *buf, double v) {
  if (!isfinite(v))
    return fallback_g(buf, v, 17);
  int neg = signbit(v) != 0;
  if (v == 0)
    return pfi_fmt_g(buf, v, 1);
  uint64_t m;
  int e;
  decompose(v, &m, &e);
  /* The doubles that read back as v are those in (lo, hi), the bounds
   * included when m is even (reading rounds ties to even): hi and lo are
   * halfway to the neighbours, lo nearer when m is the smallest mantissa
   * of its binade (the lower neighbour is half as far). In units of
   * 2^(e-2): v = 4m, hi = 4m + 2, lo = 4m - 2 or 4m - 1. */
  int closer = m == (1ULL << 52) && e > -1074;
  uint64_t V4 = m << 2, H4 = V4 + 2, L4 = V4 - (closer ? 1 : 2);
  int incl = (m & 1) == 0;
  int x = estimate_e10(m, e);
  int s = 0;
  uint64_t vq, hq, lq;
  u128 vr, hr, lr, den;
  /* A scale where v has 17 or 18 digits: enough to hold every candidate. */
  for (int tries = 0;; tries++) {
    s = 16 - x;
    if (tries > 2 || scaled(V4, e - 2, s, &vq, &vr, &den) < 0)
      return fallback_shortest(buf, v);
    if (vq >= p10_64[18])
      x++;
    else if (vq < p10_64[16])
      x--;
    else
      break;
  }
  if (scaled(H4, e - 2, s, &hq, &hr, &den) < 0 ||
      scaled(L4, e - 2, s, &lq, &lr, &den) < 0)
    return fallback_shortest(buf, v);
  /* Smallest and largest allowed integers at this scale. */
  uint64_t lo = lr ? lq + 1 : (incl ? lq : lq + 1);
  uint64_t hi = (hr || incl) ? hq : hq - 1;
  /* The most digits that can be dropped with a multiple of 10^j left in
   * [lo, hi]; then of those multiples the nearest to v. */
  int j = 0;
  while (j < 18) {
    uint64_t p = p10_64[j + 1];
    uint64_t kmin = (lo + p - 1) / p;
    if (kmin * p > hi)
      break;
    j++;
  }
  uint64_t p = p10_64[j];
  uint64_t kmin = (lo + p - 1) / p, kmax = hi / p;
  uint64_t k = vq / p, rem = vq % p;
  /* Round v / 10^j (exact value vq + vr/den) half to even. */
  int up;
  if (j == 0) {
    u128 r2 = vr << 1;
    up = r2 > den || (r2 == den && (k & 1));
  } else {
    uint64_t t = rem * 2; /* rem < 10^18: no overflow */
    up = t > p || (t == p && (vr != 0 || (k & 1)));
  }
  if (up)
    k++;
  if (k < kmin)
    k = kmin;
  if (k > kmax)
    k = kmax;
  int nd = digits10(k);
  /* k * 10^(j - s): its decimal exponent. */
  int x10 = nd - 1 + j - s;
  return layout(buf, neg, k, nd, x10, nd);
}

int pfi_scan_decimal_n(const char *s, size_t len, double *out) {
  static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char *p = s, *end = s + len;
  int neg = p < end && *p == '-';
  p += neg;
  uint64_t m = 0;
  const char *d0 = p;
  while (p < end && (unsigned)(*p - '0') < 10u)
    m = m * 10 + (uint64_t)(*p++ - '0');
  long nd = p - d0, frac = 0;
  if (p < end && *p == '.') {
    const char *f0 = ++p;
    while (p < end && (unsigned)(*p - '0') < 10u)
      m = m * 10 + (uint64_t)(*p++ - '0');
    frac = p - f0;
    nd += frac;
  }
  long ex = 0;
  if (p < end && (*p == 'e' || *p == 'E') && nd > 0) {
    p++;
    int eneg = 0;
    if (p < end && (*p == '-' || *p == '+'))
      eneg = *p++ == '-';
    const char *e0 = p;
    while (p < end && (unsigned)(*p - '0') < 10u && p - e0 < 6)
      ex = ex * 10 + (*p++ - '0');
    if (p == e0)
      return 0;
    if (eneg)
      ex = -ex;
  }
  /* Wrapped significands (more than 19 digits) are never used. */
  if (p != end || nd == 0 || nd > 19 || m > (1ULL << 53))
    return 0;
  long k = ex - frac;
  if (k < -22 || k > 22)
    return 0;
  double v = (double)m;
  if (k < 0)
    v /= p10[-k];
  else if (k > 0)
    v *= p10[k];
  *out = neg ? -v : v;
  return 1;
}

int pfi_scan_decimal_prefix(const char *s, const char **end, double *out) {
  return pfi__scan_decimal_prefix(s, end, out);
}

int pfi_scan_decimal(const char *s, double *out) {
  return pfi_scan_decimal_n(s, strlen(s), out);
}

size_t pfi_fmt_fixed(char *buf, double v, int decimals) {
  if (decimals < 0)
    decimals = 0;
  if (decimals > 9)
    decimals = 9;
  int n = fabs(v) < 1e15 ? snprintf(buf, PFI_FMT_MAX, "%.*f", decimals, v)
                         : snprintf(buf, PFI_FMT_MAX, "%.*g", decimals + 1, v);
  return n < 0 ? 0 : (size_t)n;
}
