/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A fake libnvidia-ml.so.1 for the test suite, built on top of pfi's `emu`
 * backend: the GPUs, their power limits and their telemetry are the
 * emulator's (caps persist in $PFI_EMU_STATE, as with the emu backend), and
 * every NVML entry point the `nvml` backend uses is implemented with NVML's
 * documented semantics and return codes. It never touches real hardware.
 *
 * Environment (read by nvmlInit):
 *   PFI_FAKE_NVML_EMU        parameters for the emu backend ("" by default)
 *   PFI_FAKE_NVML_FAIL       "ENTRY[@GPU]=CODE,..." makes the named entry
 *                            point return NVML code CODE (e.g.
 *                            nvmlDeviceSetPowerManagementLimit=4 is
 *                            permission denied; @GPU restricts it to one
 *                            GPU index)
 *   PFI_FAKE_NVML_LOST_AFTER N: after N successful device calls, every
 *                            device call returns NVML_ERROR_GPU_IS_LOST
 *   PFI_FAKE_NVML_NO_GPM     1: GPM reports the device as unsupported
 *   PFI_FAKE_NVML_MAX_MW     the maximum limit the constraints report (the
 *                            limit actually enforced stays the emulator's),
 *                            to provoke the driver's own range check
 *   PFI_FAKE_NVML_INIT       an NVML code for nvmlInit to return
 *   PFI_FAKE_NVML_JOB        a job-library id to run on every GPU, so the
 *                            telemetry is that of training, not idle
 *   PFI_FAKE_NVML_AT         seconds of device time to let pass after the
 *                            job starts (default 300: in training)
 *   PFI_FAKE_NVML_JOBS       the job library file (default: pfi's own)
 *   PFI_FAKE_NVML_PROCS      a file of lines "GPU PID": the compute
 *                            processes running on each GPU, read at each
 *                            nvmlDeviceGetComputeRunningProcesses call (none
 *                            when unset or absent)
 *
 * Built three times: libnvidia-ml.so.1 with the versioned (_v2, V) entry
 * points; with FAKE_NVML_V1_ONLY, a library that has only the original
 * ones, as old drivers do; with FAKE_NVML_MINIMAL, one without the optional
 * entry points (error strings, setting limits, energy, throttle time, GPM).
 * fake_nvml_calls(name) reports how often an entry point was called, so tests
 * can check which versions the backend chose.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/device.h"
#include "pfi/emu.h"

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999
};

#define EXPORT __attribute__((visibility("default")))

#define MAX_GPUS 64
#define MAGIC_DEV 0x6e766d6cu
#define MAGIC_GPM 0x67706d73u

struct nvmlDevice_st {
  unsigned magic;
  unsigned index;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

struct nvmlGpmSample_st {
  unsigned magic;
  int taken;
  unsigned gpu;
  struct pfi_sample s;
};
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
  unsigned int version;
  int sensorType;
  int temperature;
} nvmlTemperature_v1_t;
typedef struct {
  unsigned long long referenceTime, violationTime;
} nvmlViolationTime_t;
typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char *shortName, *longName, *unit;
  } metricInfo;
} nvmlGpmMetric_t;
typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1, sample2;
  nvmlGpmMetric_t metrics[98]; /* NVML_GPM_METRIC_MAX of CUDA 12.0 */
} nvmlGpmMetricsGet_t;
typedef struct {
  unsigned int version, isSupportedDevice;
} nvmlGpmSupport_t;

#define STRUCT_VERSION(type, ver)                                              \
  ((unsigned int)(sizeof(type) | ((unsigned)(ver) << 24U)))

/* ---- state --------------------------------------------------------------- */

struct failure {
  char entry[128];
  int gpu; /* -1: any */
  nvmlReturn_t code;
};

static struct {
  int refs;
  struct pfi_device *dev;
  unsigned n;
  struct nvmlDevice_st devs[MAX_GPUS];
  struct failure fail[16];
  int nfail;
  long lost_after; /* -1: never */
  long device_calls;
  int no_gpm;
  long max_mw;              /* -1: the emulator's */
  struct pfi_emu_jobs jobs; /* the attached job lives in here */
} g = {.lost_after = -1, .max_mw = -1};

