/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the cap plan reader and the GPU list parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_error err;
  struct pfi_plan p;
  if (pfi_plan_read_mem(&p, "fuzz", (const char *)data, size, &err) == 0)
    pfi_plan_release(&p);
  /* The input as one GPU list. */
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  unsigned *ids;
  size_t n;
  if (pfi_plan_parse_gpus(s, &ids, &n, &err) == 0)
    free(ids);
  free(s);
  return 0;
}
