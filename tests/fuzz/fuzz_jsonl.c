/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: JSONL throughput lines and the collector's line splitting
 * (through the regex source, which shares it), and the sweep's GPU-list
 * parser on the input's first bytes. Every accepted report must carry
 * finite, non-negative throughput when it carries any, and its phase
 * fields (a trainer's phase and announced pause) in range. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/phase.h"
#include "pfi/sweep.h"
#include "pfi/throughput.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  size_t i = 0;
  long line = 0;
  while (i < size) {
    const char *nl = memchr(s + i, '\n', size - i);
    size_t n = nl ? (size_t)(nl - (s + i)) : size - i;
    struct pfi_step st;
    struct pfi_step_phase ph;
    struct pfi_error err;
    int r = pfi_jsonl_parse_line_phase("fuzz", ++line, s + i, n, &st, NULL,
                                       &ph, &err);
    if (r == 1 && isfinite(st.tokens_per_s) && st.tokens_per_s < 0)
      abort();
    /* The phase fields: a phase or none, a pause time in range or none. */
    if (r == 1 && (ph.phase < -1 || ph.phase > PFI_PHASE_PAUSE ||
                   !(isnan(ph.next_pause_s) ||
                     (ph.next_pause_s >= 0 && ph.next_pause_s <= 1e7)) ||
                   !(isnan(ph.next_pause_len_s) ||
                     (ph.next_pause_len_s > 0 && ph.next_pause_len_s <= 1e7)) ||
                   !(isnan(ph.end_in_s) ||
                     (ph.end_in_s >= 0 && ph.end_in_s <= 1e7))))
      abort();
    if (r < 0 && (err.line != line || err.column < 1))
      abort();
    i += n + (nl != NULL);
  }
  struct pfi_tput *tp;
  struct pfi_error err;
  {
    char list[65];
    size_t k = size < 64 ? size : 64;
    memcpy(list, s, k);
    list[k] = 0;
    unsigned *g = NULL;
    size_t ng = 0;
    if (pfi_sweep_parse_gpus(list, &g, &ng, &err) == 0)
      for (size_t j = 0; j < ng; j++)
        if (g[j] > 1023)
          abort();
    free(g);
  }
  if (pfi_tput_open(&tp, "regex:tokens_per_s[\"=: ]+([-0-9.eE+]+)", &err) ==
      0) {
    pfi_tput_start(tp, 0, 0, &err);
    /* Two feeds split mid-way, as pipe reads are. */
    pfi_tput_feed(tp, s, size / 2, 1);
    pfi_tput_feed(tp, s + size / 2, size - size / 2, 2);
    pfi_tput_feed(tp, NULL, 0, 3);
    const struct pfi_step *steps;
    size_t k = pfi_tput_take(tp, &steps);
    for (size_t j = 0; j < k; j++)
      if (!(steps[j].tokens_per_s >= 0) || !isfinite(steps[j].tokens_per_s))
        abort();
    pfi_tput_close(tp);
  }
  return 0;
}