/* Call counts per entry point, for fake_nvml_calls(). */
#define MAX_ENTRIES 64
static struct {
  const char *name;
  long calls;
} counts[MAX_ENTRIES];

static void count_call(const char *name) {
  for (int i = 0; i < MAX_ENTRIES; i++) {
    if (counts[i].name == NULL) {
      counts[i].name = name;
      counts[i].calls = 1;
      return;
    }
    if (strcmp(counts[i].name, name) == 0) {
      counts[i].calls++;
      return;
    }
  }
}

/* How often entry point `name` was called since the library was loaded. */
EXPORT long fake_nvml_calls(const char *name) {
  for (int i = 0; i < MAX_ENTRIES && counts[i].name; i++)
    if (strcmp(counts[i].name, name) == 0)
      return counts[i].calls;
  return 0;
}

static long env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  if (!s || !*s)
    return dflt;
  char *end;
  long v = strtol(s, &end, 10);
  return *end ? dflt : v;
}

/* Parses PFI_FAKE_NVML_FAIL. Malformed entries are ignored: the tests that
 * set it check the effect. */
static void parse_failures(void) {
  g.nfail = 0;
  const char *s = getenv("PFI_FAKE_NVML_FAIL");
  while (s && *s && g.nfail < 16) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    char item[128];
    if (len < sizeof item) {
      memcpy(item, s, len);
      item[len] = '\0';
      char *eq = strchr(item, '=');
      if (eq) {
        *eq = '\0';
        struct failure *f = &g.fail[g.nfail];
        f->gpu = -1;
        char *at = strchr(item, '@');
        if (at) {
          *at = '\0';
          f->gpu = atoi(at + 1);
        }
        snprintf(f->entry, sizeof f->entry, "%s", item);
        f->code = atoi(eq + 1);
        g.nfail++;
      }
    }
    s = end ? end + 1 : NULL;
  }
}

static nvmlReturn_t injected(const char *entry, int gpu) {
  for (int i = 0; i < g.nfail; i++)
    if (strcmp(g.fail[i].entry, entry) == 0 &&
        (g.fail[i].gpu < 0 || g.fail[i].gpu == gpu))
      return g.fail[i].code;
  return NVML_SUCCESS;
}

/* Common prologue of device entry points: initialized, valid handle,
 * injected failures, GPU loss. */
static nvmlReturn_t enter(const char *entry, nvmlDevice_t d, unsigned *gpu) {
  count_call(entry);
  if (g.refs <= 0)
    return NVML_ERROR_UNINITIALIZED;
  if (!d || d < g.devs || d >= g.devs + g.n || d->magic != MAGIC_DEV)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = injected(entry, (int)d->index);
  if (r != NVML_SUCCESS)
    return r;
  if (g.lost_after >= 0 && g.device_calls >= g.lost_after)
    return NVML_ERROR_GPU_IS_LOST;
  g.device_calls++;
  *gpu = d->index;
  return NVML_SUCCESS;
}

/* Maps a pfi error from the emulator to NVML's code. */
static nvmlReturn_t from_pfi(int rc) {
  switch (rc) {
  case 0:
    return NVML_SUCCESS;
  case PFI_ERANGE:
  case PFI_EINVAL:
    return NVML_ERROR_INVALID_ARGUMENT;
  case PFI_ENOTSUP:
    return NVML_ERROR_NOT_SUPPORTED;
  case PFI_ENOPERM:
    return NVML_ERROR_NO_PERMISSION;
  case PFI_EGPULOST:
    return NVML_ERROR_GPU_IS_LOST;
  case PFI_ENOMEM:
    return NVML_ERROR_MEMORY;
  default:
    return NVML_ERROR_UNKNOWN;
  }
}

static nvmlReturn_t emu_sample(unsigned gpu, struct pfi_sample *s) {
  struct pfi_error err;
  return from_pfi(pfi_device_sample(g.dev, gpu, s, &err));
}

/* ---- init ---------------------------------------------------------------- */

