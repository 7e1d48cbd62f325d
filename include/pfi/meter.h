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
 * pfi_bmc_read) are separate.
 */
#ifndef PFI_METER_H
#define PFI_METER_H

#include <stddef.h>

#include "pfi/error.h"
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

/* ---- readers ----------------------------------------------------------- */

#define PFI_RAPL_MAX 32

/* Energy counters of Linux powercap RAPL zones. */
struct pfi_rapl {
  size_t n;
  struct {
    char name[64];  /* "package-0", "dram", ... */
    char path[512]; /* the zone's energy_uj */
    double max_uj;  /* max_energy_range_uj: the counter wraps there */
    int top;        /* 1 for a top-level zone (intel-rapl:N) */
  } zone[PFI_RAPL_MAX];
};

/*
 * Finds the RAPL zones under `root` (NULL: /sys/class/powercap): every
 * intel-rapl:N (package, psys) and intel-rapl:N:M (core, uncore, dram)
 * directory with readable energy_uj. Returns the number of zones (0 when
 * there is none: not an error) or a negative code.
 */
int pfi_rapl_open(const char *root, struct pfi_rapl *r, struct pfi_error *err);

/* Reads every zone's counter into uj[0..n-1]. */
int pfi_rapl_read(const struct pfi_rapl *r, double *uj, struct pfi_error *err);

/*
 * Package + DRAM power over an interval from two readings dt_s apart,
 * counters that wrapped corrected with max_uj. psys zones are left out
 * (they contain the packages). Returns W, or NAN when there is no package
 * zone or dt_s <= 0.
 */
double pfi_rapl_power_w(const struct pfi_rapl *r, const double *uj0,
                        const double *uj1, double dt_s);

/*
 * Parses the power reading of a BMC as printed by `ipmitool dcmi power
 * reading` ("Instantaneous power reading: 220 Watts") or freeipmi's
 * `ipmi-dcmi --get-system-power-statistics` ("Current Power : 220 Watts").
 * Returns 0 and *w, or PFI_EPARSE (no reading found: the message names
 * the line of a reading whose value is not "N Watts", else the output's
 * line count and first line), PFI_ENOTSUP (the BMC says power measurement
 * is not active).
 */
int pfi_dcmi_parse(const char *text, size_t len, double *w,
                   struct pfi_error *err);

/*
 * The BMC's DCMI power reading, by running a Debian-packaged tool: the
 * whole node's power as the BMC measures it (on most servers the supplies'
 * input, i.e. at the wall; GPUs, CPUs, DRAM, fans and supply losses all in
 * it). The tool is run with fork/exec, no shell, stdin /dev/null, in its
 * own process group, stdout and stderr read together up to
 * PFI_BMC_OUTPUT_MAX bytes; after timeout_s its group is killed (SIGKILL).
 *
 *   ipmitool   `ipmitool dcmi power reading`                   (ipmitool)
 *   ipmi-dcmi  `ipmi-dcmi --get-system-power-statistics`       (freeipmi-tools)
 */
enum pfi_bmc_tool {
  PFI_BMC_NONE = 0,
  PFI_BMC_IPMITOOL = 1,
  PFI_BMC_IPMI_DCMI = 2,
};

#define PFI_BMC_OUTPUT_MAX 65536
#define PFI_BMC_TIMEOUT_S 10.0

struct pfi_bmc {
  int tool;         /* enum pfi_bmc_tool */
  char path[512];   /* the program run */
  double timeout_s; /* each run, default PFI_BMC_TIMEOUT_S */
};

/*
 * Chooses the tool from `spec`: "ipmitool" or "ipmi-dcmi", searched on
 * PATH, or "ipmitool:PROGRAM" / "ipmi-dcmi:PROGRAM" with the program given
 * (a path, or a name searched on PATH); "none" gives PFI_BMC_NONE. Returns
 * 0, PFI_EINVAL for another spec, PFI_ENOTFOUND when the program is not on
 * PATH or not executable (the message names the Debian package).
 */
int pfi_bmc_open(const char *spec, struct pfi_bmc *b, struct pfi_error *err);

/* "none", "ipmitool", "ipmi-dcmi". */
const char *pfi_bmc_tool_name(int tool);

/*
 * Runs the tool once and parses its reading (pfi_dcmi_parse): 0 and *w in
 * W. Errors, each naming the program: PFI_ECHILD (cannot be run; exited
 * with a non-zero status or was killed by a signal, with the first line of
 * its output; ran past timeout_s and was killed), PFI_ERANGE (more than
 * PFI_BMC_OUTPUT_MAX bytes of output: killed), PFI_EPARSE / PFI_ENOTSUP
 * from the parser. Never waits longer than timeout_s plus 1 s (to reap a
 * killed child; one that does not die in that time is left unreaped).
 */
int pfi_bmc_read(const struct pfi_bmc *b, double *w, struct pfi_error *err);

#endif
