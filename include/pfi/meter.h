/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Power at the meter: GPU board power -> node power -> facility power.
 *
 * A utility pays for what its meter shows, not for GPU board power. The
 * chain, per node i (docs/grid.md):
 *
 *   node_dc_i   = gpu_i + other_i
 *                 other_i measured (RAPL package + DRAM, or the BMC's DCMI
 *                 reading minus the GPUs) or, when not measured, the
 *                 configured per-node baseline `node_other_w`;
 *   node_wall_i = node_dc_i / eff(node_dc_i / psu_rated_w)
 *                 eff: the power supplies' efficiency curve, piecewise
 *                 linear in the load fraction, flat beyond its ends;
 *   facility    = pue * sum_i node_wall_i + facility_other_w
 *                 (or a facility meter reading, when the site has one).
 *
 * A limit stated at the node or meter level becomes a GPU-level limit for
 * the controller by inverting this chain at the current state
 * (pfi_meter_gpu_limit): GPU power is assumed to change in proportion on
 * every node, other_i to stay as measured. Every function is pure; the
 * readers (RAPL through Linux powercap, DCMI through ipmitool or freeipmi,
 * pfi_bmc_read) are the device layer's (pfi/sensor.h).
 */
#ifndef PFI_METER_H
#define PFI_METER_H

#include <stddef.h>

#include "pfi/error.h"
#include "pfi/sensor.h" /* the RAPL and BMC readers */
#include "pfi/timeline.h"

#define PFI_PSU_POINTS_MAX 16

struct pfi_meter_config {
  double node_other_w; /* non-GPU DC power of a node when not measured, W */
  double psu_rated_w;  /* rated output of a node's supplies, W (0: the
                          efficiency is eff[0] at every load) */
  size_t psu_n;        /* points of the efficiency curve (>= 1) */
  double psu_load[PFI_PSU_POINTS_MAX]; /* load fractions, increasing, > 0 */
  double psu_eff[PFI_PSU_POINTS_MAX];  /* efficiencies in (0, 1] */
  double pue;                          /* facility / IT power, >= 1 */
  double facility_other_w;             /* constant facility loads, W */
};

/* Defaults: nothing assumed. node_other_w 0, one efficiency point 1.0,
 * PUE 1.0, no facility loads: meter power equals node power until the site
 * configures its own figures. */
void pfi_meter_config_init(struct pfi_meter_config *cfg);

/*
 * Reads a meter configuration: "key = value" lines, '#' comments. Keys:
 * node_other_w, psu_rated_w, psu_curve ("LOAD:EFF,LOAD:EFF,...", e.g.
 * "0.1:0.90,0.2:0.94,0.5:0.96,1.0:0.91"), pue, facility_other_w. Unknown
 * keys, bad numbers, a curve that is not increasing in load or has an
 * efficiency outside (0, 1], a PUE below 1: PFI_EPARSE with file, line and
 * column. `cfg` is initialized by the call.
 */
int pfi_meter_config_load_mem(const char *name, const char *data, size_t len,
                              struct pfi_meter_config *cfg,
                              struct pfi_error *err);
int pfi_meter_config_load(const char *path, struct pfi_meter_config *cfg,
                          struct pfi_error *err);

/* Efficiency at `load` (fraction of rated output). */
double pfi_meter_psu_eff(const struct pfi_meter_config *cfg, double load);

/* Wall (AC) power of a node drawing `dc_w` W DC. */
double pfi_meter_node_wall_w(const struct pfi_meter_config *cfg, double dc_w);

/*
 * Power of `n` nodes at each level. gpu_w[i] is node i's GPU power; other_w
 * (may be NULL) node i's measured non-GPU power, NAN where not measured
 * (then node_other_w). Outputs (any may be NULL): total GPU, node DC and
 * facility power, W. PFI_EINVAL for a negative or non-finite input.
 */
int pfi_meter_levels(const struct pfi_meter_config *cfg, const double *gpu_w,
                     const double *other_w, size_t n, double *gpu_total,
                     double *node_total, double *facility,
                     struct pfi_error *err);

/*
 * The total GPU power that meets `limit_w` stated at `level` (enum
 * pfi_power_level) at the current state. Returns 0 and *gpu_limit_w >= 0,
 * or PFI_EINFEASIBLE when even zero GPU power exceeds the limit (the
 * message gives the shortfall in W at that level; *gpu_limit_w = 0).
 */
int pfi_meter_gpu_limit(const struct pfi_meter_config *cfg, const double *gpu_w,
                        const double *other_w, size_t n, int level,
                        double limit_w, double *gpu_limit_w,
                        struct pfi_error *err);

/*
 * The forward chain at another GPU total: power at `level` (GPU, node DC
 * or facility) of the n nodes when their GPUs draw gpu_total_w in all,
 * shared as gpu_w now (equal shares when it is all zero), other_w as for
 * pfi_meter_levels, into *out_w. pfi_meter_gpu_limit inverts it. What the
 * bridge reports to the VTN at the VTN's level. PFI_EINVAL for a negative
 * or non-finite input, or no nodes at the node or meter level.
 */
int pfi_meter_power_at(const struct pfi_meter_config *cfg, const double *gpu_w,
                       const double *other_w, size_t n, int level,
                       double gpu_total_w, double *out_w,
                       struct pfi_error *err);

/*
 * The power of a job's nodes at `level` when its GPUs draw gpu_w in all,
 * spread evenly over `nodes` nodes (each with the configured non-GPU power
 * node_other_w): at PFI_LEVEL_NODE nodes x (gpu_w / nodes + other), at
 * PFI_LEVEL_METER each node through the supplies' curve, times the PUE
 * (facility_other_w is the site's, not a job's, and is left out). A curve
 * whose power_w is converted point by point this way gives PFI over the
 * broader power signal (Eq. 1 with node or meter power): `pfi grid
 * curves`. Returns W; NAN for nodes == 0 or a negative or non-finite gpu_w.
 */
double pfi_meter_job_power_w(const struct pfi_meter_config *cfg, double gpu_w,
                             unsigned nodes, int level);

#endif