/* Runs job `id` on all GPUs and lets PFI_FAKE_NVML_AT seconds pass. */
static int attach_job(const char *id) {
  struct pfi_error err;
  unsigned gpus[MAX_GPUS];
  memset(&g.jobs, 0, sizeof g.jobs);
  const char *lib = getenv("PFI_FAKE_NVML_JOBS");
  if (pfi_emu_jobs_load(&g.jobs, lib && *lib ? lib : NULL, &err) < 0)
    return -1;
  const struct pfi_emu_job *j = pfi_emu_job_find(&g.jobs, id);
  if (!j)
    return -1;
  for (unsigned i = 0; i < g.n; i++)
    gpus[i] = i;
  if (pfi_emu_attach(g.dev, gpus, g.n, j, PFI_EMU_DEFAULT_SEED, &err) < 0)
    return -1;
  return pfi_device_wait(g.dev, (double)env_long("PFI_FAKE_NVML_AT", 300),
                         &err);
}

static nvmlReturn_t do_init(const char *entry) {
  count_call(entry);
  nvmlReturn_t r = (nvmlReturn_t)env_long("PFI_FAKE_NVML_INIT", 0);
  if (r != NVML_SUCCESS)
    return r;
  if (g.refs++ > 0)
    return NVML_SUCCESS;
  parse_failures();
  g.lost_after = env_long("PFI_FAKE_NVML_LOST_AFTER", -1);
  g.device_calls = 0;
  g.no_gpm = (int)env_long("PFI_FAKE_NVML_NO_GPM", 0);
  g.max_mw = env_long("PFI_FAKE_NVML_MAX_MW", -1);
  struct pfi_error err;
  const char *params = getenv("PFI_FAKE_NVML_EMU");
  int rc =
      pfi_device_open(&g.dev, "emu", params && *params ? params : NULL, &err);
  unsigned n = 0;
  if (rc == 0)
    rc = pfi_device_count(g.dev, &n, &err);
  if (rc < 0 || n > MAX_GPUS) {
    pfi_device_close(g.dev);
    g.dev = NULL;
    g.refs = 0;
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  g.n = n;
  for (unsigned i = 0; i < n; i++) {
    g.devs[i].magic = MAGIC_DEV;
    g.devs[i].index = i;
  }
  const char *job = getenv("PFI_FAKE_NVML_JOB");
  if (job && *job && attach_job(job) != 0) {
    pfi_emu_jobs_release(&g.jobs);
    pfi_device_close(g.dev);
    g.dev = NULL;
    g.refs = 0;
    return NVML_ERROR_UNKNOWN;
  }
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_V1_ONLY
EXPORT nvmlReturn_t nvmlInit_v2(void) { return do_init("nvmlInit_v2"); }
#endif
EXPORT nvmlReturn_t nvmlInit(void) { return do_init("nvmlInit"); }

EXPORT nvmlReturn_t nvmlShutdown(void) {
  count_call("nvmlShutdown");
  if (g.refs <= 0)
    return NVML_ERROR_UNINITIALIZED;
  if (--g.refs == 0) {
    pfi_device_close(g.dev);
    pfi_emu_jobs_release(&g.jobs);
    g.dev = NULL;
    g.n = 0;
  }
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_MINIMAL
EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
  case NVML_SUCCESS:
    return "Success";
  case NVML_ERROR_UNINITIALIZED:
    return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT:
    return "Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED:
    return "Not Supported";
  case NVML_ERROR_NO_PERMISSION:
    return "Insufficient Permissions";
  case NVML_ERROR_NOT_FOUND:
    return "Not Found";
  case NVML_ERROR_DRIVER_NOT_LOADED:
    return "Driver Not Loaded";
  case NVML_ERROR_GPU_IS_LOST:
    return "GPU is lost";
  default:
    return "Unknown Error";
  }
}
#endif

static nvmlReturn_t do_count(const char *entry, unsigned int *n) {
  count_call(entry);
  if (g.refs <= 0)
    return NVML_ERROR_UNINITIALIZED;
  if (!n)
    return NVML_ERROR_INVALID_ARGUMENT;
  *n = g.n;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_V1_ONLY
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
  return do_count("nvmlDeviceGetCount_v2", n);
}
#endif
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) {
  return do_count("nvmlDeviceGetCount", n);
}

