/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The `nvml` device backend: NVIDIA GPUs through the NVIDIA Management
 * Library, loaded with dlopen at run time so that pfi builds and runs on
 * machines without the driver.
 *
 * Only the NVML types, enums and entry points used here are declared below,
 * transcribed from nvml.h (CUDA 12.x); no NVML header is needed to build.
 * Where NVML has versioned entry points, the newest is tried first
 * (nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
 * nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetTemperatureV) and the older
 * one is the fallback.
 *
 * Library: "libnvidia-ml.so.1" (the driver's runtime name, never the
 * unversioned development link), or the path in $PFI_NVML_LIB, or the
 * "lib=PATH" open parameter (which wins over the environment).
 *
 * Hopper activity metrics (SM active, SM occupancy, tensor active, DRAM
 * active, NVLink and PCIe bandwidth) come from the GPM API, which computes
 * them between two samples: the backend takes a baseline GPM sample when it
 * opens and then reports, at each telemetry sample, the averages over the
 * time since the previous one. On GPUs without GPM those fields are "not
 * valid" and PCIe comes from nvmlDeviceGetPcieThroughput.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "params.h"
#include "pfi/device.h"

/* ---- NVML declarations (nvml.h) ---------------------------------------- */

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999
};

typedef struct nvmlDevice_st *nvmlDevice_t;

/* nvmlClockType_t */
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
/* nvmlTemperatureSensors_t */
enum { NVML_TEMPERATURE_GPU = 0 };
/* nvmlPcieUtilCounter_t: KB/s, 1 KB granularity */
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
/* nvmlPerfPolicyType_t */
enum { NVML_PERF_POLICY_POWER = 0 };

typedef struct {
  unsigned int gpu;    /* percent of time a kernel ran */
  unsigned int memory; /* percent of time device memory was read or written */
} nvmlUtilization_t;

typedef struct {
  unsigned long long total, free, used; /* bytes; used includes reserved */
} nvmlMemory_t;

typedef struct {
  unsigned int version; /* nvmlMemory_v2 */
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
  unsigned int version; /* nvmlTemperature_v1 */
  int sensorType;       /* nvmlTemperatureSensors_t */
  int temperature;      /* degrees C */
} nvmlTemperature_v1_t;

typedef struct {
  unsigned long long referenceTime; /* CPU timestamp, microseconds */
  unsigned long long violationTime; /* nanoseconds */
} nvmlViolationTime_t;

/* NVML_STRUCT_VERSION(data, ver) = sizeof(struct) | (ver << 24). */
#define PFI__NVML_STRUCT_VERSION(type, ver)                                    \
  ((unsigned int)(sizeof(type) | ((unsigned)(ver) << 24U)))

/* GPM (Hopper and newer). A sample is an opaque handle. */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

enum {
  NVML_GPM_METRIC_SM_UTIL = 2,          /* percent of SMs busy */
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,     /* percent of warps resident */
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,  /* percent, any tensor pipe */
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,    /* percent of peak DRAM bandwidth */
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20, /* MiB/s */
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21, /* MiB/s */
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60, /* MiB/s */
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61  /* MiB/s */
};

typedef struct {
  unsigned int metricId;   /* in */
  nvmlReturn_t nvmlReturn; /* out: nonzero means value is not valid */
  double value;            /* out */
  struct {
    char *shortName;
    char *longName;
    char *unit;
  } metricInfo; /* out, owned by NVML */
} nvmlGpmMetric_t;

/*
 * nvml.h sizes metrics[] by NVML_GPM_METRIC_MAX, which has grown between
 * releases (98 in CUDA 12.0, 333 in CUDA 13) while the struct version stayed
 * 1. NVML reads and writes only metrics[0 .. numMetrics-1], so an array at
 * least as long as any release's is safe with every release.
 */
#define PFI__NVML_GPM_METRIC_SLOTS 512
typedef struct {
  unsigned int version; /* NVML_GPM_METRICS_GET_VERSION */
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[PFI__NVML_GPM_METRIC_SLOTS];
} nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1

typedef struct {
  unsigned int version; /* NVML_GPM_SUPPORT_VERSION */
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

/* ---- the entry points ---------------------------------------------------- */

/* The entry points, resolved with dlsym when a session opens. */
struct nvml_fns {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*count)(unsigned int *);
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*limit_constraints)(nvmlDevice_t, unsigned int *,
                                    unsigned int *);
  nvmlReturn_t (*default_limit)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*get_limit)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*set_limit)(nvmlDevice_t, unsigned int);
  nvmlReturn_t (*enforced_limit)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*total_energy)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
  nvmlReturn_t (*memory_info_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
  nvmlReturn_t (*memory_info)(nvmlDevice_t, nvmlMemory_t *);
  nvmlReturn_t (*temperature_v)(nvmlDevice_t, nvmlTemperature_v1_t *);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*pcie_throughput)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*violation_status)(nvmlDevice_t, int, nvmlViolationTime_t *);
  nvmlReturn_t (*gpm_query_support)(nvmlDevice_t, nvmlGpmSupport_t *);
  nvmlReturn_t (*gpm_sample_alloc)(nvmlGpmSample_t *);
  nvmlReturn_t (*gpm_sample_free)(nvmlGpmSample_t);
  nvmlReturn_t (*gpm_sample_get)(nvmlDevice_t, nvmlGpmSample_t);
  nvmlReturn_t (*gpm_metrics_get)(nvmlGpmMetricsGet_t *);
  /* nvmlProcessInfo_t (the _v3 and _v2 entry points) and _v1_t. */
  nvmlReturn_t (*procs_v2)(nvmlDevice_t, unsigned int *, void *);
  nvmlReturn_t (*procs_v1)(nvmlDevice_t, unsigned int *, void *);
};

