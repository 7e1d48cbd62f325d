/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Targets stated at the node or the meter, made GPU targets each period
 * from the nodes' state (include/pfi/fleet.h, docs/fleet.md "Levels"). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
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
    return pfi_error_set(err, PFI_EINVAL, "a %s target with no node reporting",
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

int pfi_fleet_meter_safe(const struct pfi_meter_config *cfg, double *load_lo,
                         double *load_hi) {
  /* Wall power dc / eff(dc / rated) rises with dc wherever eff is flat or
   * falls; on a rising segment eff = a + b * load it does while a > 0
   * (d/dload of load / (a + b load) = a / eff^2). */
  if (!(cfg->psu_rated_w > 0))
    return 1;
  for (size_t k = 1; k < cfg->psu_n; k++) {
    double x0 = cfg->psu_load[k - 1], x1 = cfg->psu_load[k];
    double y0 = cfg->psu_eff[k - 1], y1 = cfg->psu_eff[k];
    double a = y0 - x0 * (y1 - y0) / (x1 - x0);
    if (y1 > y0 && !(a > 0)) {
      *load_lo = x0;
      *load_hi = x1;
      return 0;
    }
  }
  return 1;
}

int pfi_fleet_meter_config_load(const char *path, struct pfi_meter_config *cfg,
                                struct pfi_error *err) {
  char *buf;
  size_t len;
  int rc = pfi_read_file(path, &buf, &len, err);
  if (rc < 0)
    return rc;
  if ((rc = pfi_meter_config_load_mem(path, buf, len, cfg, err)) == 0) {
    double lo, hi;
    if (!pfi_fleet_meter_safe(cfg, &lo, &hi)) {
      /* The line of the curve in force: the last psu_curve key. */
      long line = 0, at = 0, col = 1;
      for (size_t i = 0; i < len;) {
        line++;
        const char *ln = buf + i, *nl = memchr(ln, '\n', len - i);
        size_t n = nl ? (size_t)(nl - ln) : len - i;
        size_t b = 0;
        while (b < n && isspace((unsigned char)ln[b]))
          b++;
        if (n - b >= 9 && memcmp(ln + b, "psu_curve", 9) == 0) {
          at = line;
          col = (long)b + 1;
        }
        i += n + (nl != NULL);
      }
      rc = pfi_error_setloc(
          err, PFI_EPARSE, path, at ? at : 1, col,
          "psu_curve: from load %g to %g the efficiency rises faster than "
          "the load (meter power would fall as GPU power rises): a node or "
          "meter target could not be converted to a safe GPU target",
          lo, hi);
    }
  }
  free(buf);
  return rc;
}
