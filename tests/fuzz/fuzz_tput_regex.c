/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: a --throughput regex spec (the pattern checks and regcomp)
 * and the line splitter and matcher on a short output. Input: the pattern,
 * a NUL byte, then the job's output (at most 512 bytes).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/throughput.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 2048)
    return 0;
  const uint8_t *z = memchr(data, 0, size);
  size_t plen = z ? (size_t)(z - data) : size;
  char spec[2100] = "regex:";
  memcpy(spec + 6, data, plen);
  spec[6 + plen] = 0;
  const char *out = z ? (const char *)z + 1 : "";
  size_t olen = z ? size - plen - 1 : 0;
  if (olen > 512)
    olen = 512;
  struct pfi_tput *tp;
  struct pfi_error err;
  if (pfi_tput_open(&tp, spec, &err) < 0)
    return 0;
  if (pfi_tput_start(tp, 0, 0, &err) == 0) {
    pfi_tput_feed(tp, out, olen, 1);
    pfi_tput_feed(tp, NULL, 0, 2);
    const struct pfi_step *s;
    size_t n = pfi_tput_take(tp, &s);
    for (size_t i = 0; i < n; i++)
      if (!(s[i].tokens_per_s >= 0) || !isfinite(s[i].tokens_per_s))
        abort();
  }
  pfi_tput_close(tp);
  return 0;
}