/* Symbol names of each entry point, newest first. Required entry points
 * make open fail when missing; the others make the operation or field
 * unsupported. */
struct sym {
  size_t off;           /* offset of the member in struct nvml_fns */
  int required;         /* open fails without it */
  const char *names[3]; /* newest first, NULL-terminated */
};

#define FN(member) offsetof(struct nvml_fns, member)
static const struct sym syms[] = {
    {FN(init), 1, {"nvmlInit_v2", "nvmlInit", NULL}},
    {FN(shutdown), 1, {"nvmlShutdown", NULL}},
    {FN(error_string), 0, {"nvmlErrorString", NULL}},
    {FN(count), 1, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL}},
    {FN(handle_by_index),
     1,
     {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", NULL}},
    {FN(name), 0, {"nvmlDeviceGetName", NULL}},
    {FN(uuid), 0, {"nvmlDeviceGetUUID", NULL}},
    {FN(limit_constraints),
     0,
     {"nvmlDeviceGetPowerManagementLimitConstraints", NULL}},
    {FN(default_limit), 0, {"nvmlDeviceGetPowerManagementDefaultLimit", NULL}},
    {FN(get_limit), 0, {"nvmlDeviceGetPowerManagementLimit", NULL}},
    {FN(set_limit), 0, {"nvmlDeviceSetPowerManagementLimit", NULL}},
    {FN(enforced_limit), 0, {"nvmlDeviceGetEnforcedPowerLimit", NULL}},
    {FN(power_usage), 0, {"nvmlDeviceGetPowerUsage", NULL}},
    {FN(total_energy), 0, {"nvmlDeviceGetTotalEnergyConsumption", NULL}},
    {FN(clock_info), 0, {"nvmlDeviceGetClockInfo", NULL}},
    {FN(utilization), 0, {"nvmlDeviceGetUtilizationRates", NULL}},
    {FN(memory_info_v2), 0, {"nvmlDeviceGetMemoryInfo_v2", NULL}},
    {FN(memory_info), 0, {"nvmlDeviceGetMemoryInfo", NULL}},
    {FN(temperature_v), 0, {"nvmlDeviceGetTemperatureV", NULL}},
    {FN(temperature), 0, {"nvmlDeviceGetTemperature", NULL}},
    {FN(pcie_throughput), 0, {"nvmlDeviceGetPcieThroughput", NULL}},
    {FN(violation_status), 0, {"nvmlDeviceGetViolationStatus", NULL}},
    {FN(gpm_query_support), 0, {"nvmlGpmQueryDeviceSupport", NULL}},
    {FN(gpm_sample_alloc), 0, {"nvmlGpmSampleAlloc", NULL}},
    {FN(gpm_sample_free), 0, {"nvmlGpmSampleFree", NULL}},
    {FN(gpm_sample_get), 0, {"nvmlGpmSampleGet", NULL}},
    {FN(gpm_metrics_get), 0, {"nvmlGpmMetricsGet", NULL}},
    {FN(procs_v2),
     0,
     {"nvmlDeviceGetComputeRunningProcesses_v3",
      "nvmlDeviceGetComputeRunningProcesses_v2", NULL}},
    {FN(procs_v1), 0, {"nvmlDeviceGetComputeRunningProcesses", NULL}},
};
#undef FN

/* ---- session state ------------------------------------------------------- */

struct gpu {
  nvmlDevice_t h;
  int gpm;              /* GPM samples usable */
  nvmlGpmSample_t prev; /* baseline sample, taken at prev_t */
  nvmlGpmSample_t cur;  /* scratch for the next sample */
  double prev_t;        /* monotonic seconds */
};

struct ctx {
  void *lib;
  int inited; /* nvmlInit succeeded: shut down on close */
  struct nvml_fns f;
  unsigned n;
  struct gpu *gpus;
  double gpm_min_window_s; /* see GPM_MIN_WINDOW_S */
  char path[512];
};

/* Shortest GPM averaging window: two GPM samples closer than this give
 * metrics dominated by counter granularity, so they are not reported. */
#define GPM_MIN_WINDOW_S 0.1

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *nvml_name(nvmlReturn_t r) {
  switch (r) {
  case NVML_SUCCESS:
    return "NVML_SUCCESS";
  case NVML_ERROR_UNINITIALIZED:
    return "NVML_ERROR_UNINITIALIZED";
  case NVML_ERROR_INVALID_ARGUMENT:
    return "NVML_ERROR_INVALID_ARGUMENT";
  case NVML_ERROR_NOT_SUPPORTED:
    return "NVML_ERROR_NOT_SUPPORTED";
  case NVML_ERROR_NO_PERMISSION:
    return "NVML_ERROR_NO_PERMISSION";
  case NVML_ERROR_NOT_FOUND:
    return "NVML_ERROR_NOT_FOUND";
  case NVML_ERROR_INSUFFICIENT_SIZE:
    return "NVML_ERROR_INSUFFICIENT_SIZE";
  case NVML_ERROR_INSUFFICIENT_POWER:
    return "NVML_ERROR_INSUFFICIENT_POWER";
  case NVML_ERROR_DRIVER_NOT_LOADED:
    return "NVML_ERROR_DRIVER_NOT_LOADED";
  case NVML_ERROR_TIMEOUT:
    return "NVML_ERROR_TIMEOUT";
  case NVML_ERROR_LIBRARY_NOT_FOUND:
    return "NVML_ERROR_LIBRARY_NOT_FOUND";
  case NVML_ERROR_FUNCTION_NOT_FOUND:
    return "NVML_ERROR_FUNCTION_NOT_FOUND";
  case NVML_ERROR_GPU_IS_LOST:
    return "NVML_ERROR_GPU_IS_LOST";
  case NVML_ERROR_RESET_REQUIRED:
    return "NVML_ERROR_RESET_REQUIRED";
  case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
  case NVML_ERROR_IN_USE:
    return "NVML_ERROR_IN_USE";
  case NVML_ERROR_MEMORY:
    return "NVML_ERROR_MEMORY";
  case NVML_ERROR_NO_DATA:
    return "NVML_ERROR_NO_DATA";
  case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
    return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
  case NVML_ERROR_DEPRECATED:
    return "NVML_ERROR_DEPRECATED";
  case NVML_ERROR_NOT_READY:
    return "NVML_ERROR_NOT_READY";
  case NVML_ERROR_GPU_NOT_FOUND:
    return "NVML_ERROR_GPU_NOT_FOUND";
  case NVML_ERROR_INVALID_STATE:
    return "NVML_ERROR_INVALID_STATE";
  default:
    return "NVML error";
  }
}

/* The pfi code for an NVML return value. `setting` marks a power-limit
 * change, where INVALID_ARGUMENT means the value is out of range. */
static int map_code(nvmlReturn_t r, int setting) {
  switch (r) {
  case NVML_SUCCESS:
    return 0;
  case NVML_ERROR_NO_PERMISSION:
    return PFI_ENOPERM;
  case NVML_ERROR_NOT_SUPPORTED:
  case NVML_ERROR_FUNCTION_NOT_FOUND:
  case NVML_ERROR_DEPRECATED:
  case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
    return PFI_ENOTSUP;
  case NVML_ERROR_GPU_IS_LOST:
  case NVML_ERROR_RESET_REQUIRED:
    return PFI_EGPULOST;
  case NVML_ERROR_INVALID_ARGUMENT:
    return setting ? PFI_ERANGE : PFI_EINVAL;
  case NVML_ERROR_UNINITIALIZED:
    return PFI_EUNINIT;
  case NVML_ERROR_LIBRARY_NOT_FOUND:
  case NVML_ERROR_DRIVER_NOT_LOADED:
  case NVML_ERROR_NOT_FOUND:
  case NVML_ERROR_GPU_NOT_FOUND:
    return PFI_ENOTFOUND;
  case NVML_ERROR_MEMORY:
    return PFI_ENOMEM;
  case NVML_ERROR_IN_USE:
  case NVML_ERROR_TIMEOUT:
  case NVML_ERROR_NOT_READY:
    return PFI_EBUSY;
  default:
    return PFI_EIO;
  }
}

/* The library's own text for `r`, or ours when it has none. */
static const char *nvml_text(const struct ctx *c, nvmlReturn_t r) {
  const char *s = c && c->f.error_string ? c->f.error_string(r) : NULL;
  return s && *s ? s : nvml_name(r);
}

/*
 * Fills `err` for a failed call `what` on GPU `gpu` (or no GPU when gpu is
 * UINT_MAX) and returns the pfi code. The message names the operation, the
 * GPU and the NVML return value, and for the common cases says what to do.
 */
static int fail(const struct ctx *c, nvmlReturn_t r, const char *what,
                unsigned gpu, int setting, struct pfi_error *err) {
  int code = map_code(r, setting);
  if (code == 0)
    code = PFI_EIO;
  char where[32] = "";
  if (gpu != (unsigned)-1)
    snprintf(where, sizeof where, " on GPU %u", gpu);
  const char *hint = "";
  if (r == NVML_ERROR_NO_PERMISSION && setting)
    hint = ": setting a power limit needs root or CAP_SYS_ADMIN";
  else if (r == NVML_ERROR_NO_PERMISSION)
    hint = ": permission denied";
  else if (r == NVML_ERROR_INVALID_ARGUMENT && setting)
    hint = ": the driver rejected the value as outside the GPU's "
           "power-limit range";
  else if (code == PFI_EGPULOST)
    hint = ": the GPU fell off the bus or needs a reset; check dmesg for "
           "Xid errors";
  else if (r == NVML_ERROR_UNINITIALIZED)
    hint = ": NVML is not initialized";
  else if (r == NVML_ERROR_DRIVER_NOT_LOADED)
    hint = ": the NVIDIA kernel driver is not loaded";
  else if (r == NVML_ERROR_NOT_SUPPORTED)
    hint = ": not supported on this GPU";
  return pfi_error_set(err, code, "nvml: %s%s failed (%s, %d)%s", what, where,
                       nvml_text(c, r), r, hint);
}

static int gpu_ok(struct ctx *c, unsigned gpu, struct pfi_error *err) {
  if (gpu >= c->n)
    return pfi_error_set(err, PFI_ERANGE,
                         "nvml: GPU %u does not exist (%u GPU%s)", gpu, c->n,
                         c->n == 1 ? "" : "s");
  return 0;
}

static int missing(const char *sym, struct pfi_error *err) {
  return pfi_error_set(err, PFI_ENOTSUP,
                       "nvml: the loaded libnvidia-ml has no %s", sym);
}

/* ---- open / close -------------------------------------------------------- */

static void nvml_close(void *vctx) {
  struct ctx *c = vctx;
  if (!c)
    return;
  for (unsigned i = 0; c->gpus && i < c->n; i++) {
    if (c->f.gpm_sample_free) {
      if (c->gpus[i].prev)
        c->f.gpm_sample_free(c->gpus[i].prev);
      if (c->gpus[i].cur)
        c->f.gpm_sample_free(c->gpus[i].cur);
    }
  }
  free(c->gpus);
  if (c->inited)
    c->f.shutdown();
  if (c->lib)
    dlclose(c->lib);
  free(c);
}

int pfi__nvml_parse_params(const char *params, char *path, size_t pathsz,
                           double *gpm_min_window_s, struct pfi_error *err) {
  const char *env = getenv("PFI_NVML_LIB");
  const char *lib = env && *env ? env : "libnvidia-ml.so.1";
  size_t liblen = strlen(lib);
  const char *p = params;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 4 && strncmp(p, "lib=", 4) == 0) {
      lib = p + 4;
      liblen = len - 4;
    } else if (len > 15 && strncmp(p, "gpm_min_window=", 15) == 0) {
      char num[32];
      char *endp = NULL;
      size_t nl = len - 15 < sizeof num - 1 ? len - 15 : sizeof num - 1;
      memcpy(num, p + 15, nl);
      num[nl] = '\0';
      double v = strtod(num, &endp);
      if (endp == num || *endp || !(v >= 0.0) || v > 3600.0)
        return pfi_error_set(err, PFI_EINVAL,
                             "nvml: gpm_min_window '%s' is not a number of "
                             "seconds in 0..3600",
                             num);
      *gpm_min_window_s = v;
    } else {
      return pfi_error_set(err, PFI_EINVAL,
                           "nvml: unknown parameter '%.*s' (expected lib=PATH "
                           "or gpm_min_window=SECONDS)",
                           (int)len, p);
    }
    p = end ? end + 1 : NULL;
  }
  if (liblen >= pathsz)
    return pfi_error_set(err, PFI_EINVAL, "nvml: library path too long");
  memcpy(path, lib, liblen);
  path[liblen] = '\0';
  return 0;
}

