/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Targets stated at the node or the meter, made GPU targets each period
 * from the nodes' state (include/pfi/fleet.h, docs/fleet.md "Levels"). */
#include <math.h>
#include <stdlib.h>

#include "pfi/fleet.h"
#include "pfi/meter.h"

double pfi_fleet_node_other_w(const struct pfi_meter_config *cfg,
                              double reading_other_w, int fresh) {
  if (!(isfinite(reading_other_w) && reading_other_w >= 0))
    return NAN;
  if (fresh)
    return reading_other_w;
  return reading_other_w > cfg->node_other_w ? reading_other_w : NAN;
}

int pfi_fleet_event_gpu_target(const struct pfi_meter_config *cfg,
                               const double *gpu_w, const double *other_w,
                               size_t n, int level, double target_w,
                               double *gpu_target_w, double *shortfall_w,
                               struct pfi_error *err) {
  *gpu_target_w = 0;
  *shortfall_w = 0;
  if (level != PFI_LEVEL_GPU && level != PFI_LEVEL_NODE &&
      level != PFI_LEVEL_METER)
    return pfi_error_set(err, PFI_EINVAL, "level %d: not gpu, node or meter",
                         level);
  if (level != PFI_LEVEL_GPU && n == 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "a %s target with no node reporting",
                         pfi_fleet_level_name(level));
  int rc = pfi_meter_gpu_limit(cfg, gpu_w, other_w, n, level, target_w,
                               gpu_target_w, err);
  if (rc != PFI_EINFEASIBLE)
    return rc;
  /* What the nodes draw at that level with no GPU power at all. */
  double *zero = calloc(n, sizeof *zero);
  double node = 0, meter = 0;
  if (!zero)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  rc = pfi_meter_levels(cfg, zero, other_w, n, NULL, &node, &meter, err);
  free(zero);
  if (rc < 0)
    return rc;
  double floor_w = level == PFI_LEVEL_NODE ? node : meter;
  *gpu_target_w = 0;
  *shortfall_w = floor_w > target_w ? floor_w - target_w : 0;
  return 1;
}