static nvmlReturn_t do_handle(const char *entry, unsigned int i,
                              nvmlDevice_t *d) {
  count_call(entry);
  if (g.refs <= 0)
    return NVML_ERROR_UNINITIALIZED;
  if (!d || i >= g.n)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = injected(entry, (int)i);
  if (r != NVML_SUCCESS)
    return r;
  *d = &g.devs[i];
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_V1_ONLY
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i,
                                                  nvmlDevice_t *d) {
  return do_handle("nvmlDeviceGetHandleByIndex_v2", i, d);
}
#endif
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i,
                                               nvmlDevice_t *d) {
  return do_handle("nvmlDeviceGetHandleByIndex", i, d);
}

/* ---- identity ------------------------------------------------------------ */

static nvmlReturn_t copy_string(const char *src, char *buf, unsigned len) {
  if (!buf)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(src) + 1 > len)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(buf, src, strlen(src) + 1);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf,
                                      unsigned int len) {
  unsigned gpu;
  nvmlReturn_t r = enter("nvmlDeviceGetName", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  char name[128];
  struct pfi_error err;
  r = from_pfi(pfi_device_name(g.dev, gpu, name, sizeof name, &err));
  /* PFI_FAKE_NVML_NAME: the name the GPUs give, for tests of what pfi
   * does with GPUs that do not name themselves emulated (node power from
   * RAPL). */
  const char *as = getenv("PFI_FAKE_NVML_NAME");
  if (r == NVML_SUCCESS && as && *as)
    snprintf(name, sizeof name, "%s", as);
  return r != NVML_SUCCESS ? r : copy_string(name, buf, len);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf,
                                      unsigned int len) {
  unsigned gpu;
  nvmlReturn_t r = enter("nvmlDeviceGetUUID", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  char uuid[128];
  struct pfi_error err;
  r = from_pfi(pfi_device_uuid(g.dev, gpu, uuid, sizeof uuid, &err));
  return r != NVML_SUCCESS ? r : copy_string(uuid, buf, len);
}

/* ---- power limits -------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(
    nvmlDevice_t d, unsigned int *mn, unsigned int *mx) {
  unsigned gpu;
  nvmlReturn_t r =
      enter("nvmlDeviceGetPowerManagementLimitConstraints", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  if (!mn || !mx)
    return NVML_ERROR_INVALID_ARGUMENT;
  struct pfi_power_limits lim;
  struct pfi_error err;
  r = from_pfi(pfi_device_limits(g.dev, gpu, &lim, &err));
  if (r != NVML_SUCCESS)
    return r;
  *mn = lim.min_mw;
  *mx = g.max_mw >= 0 ? (unsigned)g.max_mw : lim.max_mw;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d,
                                                             unsigned int *mw) {
  unsigned gpu;
  nvmlReturn_t r = enter("nvmlDeviceGetPowerManagementDefaultLimit", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  if (!mw)
    return NVML_ERROR_INVALID_ARGUMENT;
  struct pfi_power_limits lim;
  struct pfi_error err;
  r = from_pfi(pfi_device_limits(g.dev, gpu, &lim, &err));
  if (r == NVML_SUCCESS)
    *mw = lim.default_mw;
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d,
                                                      unsigned int *mw) {
  unsigned gpu;
  nvmlReturn_t r = enter("nvmlDeviceGetPowerManagementLimit", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  if (!mw)
    return NVML_ERROR_INVALID_ARGUMENT;
  uint32_t v = 0;
  struct pfi_error err;
  r = from_pfi(pfi_device_get_cap(g.dev, gpu, &v, &err));
  if (r == NVML_SUCCESS)
    *mw = v;
  return r;
}

#ifndef FAKE_NVML_MINIMAL
/* As the driver does, rejects a value outside the GPU's real constraints
 * with NVML_ERROR_INVALID_ARGUMENT. */
EXPORT nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t d,
                                                      unsigned int mw) {
  unsigned gpu;
  nvmlReturn_t r = enter("nvmlDeviceSetPowerManagementLimit", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  struct pfi_power_limits lim;
  struct pfi_error err;
  r = from_pfi(pfi_device_limits(g.dev, gpu, &lim, &err));
  if (r != NVML_SUCCESS)
    return r;
  if (mw < lim.min_mw || mw > lim.max_mw)
    return NVML_ERROR_INVALID_ARGUMENT;
  return from_pfi(pfi_device_set_cap(g.dev, gpu, mw, &err));
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d,
                                                    unsigned int *mw) {
  unsigned gpu;
  nvmlReturn_t r = enter("nvmlDeviceGetEnforcedPowerLimit", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  if (!mw)
    return NVML_ERROR_INVALID_ARGUMENT;
  uint32_t v = 0;
  struct pfi_error err;
  r = from_pfi(pfi_device_enforced_cap(g.dev, gpu, &v, &err));
  if (r == NVML_SUCCESS)
    *mw = v;
  return r;
}

/* ---- telemetry ----------------------------------------------------------- */

/* Reads one emulator sample for a device entry point; NOT_SUPPORTED when
 * the emulator does not provide field `f`. */
static nvmlReturn_t read_field(const char *entry, nvmlDevice_t d,
                               enum pfi_field f, struct pfi_sample *s) {
  unsigned gpu;
  nvmlReturn_t r = enter(entry, d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  r = emu_sample(gpu, s);
  if (r != NVML_SUCCESS)
    return r;
  return pfi_sample_has(s, f) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
  struct pfi_sample s;
  if (!mw)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r =
      read_field("nvmlDeviceGetPowerUsage", d, PFI_FIELD_POWER, &s);
  if (r == NVML_SUCCESS)
    *mw = s.power_mw;
  return r;
}

#ifndef FAKE_NVML_MINIMAL
EXPORT nvmlReturn_t
nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
  struct pfi_sample s;
  if (!mj)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = read_field("nvmlDeviceGetTotalEnergyConsumption", d,
                              PFI_FIELD_ENERGY, &s);
  if (r == NVML_SUCCESS)
    *mj = s.energy_mj;
  return r;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type,
                                           unsigned int *mhz) {
  struct pfi_sample s;
  enum pfi_field f;
  if (!mhz)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (type == 0 || type == 1) /* graphics and SM share a clock on Hopper */
    f = PFI_FIELD_SM_CLOCK;
  else if (type == 2)
    f = PFI_FIELD_MEM_CLOCK;
  else
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = read_field("nvmlDeviceGetClockInfo", d, f, &s);
  if (r == NVML_SUCCESS)
    *mhz = (unsigned)lround(s.v[f]);
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d,
                                                  nvmlUtilization_t *u) {
  struct pfi_sample s;
  if (!u)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r =
      read_field("nvmlDeviceGetUtilizationRates", d, PFI_FIELD_GPU_UTIL, &s);
  if (r != NVML_SUCCESS)
    return r;
  if (!pfi_sample_has(&s, PFI_FIELD_MEM_COPY_UTIL))
    return NVML_ERROR_NOT_SUPPORTED;
  u->gpu = (unsigned)lround(s.v[PFI_FIELD_GPU_UTIL]);
  u->memory = (unsigned)lround(s.v[PFI_FIELD_MEM_COPY_UTIL]);
  return NVML_SUCCESS;
}

/* Total frame buffer of the emulated board: 141 GB HBM3e on H200, 80 GB
 * HBM3 on H100, as the driver reports them in MiB. */
static unsigned long long fb_total_bytes(unsigned gpu) {
  char name[128] = "";
  struct pfi_error err;
  pfi_device_name(g.dev, gpu, name, sizeof name, &err);
  unsigned long long mib = strstr(name, "H100") ? 81559ULL : 143771ULL;
  return mib << 20;
}

#ifndef FAKE_NVML_V1_ONLY
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d,
                                               nvmlMemory_v2_t *m) {
  struct pfi_sample s;
  if (!m)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != STRUCT_VERSION(nvmlMemory_v2_t, 2)) {
    count_call("nvmlDeviceGetMemoryInfo_v2");
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  nvmlReturn_t r =
      read_field("nvmlDeviceGetMemoryInfo_v2", d, PFI_FIELD_FB_USED, &s);
  if (r != NVML_SUCCESS)
    return r;
  m->total = fb_total_bytes(d->index);
  m->reserved = 0;
  m->used = (unsigned long long)llround(s.v[PFI_FIELD_FB_USED]) << 20;
  m->free = m->used < m->total ? m->total - m->used : 0;
  return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
  struct pfi_sample s;
  if (!m)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r =
      read_field("nvmlDeviceGetMemoryInfo", d, PFI_FIELD_FB_USED, &s);
  if (r != NVML_SUCCESS)
    return r;
  m->total = fb_total_bytes(d->index);
  m->used = (unsigned long long)llround(s.v[PFI_FIELD_FB_USED]) << 20;
  m->free = m->used < m->total ? m->total - m->used : 0;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_V1_ONLY
EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t d,
                                              nvmlTemperature_v1_t *t) {
  struct pfi_sample s;
  if (!t)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (t->version != STRUCT_VERSION(nvmlTemperature_v1_t, 1)) {
    count_call("nvmlDeviceGetTemperatureV");
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  if (t->sensorType != 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r =
      read_field("nvmlDeviceGetTemperatureV", d, PFI_FIELD_TEMP, &s);
  if (r == NVML_SUCCESS)
    t->temperature = (int)lround(s.v[PFI_FIELD_TEMP]);
  return r;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor,
                                             unsigned int *deg) {
  struct pfi_sample s;
  if (!deg || sensor != 0)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r =
      read_field("nvmlDeviceGetTemperature", d, PFI_FIELD_TEMP, &s);
  if (r == NVML_SUCCESS)
    *deg = (unsigned)lround(s.v[PFI_FIELD_TEMP]);
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter,
                                                unsigned int *kbs) {
  struct pfi_sample s;
  enum pfi_field f;
  if (!kbs)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (counter == 0)
    f = PFI_FIELD_PCIE_TX;
  else if (counter == 1)
    f = PFI_FIELD_PCIE_RX;
  else
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlReturn_t r = read_field("nvmlDeviceGetPcieThroughput", d, f, &s);
  if (r == NVML_SUCCESS)
    *kbs = (unsigned)lround(s.v[f] / 1024.0);
  return r;
}

#ifndef FAKE_NVML_MINIMAL
EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t d, int policy,
                                                 nvmlViolationTime_t *v) {
  struct pfi_sample s;
  if (!v)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (policy != 0) /* only the power policy is emulated */
    return NVML_ERROR_NOT_SUPPORTED;
  nvmlReturn_t r = read_field("nvmlDeviceGetViolationStatus", d,
                              PFI_FIELD_THROTTLE_POWER, &s);
  if (r == NVML_SUCCESS) {
    v->referenceTime = (unsigned long long)llround(s.t_s * 1e6);
    v->violationTime =
        (unsigned long long)llround(s.v[PFI_FIELD_THROTTLE_POWER] * 1e9);
  }
  return r;
}

/* ---- GPM ----------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d,
                                              nvmlGpmSupport_t *sup) {
  unsigned gpu;
  nvmlReturn_t r = enter("nvmlGpmQueryDeviceSupport", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  if (!sup)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (sup->version != 1)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  sup->isSupportedDevice = g.no_gpm ? 0 : 1;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *out) {
  count_call("nvmlGpmSampleAlloc");
  if (g.refs <= 0)
    return NVML_ERROR_UNINITIALIZED;
  if (!out)
    return NVML_ERROR_INVALID_ARGUMENT;
  nvmlGpmSample_t s = calloc(1, sizeof *s);
  if (!s)
    return NVML_ERROR_MEMORY;
  s->magic = MAGIC_GPM;
  *out = s;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  count_call("nvmlGpmSampleFree");
  if (!s || s->magic != MAGIC_GPM)
    return NVML_ERROR_INVALID_ARGUMENT;
  s->magic = 0;
  free(s);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s) {
  unsigned gpu;
  nvmlReturn_t r = enter("nvmlGpmSampleGet", d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  if (!s || s->magic != MAGIC_GPM)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (g.no_gpm)
    return NVML_ERROR_NOT_SUPPORTED;
  r = emu_sample(gpu, &s->s);
  if (r != NVML_SUCCESS)
    return r;
  s->gpu = gpu;
  s->taken = 1;
  return NVML_SUCCESS;
}

/*
 * The emulator's activities are already averages over its sampling
 * interval, so a metric between two samples is the later sample's value;
 * what is checked is NVML's contract: same GPU, both samples taken, known
 * metric ids, a per-metric status.
 */
EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *mg) {
  count_call("nvmlGpmMetricsGet");
  if (g.refs <= 0)
    return NVML_ERROR_UNINITIALIZED;
  if (!mg)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (mg->version != 1)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  nvmlReturn_t r = injected("nvmlGpmMetricsGet", -1);
  if (r != NVML_SUCCESS)
    return r;
  nvmlGpmSample_t a = mg->sample1, b = mg->sample2;
  if (!a || !b || a->magic != MAGIC_GPM || b->magic != MAGIC_GPM || !a->taken ||
      !b->taken || a->gpu != b->gpu || mg->numMetrics > 98)
    return NVML_ERROR_INVALID_ARGUMENT;
  const struct pfi_sample *s = &b->s;
  for (unsigned i = 0; i < mg->numMetrics; i++) {
    nvmlGpmMetric_t *m = &mg->metrics[i];
    enum pfi_field f;
    double scale;
    switch (m->metricId) {
    case 2:
      f = PFI_FIELD_SM_ACTIVE;
      scale = 100.0;
      break;
    case 3:
      f = PFI_FIELD_SM_OCCUPANCY;
      scale = 100.0;
      break;
    case 5:
      f = PFI_FIELD_TENSOR_ACTIVE;
      scale = 100.0;
      break;
    case 10:
      f = PFI_FIELD_DRAM_ACTIVE;
      scale = 100.0;
      break;
    case 20:
      f = PFI_FIELD_PCIE_TX;
      scale = 1.0 / 1048576.0;
      break;
    case 21:
      f = PFI_FIELD_PCIE_RX;
      scale = 1.0 / 1048576.0;
      break;
    case 60:
      f = PFI_FIELD_NVLINK_RX;
      scale = 1.0 / 1048576.0;
      break;
    case 61:
      f = PFI_FIELD_NVLINK_TX;
      scale = 1.0 / 1048576.0;
      break;
    default:
      m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      m->value = 0.0;
      continue;
    }
    if (!pfi_sample_has(s, f)) {
      m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      m->value = 0.0;
      continue;
    }
    m->nvmlReturn = NVML_SUCCESS;
    m->value = s->v[f] * scale;
  }
  return NVML_SUCCESS;
}
#endif

/* ---- running compute processes ------------------------------------------ */

/* nvmlProcessInfo_v1_t and the v2/v3 layout (nvmlProcessInfo_t). */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} fake_proc_v1;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} fake_proc_v2;