/* Sets up GPM for one GPU when the device supports it: two sample buffers
 * and a baseline sample. Any failure leaves GPM off for that GPU. */
static void gpm_setup(struct ctx *c, struct gpu *g) {
  if (!c->f.gpm_query_support || !c->f.gpm_sample_alloc ||
      !c->f.gpm_sample_free || !c->f.gpm_sample_get || !c->f.gpm_metrics_get)
    return;
  nvmlGpmSupport_t sup;
  memset(&sup, 0, sizeof sup);
  sup.version = NVML_GPM_SUPPORT_VERSION;
  if (c->f.gpm_query_support(g->h, &sup) != NVML_SUCCESS ||
      !sup.isSupportedDevice)
    return;
  if (c->f.gpm_sample_alloc(&g->prev) != NVML_SUCCESS) {
    g->prev = NULL;
    return;
  }
  if (c->f.gpm_sample_alloc(&g->cur) != NVML_SUCCESS) {
    g->cur = NULL;
    return;
  }
  if (c->f.gpm_sample_get(g->h, g->prev) != NVML_SUCCESS)
    return;
  g->prev_t = mono_s();
  g->gpm = 1;
}

static int nvml_open(void **out, const char *params, struct pfi_error *err) {
  int rc = 0;
  nvmlReturn_t r;
  struct ctx *c = calloc(1, sizeof *c);
  *out = NULL;
  if (!c)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  c->gpm_min_window_s = GPM_MIN_WINDOW_S;
  rc = pfi__nvml_parse_params(params, c->path, sizeof c->path,
                              &c->gpm_min_window_s, err);
  if (rc < 0)
    goto out;
  /* RTLD_LOCAL keeps NVML's symbols out of the global namespace, so a
   * second library (a test double, another loader) cannot interpose. */
  c->lib = dlopen(c->path, RTLD_NOW | RTLD_LOCAL);
  if (!c->lib) {
    const char *e = dlerror();
    rc = pfi_error_set(err, PFI_ENOTFOUND,
                       "nvml: cannot load %s (%s); is the NVIDIA driver "
                       "installed? (set PFI_NVML_LIB to its path)",
                       c->path, e ? e : "unknown error");
    goto out;
  }
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *fp = NULL;
    for (int k = 0; !fp && syms[i].names[k]; k++)
      fp = dlsym(c->lib, syms[i].names[k]);
    if (!fp && syms[i].required) {
      rc = pfi_error_set(err, PFI_ENOTSUP,
                         "nvml: %s has no %s; driver too old or not NVML",
                         c->path, syms[i].names[0]);
      goto out;
    }
    /* POSIX guarantees that object and function pointers convert. */
    memcpy((char *)&c->f + syms[i].off, &fp, sizeof fp);
  }
  r = c->f.init();
  if (r != NVML_SUCCESS) {
    rc = fail(c, r, "initialization (nvmlInit)", (unsigned)-1, 0, err);
    goto out;
  }
  c->inited = 1;
  unsigned n = 0;
  r = c->f.count(&n);
  if (r != NVML_SUCCESS) {
    rc = fail(c, r, "counting GPUs", (unsigned)-1, 0, err);
    goto out;
  }
  /* A count this large is a broken library, not a machine. */
  if (n > 4096) {
    rc = pfi_error_set(err, PFI_EIO, "nvml: implausible GPU count %u", n);
    goto out;
  }
  c->gpus = calloc(n ? n : 1, sizeof *c->gpus);
  if (!c->gpus) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  c->n = n;
  for (unsigned i = 0; i < n; i++) {
    r = c->f.handle_by_index(i, &c->gpus[i].h);
    if (r != NVML_SUCCESS) {
      rc = fail(c, r, "getting the device handle", i, 0, err);
      goto out;
    }
    gpm_setup(c, &c->gpus[i]);
  }
  *out = c;
  c = NULL;
