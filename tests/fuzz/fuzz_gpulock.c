/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the record of a per-GPU lock file and its description. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pfi/gpulock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_gpu_lock_holder h;
  char buf[700];
  pfi_gpu_lock_holder_parse((const char *)data, size, &h);
  pfi_gpu_lock_holder_str(&h, buf, sizeof buf);
  /* The description is one line whatever the record held. */
  if (strchr(buf, '\n') || strchr(buf, '\r'))
    __builtin_trap();
  return 0;
}