#ifndef FAKE_NVML_MINIMAL
/* NVML's semantics: *count in is the room, out the number running;
 * NVML_ERROR_INSUFFICIENT_SIZE when the room is too small (infos may be
 * NULL with *count 0 to ask). */
static nvmlReturn_t procs(const char *entry, nvmlDevice_t d,
                          unsigned int *count, void *infos, int v2) {
  unsigned gpu;
  nvmlReturn_t r = enter(entry, d, &gpu);
  if (r != NVML_SUCCESS)
    return r;
  if (!count || (*count && !infos))
    return NVML_ERROR_INVALID_ARGUMENT;
  unsigned pids[256], n = 0, g2, pid;
  const char *path = getenv("PFI_FAKE_NVML_PROCS");
  FILE *fp = path && *path ? fopen(path, "r") : NULL;
  while (fp && n < 256 && fscanf(fp, "%u %u", &g2, &pid) == 2)
    if (g2 == gpu)
      pids[n++] = pid;
  if (fp)
    fclose(fp);
  unsigned room = *count;
  *count = n;
  if (room < n)
    return NVML_ERROR_INSUFFICIENT_SIZE;
  for (unsigned i = 0; i < n; i++) {
    if (v2) {
      fake_proc_v2 *o = (fake_proc_v2 *)infos + i;
      o->pid = pids[i];
      o->usedGpuMemory = 1ULL << 30;
      o->gpuInstanceId = o->computeInstanceId = 0xFFFFFFFFu;
    } else {
      fake_proc_v1 *o = (fake_proc_v1 *)infos + i;
      o->pid = pids[i];
      o->usedGpuMemory = 1ULL << 30;
    }
  }
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d,
                                                         unsigned int *count,
                                                         void *infos) {
  return procs("nvmlDeviceGetComputeRunningProcesses", d, count, infos, 0);
}
#ifndef FAKE_NVML_V1_ONLY
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d,
                                                            unsigned int *count,
                                                            void *infos) {
  return procs("nvmlDeviceGetComputeRunningProcesses_v3", d, count, infos, 1);
}
#endif
#endif