out:
  nvml_close(c);
  return rc;
}

/* ---- identity and limits ------------------------------------------------- */

static int nvml_count(void *vctx, unsigned *n, struct pfi_error *err) {
  struct ctx *c = vctx;
  *n = c->n;
  return 0;
}

/* Copies NVML's string into the caller's buffer, truncating. */
static int get_string(struct ctx *c, unsigned gpu,
                      nvmlReturn_t (*fn)(nvmlDevice_t, char *, unsigned),
                      const char *sym, const char *what, char *buf, size_t n,
                      struct pfi_error *err) {
  char tmp[NVML_DEVICE_UUID_V2_BUFFER_SIZE + 32];
  int rc = gpu_ok(c, gpu, err);
  if (rc < 0)
    return rc;
  if (!fn)
    return missing(sym, err);
  memset(tmp, 0, sizeof tmp);
  nvmlReturn_t r = fn(c->gpus[gpu].h, tmp, (unsigned)sizeof tmp - 1);
  if (r != NVML_SUCCESS)
    return fail(c, r, what, gpu, 0, err);
  tmp[sizeof tmp - 1] = '\0';
  snprintf(buf, n, "%s", tmp);
  return 0;
}

static int nvml_name_of(void *vctx, unsigned gpu, char *buf, size_t n,
                        struct pfi_error *err) {
  struct ctx *c = vctx;
  return get_string(c, gpu, c->f.name, "nvmlDeviceGetName", "reading the name",
                    buf, n, err);
}

