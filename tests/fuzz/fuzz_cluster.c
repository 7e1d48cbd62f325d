/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: cluster files (pfi control --emulate FILE), timeline files
 * and power traces (--target FILE, --target trace:FILE), each read from a
 * private temporary file. Aborts when an accepted cluster has no GPUs or
 * an accepted target is not finite where the event runs. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0]) {
    snprintf(path, sizeof path, "/tmp/pfi-fuzz-cluster-%ld", (long)getpid());
  }
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  struct pfi_error err;
  struct pfi_cluster_config cc;
  pfi_cluster_config_init(&cc);
  if (pfi_cluster_config_read(&cc, path, &err) == 0 &&
      (cc.nodes < 1 || cc.gpus_per_node < 1))
    abort();
  struct pfi_event ev;
  if (pfi_event_parse(&ev, path, 0, 0, 1, &err) == 0) {
    double t = ev.start_s + 0.5 * (ev.ramp_s + ev.hold_s);
    if (!isfinite(pfi_event_target(&ev, t, 1000.0)))
      abort();
    pfi_event_release(&ev);
  }
  char spec[80];
  snprintf(spec, sizeof spec, "trace:%s", path);
  if (pfi_event_parse(&ev, spec, 0, 0, 1, &err) == 0) {
    double v = pfi_event_target(&ev, 0.5 * ev.hold_s, 1000.0);
    if (!isfinite(v) || v <= 0)
      abort();
    pfi_event_release(&ev);
  }
  unlink(path);
  return 0;
}
