/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * GPU device layer: one versioned table of operations per backend, one
 * static list of backends ("emu", "nvml"), and an opaque session handle.
 *
 * Units at this boundary are integers where the hardware gives integers:
 * power and caps in milliwatts, energy in millijoules, clocks in MHz. Every
 * telemetry field carries a validity bit: a field a backend or GPU does not
 * support is "not valid", never 0. Unsupported operations return
 * PFI_ENOTSUP, never success.
 */
#ifndef PFI_DEVICE_H
#define PFI_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"

/* Telemetry fields. Append only. Units in the comment. */
#define PFI_FIELD_MAP(X)                                                       \
  X(POWER, "power_w", "W")                 /* board power draw */              \
  X(ENERGY, "energy_j", "J")               /* total energy since boot */       \
  X(SM_CLOCK, "sm_clock_mhz", "MHz")                                           \
  X(MEM_CLOCK, "mem_clock_mhz", "MHz")                                         \
  X(GPU_UTIL, "gpu_util", "%")             /* 0..100, as NVML/DCGM */          \
  X(SM_ACTIVE, "sm_active", "ratio")       /* 0..1, DCGM PROF_SM_ACTIVE */     \
  X(SM_OCCUPANCY, "sm_occupancy", "ratio") /* 0..1 */                          \
  X(TENSOR_ACTIVE, "tensor_active", "ratio") /* 0..1 */                        \
  X(DRAM_ACTIVE, "dram_active", "ratio")   /* 0..1 */                          \
  X(MEM_COPY_UTIL, "mem_copy_util", "%")   /* 0..100 */                        \
  X(NVLINK_TX, "nvlink_tx_bps", "B/s")                                         \
  X(NVLINK_RX, "nvlink_rx_bps", "B/s")                                         \
  X(PCIE_TX, "pcie_tx_bps", "B/s")                                             \
  X(PCIE_RX, "pcie_rx_bps", "B/s")                                             \
  X(FB_USED, "fb_used_mib", "MiB")                                             \
  X(TEMP, "gpu_temp_c", "C")                                                   \
  X(THROTTLE_POWER, "power_throttle_s", "s") /* cumulative cap throttle time */

enum pfi_field {
#define PFI__FIELD_ENUM(name, str, unit) PFI_FIELD_##name,
  PFI_FIELD_MAP(PFI__FIELD_ENUM)
#undef PFI__FIELD_ENUM
  PFI_FIELD__COUNT
};

/* Column name of a field ("sm_clock_mhz"), and its unit ("MHz"). */
const char *pfi_field_name(enum pfi_field f);
const char *pfi_field_unit(enum pfi_field f);
/* Field by column name, or -1. */
int pfi_field_by_name(const char *name);

/* One telemetry sample of one GPU. Values are doubles in the units above
 * (power in W here, for analysis; the exact mW reading is power_mw). */
struct pfi_sample {
  double t_s;                   /* device clock, seconds (virtual on emu) */
  double v[PFI_FIELD__COUNT];   /* value of each field */
  uint32_t valid;               /* bit (1u << field) set when v[field] valid */
  uint32_t power_mw;            /* raw power reading, mW (valid with POWER) */
  uint64_t energy_mj;           /* raw energy counter, mJ (valid with ENERGY) */
};

static inline int pfi_sample_has(const struct pfi_sample *s, enum pfi_field f) {
  return (s->valid >> f) & 1u;
}

struct pfi_power_limits {
  uint32_t min_mw;     /* lowest settable limit */
  uint32_t max_mw;     /* highest settable limit */
  uint32_t default_mw; /* factory default (TDP) */
};

#define PFI_DEVICE_OPS_VERSION 2

/*
 * A backend. Fields are only ever appended; `version` tells which are
 * present. Every function returns 0 or a negative PFI_E* code and fills
 * `err`. `ctx` is the backend's own session state.
 */