static int nvml_uuid_of(void *vctx, unsigned gpu, char *buf, size_t n,
                        struct pfi_error *err) {
  struct ctx *c = vctx;
  return get_string(c, gpu, c->f.uuid, "nvmlDeviceGetUUID", "reading the UUID",
                    buf, n, err);
}

static int nvml_limits(void *vctx, unsigned gpu, struct pfi_power_limits *lim,
                       struct pfi_error *err) {
  struct ctx *c = vctx;
  int rc = gpu_ok(c, gpu, err);
  if (rc < 0)
    return rc;
  if (!c->f.limit_constraints)
    return missing("nvmlDeviceGetPowerManagementLimitConstraints", err);
  if (!c->f.default_limit)
    return missing("nvmlDeviceGetPowerManagementDefaultLimit", err);
  unsigned mn = 0, mx = 0, def = 0;
  nvmlReturn_t r = c->f.limit_constraints(c->gpus[gpu].h, &mn, &mx);
  if (r != NVML_SUCCESS)
    return fail(c, r, "reading the power-limit constraints", gpu, 0, err);
  r = c->f.default_limit(c->gpus[gpu].h, &def);
  if (r != NVML_SUCCESS)
    return fail(c, r, "reading the default power limit", gpu, 0, err);
  if (mn > mx || mx == 0)
    return pfi_error_set(err, PFI_EIO,
                         "nvml: GPU %u reports an empty power-limit range "
                         "%u..%u mW",
                         gpu, mn, mx);
  lim->min_mw = mn;
  lim->max_mw = mx;
  lim->default_mw = def;
  return 0;
}

