/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fast, exact text of doubles, and back.
 *
 * pfi_fmt_g() writes what printf("%.*g", prec, v) writes (C locale, the
 * default round-to-nearest-even mode), byte for byte, without printf's
 * multi-precision arithmetic on the common range of magnitudes: the value is
 * scaled by a power of ten in 128-bit integer arithmetic, exactly, and
 * rounded half to even on its exact binary value, as glibc does. Outside
 * that range (about 1e-12 to 1e38 in magnitude, and for nan/inf) it calls
 * snprintf itself, so the result is always printf's.
 *
 * pfi_fmt_shortest() writes the shortest decimal that reads back (strtod)
 * as the same double, and of those the one nearest to it, in the %g layout:
 * the text printf("%.*g", P, v) gives for the smallest P whose text reads
 * back, except where the double is a power of two whose lower neighbour is
 * nearer, where it may be shorter still. Same exact arithmetic, with a
 * printf-and-strtod search outside its range.
 */
#ifndef PFI_FMT_H
#define PFI_FMT_H

#include <stddef.h>

/* Room for any result, with the terminating NUL. */
#define PFI_FMT_MAX 32

/* printf("%.*g", prec, v) into buf (PFI_FMT_MAX bytes), prec 1..17 (others
 * are clamped into it); returns the length written, NUL not counted. */
size_t pfi_fmt_g(char *buf, double v, int prec);

/*
 * printf("%.*f", decimals, v) while |v| < 1e15 (decimals 0..9, others
 * clamped), and printf("%.*g", decimals + 1, v) beyond: a value near
 * DBL_MAX printed in fixed point is 309 digits that no table column holds.
 * Returns the length written into buf (PFI_FMT_MAX bytes).
 */
size_t pfi_fmt_fixed(char *buf, double v, int decimals);

/* Shortest round-trip text of v into buf (PFI_FMT_MAX bytes); returns the
 * length. "0" and "-0" for zeros; nan and inf as printf writes them. */
size_t pfi_fmt_shortest(char *buf, double v);

/*
 * Reads a plain decimal, [-]DIGITS[.DIGITS][(e|E)[+|-]DIGITS], with at most
 * 19 significant-or-not digits, a significand below 2^53 and a power of
 * ten (exponent minus decimals) within +-22, into *out: then both the
 * significand and the power of ten are exact doubles and one
 * multiplication or division rounds correctly (Clinger 1990), the double
 * strtod() returns. Returns 1, or 0 for any other text (a sign '+',
 * blanks, long numbers, nan, inf, hex...), which the caller reads with the
 * full parser.
 */
int pfi_scan_decimal(const char *s, double *out);

/* The same on the `len` bytes at s (no terminator needed). */
int pfi_scan_decimal_n(const char *s, size_t len, double *out);

/*
 * The plain decimal [-]DIGITS[.DIGITS] that starts s, read up to the first
 * byte that cannot continue it, whose address goes to *end (s must hold
 * such a byte: a NUL, a comma): the double strtod() gives for those bytes
 * into *out, within pfi_scan_decimal()'s limits, and 1. Returns 0 (*out
 * unchanged) when there is no digit, more than 19, a significand above
 * 2^53, more than 22 decimals, or an exponent ('e', 'E') follows: what
 * pfi_scan_decimal_n() or the full parser then reads. The caller checks
 * that the number ends where its field does.
 */
int pfi_scan_decimal_prefix(const char *s, const char **end, double *out);

#endif
