/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the emulator's job-library loader, and the model on every
 * job the loader accepts (its checks must keep the model finite). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/emu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_error err;
  struct pfi_emu_jobs jobs;
  if (pfi_emu_jobs_load_mem(&jobs, "fuzz", (const char *)data, size, &err) != 0)
    return 0;
  struct pfi_emu_run *run = malloc(sizeof *run);
  for (size_t i = 0; run && i < jobs.n && i < 4; i++) {
    double caps[PFI_EMU_MAX_GPUS];
    for (int c = 200; c <= 700; c += 250) {
      for (unsigned r = 0; r < PFI_EMU_MAX_GPUS; r++)
        caps[r] = c;
      if (pfi_emu_run_init(run, &jobs.job[i], caps, 7, &err) != 0)
        continue;
      if (!isfinite(run->st.tokens_per_s) || !(run->st.tokens_per_s > 0) ||
          !(run->st.power_w <= c * jobs.job[i].gpus + 1e-6))
        abort();
      for (double t = 0; t <= 1800; t += 450) {
        struct pfi_sample s;
        double tok;
        pfi_emu_run_sample(run, 0, t, &s, &tok, NULL);
        if (!isfinite(s.v[PFI_FIELD_POWER]) || !isfinite(tok))
          abort();
      }
    }
  }
  free(run);
  pfi_emu_jobs_release(&jobs);
  return 0;
}