static int nvml_get_cap(void *vctx, unsigned gpu, uint32_t *mw,
                        struct pfi_error *err) {
  struct ctx *c = vctx;
  int rc = gpu_ok(c, gpu, err);
  if (rc < 0)
    return rc;
  if (!c->f.get_limit)
    return missing("nvmlDeviceGetPowerManagementLimit", err);
  unsigned v = 0;
  nvmlReturn_t r = c->f.get_limit(c->gpus[gpu].h, &v);
  if (r != NVML_SUCCESS)
    return fail(c, r, "reading the power limit", gpu, 0, err);
  *mw = v;
  return 0;
}

static int nvml_set_cap(void *vctx, unsigned gpu, uint32_t mw,
                        struct pfi_error *err) {
  struct ctx *c = vctx;
  int rc = gpu_ok(c, gpu, err);
  if (rc < 0)
    return rc;
  if (!c->f.set_limit)
    return missing("nvmlDeviceSetPowerManagementLimit", err);
  nvmlReturn_t r = c->f.set_limit(c->gpus[gpu].h, mw);
  if (r != NVML_SUCCESS) {
    char what[64];
    snprintf(what, sizeof what, "setting the power limit to %.3f W",
             mw / 1000.0);
    return fail(c, r, what, gpu, 1, err);
  }
  return 0;
}

static int nvml_enforced_cap(void *vctx, unsigned gpu, uint32_t *mw,
                             struct pfi_error *err) {
  struct ctx *c = vctx;
  int rc = gpu_ok(c, gpu, err);
  if (rc < 0)
    return rc;
  if (!c->f.enforced_limit)
    return missing("nvmlDeviceGetEnforcedPowerLimit", err);
  unsigned v = 0;
  nvmlReturn_t r = c->f.enforced_limit(c->gpus[gpu].h, &v);
  if (r != NVML_SUCCESS)
    return fail(c, r, "reading the enforced power limit", gpu, 0, err);
  *mw = v;
  return 0;
}

/* ---- processes ----------------------------------------------------------- */

/* nvml.h's nvmlProcessInfo_t (v2 and v3 entry points) and
 * nvmlProcessInfo_v1_t. */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} proc_info_v2;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} proc_info_v1;

static int nvml_processes(void *vctx, unsigned gpu, unsigned *pids, size_t max,
                          size_t *n, struct pfi_error *err) {
  struct ctx *c = vctx;
  int rc = gpu_ok(c, gpu, err);
  if (rc < 0)
    return rc;
  int v2 = c->f.procs_v2 != NULL;
  nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int *, void *) =
      v2 ? c->f.procs_v2 : c->f.procs_v1;
  if (!fn)
    return missing("nvmlDeviceGetComputeRunningProcesses", err);
  size_t sz = v2 ? sizeof(proc_info_v2) : sizeof(proc_info_v1);
  /* The list may grow between calls: a few tries with room to spare. */
  unsigned room = 64;
  for (int tries = 0; tries < 4; tries++) {
    void *buf = calloc(room, sz);
    if (!buf)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    unsigned cnt = room;
    nvmlReturn_t r = fn(c->gpus[gpu].h, &cnt, buf);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
      free(buf);
      room = cnt + 16 > room * 2 ? cnt + 16 : room * 2;
      continue;
    }
    if (r != NVML_SUCCESS) {
      free(buf);
      return fail(c, r, "listing the compute processes", gpu, 0, err);
    }
    for (unsigned i = 0; i < cnt && i < max; i++)
      pids[i] = v2 ? ((proc_info_v2 *)buf)[i].pid : ((proc_info_v1 *)buf)[i].pid;
    *n = cnt;
    free(buf);
    return 0;
  }
  return pfi_error_set(err, PFI_EIO,
                       "GPU %u: the process list kept growing past %u", gpu,
                       room);
}

/* ---- telemetry ----------------------------------------------------------- */

