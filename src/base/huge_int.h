/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Internal to libpfi: advice that a large block about to be filled be
 * backed by huge pages. */
#ifndef PFI_HUGE_INT_H
#define PFI_HUGE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* A large block about to be filled: backed by huge pages where the system
 * lends them on request (transparent huge pages, "madvise"), one page
 * fault per 2 MiB instead of per 4 KiB. Advice only: nothing changes where
 * it is not taken. */
static inline void pfi__advise_huge(void *p, size_t n) {
#if defined(MADV_HUGEPAGE)
  const uintptr_t H = (uintptr_t)1 << 21;
  if (n < 4 * H)
    return;
  uintptr_t a = ((uintptr_t)p + H - 1) & ~(H - 1),
            b = ((uintptr_t)p + n) & ~(H - 1);
  if (b > a)
    (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

#endif