struct pfi_device_ops {
  int version;
  const char *name;        /* "emu", "nvml" */
  const char *description; /* one line for `pfi devices --help` */
  /* `params` is backend-specific (NULL for defaults). */
  int (*open)(void **ctx, const char *params, struct pfi_error *err);
  void (*close)(void *ctx);
  int (*count)(void *ctx, unsigned *n, struct pfi_error *err);
  int (*name_of)(void *ctx, unsigned gpu, char *buf, size_t n,
                 struct pfi_error *err);
  int (*uuid_of)(void *ctx, unsigned gpu, char *buf, size_t n,
                 struct pfi_error *err);
  int (*limits)(void *ctx, unsigned gpu, struct pfi_power_limits *lim,
                struct pfi_error *err);
  int (*get_cap)(void *ctx, unsigned gpu, uint32_t *mw, struct pfi_error *err);
  int (*set_cap)(void *ctx, unsigned gpu, uint32_t mw, struct pfi_error *err);
  int (*enforced_cap)(void *ctx, unsigned gpu, uint32_t *mw,
                      struct pfi_error *err);
  int (*sample)(void *ctx, unsigned gpu, struct pfi_sample *s,
                struct pfi_error *err);
  /* The device clock in seconds: monotonic wall time on real GPUs, virtual
   * time on the emulator in virtual-time mode. */
  int (*now)(void *ctx, double *t_s, struct pfi_error *err);
  /* Lets `seconds` pass on the device clock: sleeps on real GPUs (returns
   * PFI_EINTR early when a signal arrives), advances virtual time on the
   * emulator. Harnesses wait through this, never sleep directly, so the same
   * code runs a 30-minute sweep in milliseconds on the emulator. */
  int (*wait)(void *ctx, double seconds, struct pfi_error *err);
  /* Version 2. The process ids of the compute processes running on the GPU:
   * up to `max` into pids, *n the number running (may exceed max). NULL:
   * not supported. */
  int (*processes)(void *ctx, unsigned gpu, unsigned *pids, size_t max,
                   size_t *n, struct pfi_error *err);
};

/* The static list of backends, NULL-terminated, generated from
 * src/device/backends.def (one PFI_BACKEND(symbol) line per backend). */
extern const struct pfi_device_ops *const pfi_device_backends[];

/* Backend by name, or NULL. */
const struct pfi_device_ops *pfi_device_backend(const char *name);

/* An open session on one backend. Opaque. */
struct pfi_device;

/* Opens backend `backend` ("emu", "nvml"). Returns 0, PFI_ENOTFOUND for an
 * unknown backend, or the backend's error. Close with pfi_device_close(). */
int pfi_device_open(struct pfi_device **dev, const char *backend,
                    const char *params, struct pfi_error *err);
void pfi_device_close(struct pfi_device *dev);

const struct pfi_device_ops *pfi_device_ops_of(const struct pfi_device *dev);
void *pfi_device_ctx(const struct pfi_device *dev);

/* Convenience wrappers over the table; GPU indices are checked against the
 * count (PFI_ERANGE). */
int pfi_device_count(struct pfi_device *dev, unsigned *n, struct pfi_error *err);
int pfi_device_name(struct pfi_device *dev, unsigned gpu, char *buf, size_t n,
                    struct pfi_error *err);
int pfi_device_uuid(struct pfi_device *dev, unsigned gpu, char *buf, size_t n,
                    struct pfi_error *err);
int pfi_device_limits(struct pfi_device *dev, unsigned gpu,
                      struct pfi_power_limits *lim, struct pfi_error *err);
int pfi_device_get_cap(struct pfi_device *dev, unsigned gpu, uint32_t *mw,
                       struct pfi_error *err);
/* Validates `mw` against the GPU's limits (PFI_ERANGE) before setting. */
int pfi_device_set_cap(struct pfi_device *dev, unsigned gpu, uint32_t mw,
                       struct pfi_error *err);
int pfi_device_enforced_cap(struct pfi_device *dev, unsigned gpu, uint32_t *mw,
                            struct pfi_error *err);
int pfi_device_sample(struct pfi_device *dev, unsigned gpu,
                      struct pfi_sample *s, struct pfi_error *err);
/* The compute processes running on `gpu` (see pfi_device_ops.processes).
 * PFI_ENOTSUP when the backend cannot tell (emu). */
int pfi_device_processes(struct pfi_device *dev, unsigned gpu, unsigned *pids,
                         size_t max, size_t *n, struct pfi_error *err);
int pfi_device_now(struct pfi_device *dev, double *t_s, struct pfi_error *err);
int pfi_device_wait(struct pfi_device *dev, double seconds,
                    struct pfi_error *err);

#endif