/*
 * How a failed telemetry read affects the sample: errors that mean the GPU
 * or the library is gone end the sample (the caller must know); anything
 * else (not supported, no data yet, no permission for that counter) leaves
 * just that field "not valid".
 */
static int fatal(nvmlReturn_t r) {
  return r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_RESET_REQUIRED ||
         r == NVML_ERROR_UNINITIALIZED || r == NVML_ERROR_DRIVER_NOT_LOADED ||
         r == NVML_ERROR_LIB_RM_VERSION_MISMATCH;
}

static void put(struct pfi_sample *s, enum pfi_field f, double v) {
  if (!isfinite(v))
    return;
  s->v[f] = v;
  s->valid |= 1u << f;
}

/* A percentage from GPM (0..100, sometimes a hair above 100 from counter
 * skew) as a ratio 0..1; values far outside are dropped, not clamped. */
static void put_ratio(struct pfi_sample *s, enum pfi_field f, double pct) {
  if (!isfinite(pct) || pct < 0.0 || pct > 105.0)
    return;
  put(s, f, pct > 100.0 ? 1.0 : pct / 100.0);
}

#define CHECK(call, what)                                                      \
  do {                                                                         \
    r = (call);                                                                \
    if (r != NVML_SUCCESS && fatal(r))                                         \
      return fail(c, r, what, gpu, 0, err);                                    \
  } while (0)

/* The GPM metrics since the previous GPM sample of this GPU. */
static int sample_gpm(struct ctx *c, unsigned gpu, struct pfi_sample *s,
                      struct pfi_error *err) {
  static const struct {
    unsigned id;
    int field;
    int kind; /* 0 percent -> ratio, 1 MiB/s -> B/s */
  } want[] = {
      {NVML_GPM_METRIC_SM_UTIL, PFI_FIELD_SM_ACTIVE, 0},
      {NVML_GPM_METRIC_SM_OCCUPANCY, PFI_FIELD_SM_OCCUPANCY, 0},
      {NVML_GPM_METRIC_ANY_TENSOR_UTIL, PFI_FIELD_TENSOR_ACTIVE, 0},
      {NVML_GPM_METRIC_DRAM_BW_UTIL, PFI_FIELD_DRAM_ACTIVE, 0},
      {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, PFI_FIELD_NVLINK_TX, 1},
      {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, PFI_FIELD_NVLINK_RX, 1},
      {NVML_GPM_METRIC_PCIE_TX_PER_SEC, PFI_FIELD_PCIE_TX, 1},
      {NVML_GPM_METRIC_PCIE_RX_PER_SEC, PFI_FIELD_PCIE_RX, 1},
  };
  struct gpu *g = &c->gpus[gpu];
  nvmlReturn_t r;
  double t = mono_s();
  if (t - g->prev_t < c->gpm_min_window_s)
    return 0; /* keep the baseline; the next sample gets a longer window */
  CHECK(c->f.gpm_sample_get(g->h, g->cur), "taking a GPM sample");
  if (r != NVML_SUCCESS)
    return 0;
  nvmlGpmMetricsGet_t *mg = calloc(1, sizeof *mg);
  if (!mg)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  mg->version = NVML_GPM_METRICS_GET_VERSION;
  mg->numMetrics = sizeof want / sizeof want[0];
  mg->sample1 = g->prev;
  mg->sample2 = g->cur;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    mg->metrics[i].metricId = want[i].id;
  r = c->f.gpm_metrics_get(mg);
  if (r == NVML_SUCCESS) {
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
      const nvmlGpmMetric_t *m = &mg->metrics[i];
      if (m->nvmlReturn != NVML_SUCCESS || m->metricId != want[i].id)
        continue;
      if (want[i].kind == 0)
        put_ratio(s, want[i].field, m->value);
      else if (isfinite(m->value) && m->value >= 0.0)
        put(s, want[i].field, m->value * 1048576.0);
    }
  }
  free(mg);
  if (r != NVML_SUCCESS && fatal(r))
    return fail(c, r, "computing GPM metrics", gpu, 0, err);
  /* The new sample is the next window's baseline. */
  nvmlGpmSample_t tmp = g->prev;
  g->prev = g->cur;
  g->cur = tmp;
  g->prev_t = t;
  return 0;
}

