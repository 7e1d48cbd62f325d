/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: the timestamp parser and the target trace reader of
 * replay.h, and a replay of every trace that loads on a fixed two-job
 * problem. Aborts when a feasible step misses its budget, a throughput
 * leaves [0, 1] of the uncapped one, a number is not finite, or equal beats
 * the oracle at a step: the invariants docs/replay.md states.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/replay.h"

static void check(const struct pfi_replay *r) {
  for (size_t k = 0; k < r->n; k++) {
    if (!isfinite(r->power_w[k]) || !isfinite(r->tokens_per_s[k]) ||
        !isfinite(r->cut[k]) || !(r->cut[k] >= 0))
      abort();
    if (r->feasible[k] &&
        fabs(r->power_w[k] - r->budget_w[k]) > 1e-6 * (1 + r->budget_w[k]))
      abort();
    if (r->normalized[k] < -1e-12 || r->normalized[k] > 1 + 1e-9)
      abort();
  }
  if (!isfinite(r->retained) || !isfinite(r->energy_j))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_error err;
  /* The timestamp parser on the first line (at most 127 bytes). */
  char buf[128];
  size_t m = 0;
  while (m < size && m < sizeof buf - 1 && data[m] != '\n')
    m++;
  memcpy(buf, data, m);
  buf[m] = '\0';
  enum pfi_time_kind kind;
  double t;
  size_t bad;
  if (pfi_time_parse(buf, &kind, &t, &bad, &err) == 0 && !isfinite(t))
    abort();
  if (pfi_time_parse(buf, &kind, &t, &bad, &err) < 0 && bad > m)
    abort();

  struct pfi_target tg;
  if (pfi_target_load_mem(&tg, "fuzz", (const char *)data, size, NULL, NULL,
                          &err) < 0)
    return 0;
  struct pfi_problem p;
  pfi_problem_init(&p);
  double xa[] = {100, 200}, ya[] = {100, 150};
  double xb[] = {100, 150, 200}, yb[] = {100, 140, 160};
  struct pfi_replay o, e;
  double base = pfi_target_baseline_auto(&tg);
  if (pfi_problem_add(&p, xa, ya, 2, 100, 200, &err) < 0 ||
      pfi_problem_add(&p, xb, yb, 3, 100, 200, &err) < 0 || !(base > 0) ||
      !isfinite(base))
    goto out;
  if (pfi_replay_run(&p, PFI_STRAT_ORACLE, NULL, &tg, base, 0.05, &o, &err) ==
      0) {
    check(&o);
    if (pfi_replay_run(&p, PFI_STRAT_EQUAL, NULL, &tg, base, 0.05, &e, &err) ==
        0) {
      check(&e);
      for (size_t k = 0; k < o.n; k++)
        if (e.tokens_per_s[k] > o.tokens_per_s[k] + 1e-6)
          abort();
      pfi_replay_release(&e);
    }
    pfi_replay_release(&o);
  }
out:
  pfi_problem_release(&p);
  pfi_target_release(&tg);
  return 0;
}
