/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The node's power sensors, beside the GPUs' own (pfi/device.h): the CPU
 * packages' and DRAM's RAPL energy counters, and the BMC's DCMI reading
 * of the whole node. The meter (pfi/meter.h) turns what they measure into
 * node and facility power.
 */
#ifndef PFI_SENSOR_H
#define PFI_SENSOR_H

#include <stddef.h>

#include "pfi/error.h"

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
