/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * An inlined merge sort for arrays of small structs (internal to libpfi).
 * PFI_MSORT(name, T, LESS, CMP) defines
 *   static void name(T *a, size_t n);
 * sorting by LESS(x, y) (pointers to T), insertion sort on short runs, then
 * bottom-up merges through a temporary array; where that array cannot be
 * allocated it calls qsort with CMP. The callers' orders are strict and
 * total (ties broken by an index), so every correct sort, this one and
 * qsort alike, gives the same array: it is faster than qsort for the
 * comparison is inlined, not different.
 */
#ifndef PFI_MSORT_H
#define PFI_MSORT_H

#include <stdlib.h>
#include <string.h>

#define PFI_MSORT(name, T, LESS, CMP)                                          \
  static void name(T *a, size_t n) {                                           \
    const size_t run = 16;                                                     \
    for (size_t s = 0; s < n; s += run) {                                      \
      size_t e = s + run < n ? s + run : n;                                    \
      for (size_t i = s + 1; i < e; i++) {                                     \
        T v = a[i];                                                            \
        size_t k = i;                                                          \
        while (k > s && LESS(&v, &a[k - 1])) {                                 \
          a[k] = a[k - 1];                                                     \
          k--;                                                                 \
        }                                                                      \
        a[k] = v;                                                              \
      }                                                                        \
    }                                                                          \
    if (n <= run)                                                              \
      return;                                                                  \
    T *tmp = malloc(n * sizeof *tmp);                                          \
    if (!tmp) {                                                                \
      qsort(a, n, sizeof *a, CMP);                                             \
      return;                                                                  \
    }                                                                          \
    T *src = a, *dst = tmp;                                                    \
    for (size_t w = run; w < n; w *= 2) {                                      \
      for (size_t s = 0; s < n; s += 2 * w) {                                  \
        size_t m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;   \
        size_t i = s, j = m, k = s;                                            \
        while (i < m && j < e)                                                 \
          dst[k++] = LESS(&src[j], &src[i]) ? src[j++] : src[i++];             \
        while (i < m)                                                          \
          dst[k++] = src[i++];                                                 \
        while (j < e)                                                          \
          dst[k++] = src[j++];                                                 \
      }                                                                        \
      T *t = src;                                                              \
      src = dst;                                                               \
      dst = t;                                                                 \
    }                                                                          \
    if (src != a)                                                              \
      memcpy(a, src, n * sizeof *a);                                           \
    free(tmp);                                                                 \
  }

#endif
