/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Binding a library loaded on first use (curl_dl.c, mhd_dl.c). */
#ifndef PFI_DL_INT_H
#define PFI_DL_INT_H

#include <dlfcn.h>
#include <string.h>

/* Sets the function pointer `dst` to symbol `name` of handle `h`, or
 * returns 0 from the calling function when the library lacks it. dlsym's
 * void * as a function pointer: POSIX requires the conversion to work; the
 * memcpy keeps ISO C's warning quiet. */
#define PFI_DL_SYM(h, dst, name)                                               \
  do {                                                                         \
    void *p_ = dlsym((h), (name));                                             \
    if (!p_)                                                                   \
      return 0;                                                                \
    _Static_assert(sizeof(dst) == sizeof p_, "function pointer size");         \
    memcpy(&(dst), &p_, sizeof p_);                                            \
  } while (0)

#endif