static int nvml_sample(void *vctx, unsigned gpu, struct pfi_sample *s,
                       struct pfi_error *err) {
  struct ctx *c = vctx;
  nvmlReturn_t r;
  int rc = gpu_ok(c, gpu, err);
  if (rc < 0)
    return rc;
  nvmlDevice_t h = c->gpus[gpu].h;
  s->t_s = mono_s();
  if (c->f.power_usage) {
    unsigned mw = 0;
    CHECK(c->f.power_usage(h, &mw), "reading power");
    if (r == NVML_SUCCESS) {
      s->power_mw = mw;
      put(s, PFI_FIELD_POWER, mw / 1000.0);
    }
  }
  if (c->f.total_energy) {
    unsigned long long mj = 0;
    CHECK(c->f.total_energy(h, &mj), "reading energy");
    if (r == NVML_SUCCESS) {
      s->energy_mj = mj;
      put(s, PFI_FIELD_ENERGY, mj / 1000.0);
    }
  }
  if (c->f.clock_info) {
    unsigned mhz = 0;
    CHECK(c->f.clock_info(h, NVML_CLOCK_SM, &mhz), "reading the SM clock");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_SM_CLOCK, mhz);
    CHECK(c->f.clock_info(h, NVML_CLOCK_MEM, &mhz), "reading the memory clock");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_MEM_CLOCK, mhz);
  }
  if (c->f.utilization) {
    nvmlUtilization_t u;
    memset(&u, 0, sizeof u);
    CHECK(c->f.utilization(h, &u), "reading utilization");
    if (r == NVML_SUCCESS && u.gpu <= 100 && u.memory <= 100) {
      put(s, PFI_FIELD_GPU_UTIL, u.gpu);
      put(s, PFI_FIELD_MEM_COPY_UTIL, u.memory);
    }
  }
  /* Frame buffer used: the v2 struct separates memory reserved by the
   * driver, which v1 counts as used. */
  r = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (c->f.memory_info_v2) {
    nvmlMemory_v2_t m;
    memset(&m, 0, sizeof m);
    m.version = PFI__NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2);
    CHECK(c->f.memory_info_v2(h, &m), "reading memory use");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_FB_USED, m.used / 1048576.0);
  }
  if (r != NVML_SUCCESS && c->f.memory_info) {
    nvmlMemory_t m;
    memset(&m, 0, sizeof m);
    CHECK(c->f.memory_info(h, &m), "reading memory use");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_FB_USED, m.used / 1048576.0);
  }
  r = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (c->f.temperature_v) {
    nvmlTemperature_v1_t t;
    memset(&t, 0, sizeof t);
    t.version = PFI__NVML_STRUCT_VERSION(nvmlTemperature_v1_t, 1);
    t.sensorType = NVML_TEMPERATURE_GPU;
    CHECK(c->f.temperature_v(h, &t), "reading the temperature");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_TEMP, t.temperature);
  }
  if (r != NVML_SUCCESS && c->f.temperature) {
    unsigned deg = 0;
    CHECK(c->f.temperature(h, NVML_TEMPERATURE_GPU, &deg),
          "reading the temperature");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_TEMP, deg);
  }
  if (c->f.violation_status) {
    nvmlViolationTime_t v;
    memset(&v, 0, sizeof v);
    CHECK(c->f.violation_status(h, NVML_PERF_POLICY_POWER, &v),
          "reading power-cap throttle time");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_THROTTLE_POWER, v.violationTime * 1e-9);
  }
  if (c->gpus[gpu].gpm) {
    rc = sample_gpm(c, gpu, s, err);
    if (rc < 0)
      return rc;
  }
  /* PCIe from the instantaneous counters when GPM gave none (KB/s, with
   * NVML's KB being 1024 bytes). */
  if (c->f.pcie_throughput && !pfi_sample_has(s, PFI_FIELD_PCIE_TX)) {
    unsigned kbs = 0;
    CHECK(c->f.pcie_throughput(h, NVML_PCIE_UTIL_TX_BYTES, &kbs),
          "reading PCIe throughput");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_PCIE_TX, kbs * 1024.0);
    CHECK(c->f.pcie_throughput(h, NVML_PCIE_UTIL_RX_BYTES, &kbs),
          "reading PCIe throughput");
    if (r == NVML_SUCCESS)
      put(s, PFI_FIELD_PCIE_RX, kbs * 1024.0);
  }
  return 0;
}
#undef CHECK

/* ---- clock --------------------------------------------------------------- */

static int nvml_now(void *vctx, double *t_s, struct pfi_error *err) {
  *t_s = mono_s();
  return 0;
}

static int nvml_wait(void *vctx, double seconds, struct pfi_error *err) {
  struct timespec ts;
  ts.tv_sec = (time_t)seconds;
  ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L)
    ts.tv_nsec = 999999999L;
  if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
    return pfi_error_set(err, PFI_EINTR, "interrupted while waiting");
  return 0;
}

const struct pfi_device_ops pfi__device_nvml = {
    .version = PFI_DEVICE_OPS_VERSION,
    .name = "nvml",
    .description = "NVIDIA GPUs through libnvidia-ml.so.1 (dlopen; "
                   "$PFI_NVML_LIB overrides the path)",
    .open = nvml_open,
    .close = nvml_close,
    .count = nvml_count,
    .name_of = nvml_name_of,
    .uuid_of = nvml_uuid_of,
    .limits = nvml_limits,
    .get_cap = nvml_get_cap,
    .set_cap = nvml_set_cap,
    .enforced_cap = nvml_enforced_cap,
    .sample = nvml_sample,
    .now = nvml_now,
    .wait = nvml_wait,
    .processes = nvml_processes,
};
