/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The nvml backend, run whole against the fake libnvidia-ml.so.1 that the
 * test suite builds on top of the emulator (tests/fake-nvml/). No test here
 * loads any other NVML library: PFI_NVML_LIB always points at the fake.
 *
 * Expected values are independent of the NVML path: the H200 limits from
 * the vendor's specification (200..700 W, default 700 W), and telemetry
 * read directly from an emu session in the same state at the same device
 * time, within the granularity of NVML's units (integer MHz, percent, MiB,
 * KB/s).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/device.h"
#include "pfi/emu.h"
#include "testutil.h"

static char fake_v2[1024], fake_v1[1024], fake_min[1024], jobs_path[1100];
static char state_dir[] = "/tmp/pfi-test-nvml-XXXXXX";

/* Emulated node of every test: 4 H200 GPUs. */
#define EMU_PARAMS "profile=h200,gpus=4"
#define NGPU 4
/* The job whose training telemetry the fake reports (a published group). */
static char job_id[96];

static void clear_injections(void) {
  unsetenv("PFI_FAKE_NVML_FAIL");
  unsetenv("PFI_FAKE_NVML_LOST_AFTER");
  unsetenv("PFI_FAKE_NVML_NO_GPM");
  unsetenv("PFI_FAKE_NVML_MAX_MW");
  unsetenv("PFI_FAKE_NVML_INIT");
  unsetenv("PFI_FAKE_NVML_JOB");
  unsetenv("PFI_FAKE_NVML_AT");
  unsetenv("PFI_FAKE_NVML_JOBS");
  unsetenv("PFI_FAKE_NVML_PROCS");
  setenv("PFI_NVML_LIB", fake_v2, 1);
}

static int group_setup(void **state) {
  const char *b = getenv("PFI_BUILD_DIR");
  if (!b || !*b) {
    fprintf(stderr, "PFI_BUILD_DIR is not set (run through ctest)\n");
    return -1;
  }
  snprintf(fake_v2, sizeof fake_v2, "%s/fake-nvml/libnvidia-ml.so.1", b);
  snprintf(fake_v1, sizeof fake_v1, "%s/fake-nvml-v1/libnvidia-ml.so.1", b);
  snprintf(fake_min, sizeof fake_min, "%s/fake-nvml-min/libnvidia-ml.so.1", b);
  if (!mkdtemp(state_dir))
    return -1;
  char emu_state[1100];
  snprintf(emu_state, sizeof emu_state, "%s/state", state_dir);
  snprintf(jobs_path, sizeof jobs_path, "%s/jobs.csv", state_dir);
  setenv("PFI_EMU_STATE", emu_state, 1);
  setenv("PFI_FAKE_NVML_EMU", EMU_PARAMS, 1);
  clear_injections();
  return 0;
}

static int group_teardown(void **state) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", state_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static int test_setup(void **state) {
  clear_injections();
  return 0;
}

/*
 * A job library of one job, written by the test so that it does not depend
 * on the calibrated library: a dense 4-GPU pretraining job with 30 % of its
 * step memory-bound. Only its telemetry's transport is under test. (A
 * loader ignores columns it does not know.)
 */
static const char jobs_csv[] =
    "id,source,profile,arch,task,model,variant,gpus,grid,caps,params_b,"
    "active_b,seq_len,tokens_per_step,fb_gib,mem_share,comm_share,"
    "sm_power_w,mem_sm_weight,pfi_published,pfi_coarse_published\n"
    "nvml-test-job,emulated,h200,dense,pt,test-8b,v1,4,fine,"
    "200;300;400;500;600;700,8,8,4096,1048576,60,0.3,0.1,400,0.3,,\n";

static void pick_job(void) {
  FILE *f = fopen(jobs_path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(jobs_csv, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
  setenv("PFI_FAKE_NVML_JOBS", jobs_path, 1);
  snprintf(job_id, sizeof job_id, "nvml-test-job");
}

static struct pfi_device *open_nvml(const char *params) {
  struct pfi_device *dev = NULL;
  struct pfi_error err;
  int rc = pfi_device_open(&dev, "nvml", params, &err);
  if (rc != 0)
    fail_msg("opening nvml: %s (%d)", err.msg, rc);
  return dev;
}

static struct pfi_device *open_emu(void) {
  struct pfi_device *dev = NULL;
  struct pfi_error err;
  int rc = pfi_device_open(&dev, "emu", EMU_PARAMS, &err);
  if (rc != 0)
    fail_msg("opening emu: %s (%d)", err.msg, rc);
  return dev;
}

/* The fake's call counter, from the copy of the library already loaded. */
static long calls(const char *lib, const char *entry) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    fail_msg("%s is not loaded", lib);
  long (*fn)(const char *) =
      (long (*)(const char *))dlsym(h, "fake_nvml_calls");
  if (!fn)
    fail_msg("no fake_nvml_calls in %s", lib);
  long n = fn(entry);
  dlclose(h);
  return n;
}

static void set_cap_all(uint32_t mw) {
  struct pfi_device *emu = open_emu();
  struct pfi_error err;
  for (unsigned i = 0; i < NGPU; i++)
    assert_int_equal(pfi_device_set_cap(emu, i, mw, &err), 0);
  pfi_device_close(emu);
}

static void test_identity_and_limits(void **state) {
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  unsigned n = 0;
  assert_int_equal(pfi_device_count(dev, &n, &err), 0);
  ASSERT_EQ_INT(n, NGPU);
  const struct pfi_emu_profile *p = pfi_emu_profile_find("h200");
  assert_non_null(p);
  char name[128], uuid[128], uuid0[128];
  for (unsigned i = 0; i < n; i++) {
    assert_int_equal(pfi_device_name(dev, i, name, sizeof name, &err), 0);
    assert_string_equal(name, p->gpu_name);
    assert_int_equal(pfi_device_uuid(dev, i, uuid, sizeof uuid, &err), 0);
    assert_true(strncmp(uuid, "GPU-", 4) == 0);
    if (i == 0)
      snprintf(uuid0, sizeof uuid0, "%s", uuid);
    else
      assert_string_not_equal(uuid, uuid0);
    struct pfi_power_limits lim;
    assert_int_equal(pfi_device_limits(dev, i, &lim, &err), 0);
    /* H200 SXM: 200 W lowest limit, 700 W TDP, default = TDP. */
    ASSERT_EQ_INT(lim.min_mw, 200000);
    ASSERT_EQ_INT(lim.max_mw, 700000);
    ASSERT_EQ_INT(lim.default_mw, 700000);
  }
  assert_int_equal(pfi_device_name(dev, NGPU, name, sizeof name, &err),
                   PFI_ERANGE);
  pfi_device_close(dev);
}

static void test_set_get_persists(void **state) {
  set_cap_all(700000);
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  uint32_t mw = 0;
  assert_int_equal(pfi_device_set_cap(dev, 1, 450000, &err), 0);
  assert_int_equal(pfi_device_get_cap(dev, 1, &mw, &err), 0);
  ASSERT_EQ_INT(mw, 450000);
  assert_int_equal(pfi_device_enforced_cap(dev, 1, &mw, &err), 0);
  ASSERT_EQ_INT(mw, 450000);
  assert_int_equal(pfi_device_get_cap(dev, 0, &mw, &err), 0);
  ASSERT_EQ_INT(mw, 700000);
  pfi_device_close(dev);
  /* Another session, straight on the emulator, sees the change. */
  struct pfi_device *emu = open_emu();
  assert_int_equal(pfi_device_get_cap(emu, 1, &mw, &err), 0);
  ASSERT_EQ_INT(mw, 450000);
  pfi_device_close(emu);
  set_cap_all(700000);
}

static void test_v2_entry_points_first(void **state) {
  /* Holding a reference keeps the fake (and its counters) loaded after the
   * backend closes it. */
  void *hold = dlopen(fake_v2, RTLD_NOW | RTLD_LOCAL);
  assert_non_null(hold);
  long inits = calls(fake_v2, "nvmlInit_v2");
  long downs = calls(fake_v2, "nvmlShutdown");
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  struct pfi_sample s;
  assert_int_equal(pfi_device_sample(dev, 0, &s, &err), 0);
  ASSERT_EQ_INT(calls(fake_v2, "nvmlInit_v2"), inits + 1);
  ASSERT_EQ_INT(calls(fake_v2, "nvmlInit"), 0);
  assert_true(calls(fake_v2, "nvmlDeviceGetCount_v2") >= 1);
  ASSERT_EQ_INT(calls(fake_v2, "nvmlDeviceGetCount"), 0);
  assert_true(calls(fake_v2, "nvmlDeviceGetHandleByIndex_v2") >= NGPU);
  ASSERT_EQ_INT(calls(fake_v2, "nvmlDeviceGetHandleByIndex"), 0);
  assert_true(calls(fake_v2, "nvmlDeviceGetMemoryInfo_v2") >= 1);
  ASSERT_EQ_INT(calls(fake_v2, "nvmlDeviceGetMemoryInfo"), 0);
  assert_true(calls(fake_v2, "nvmlDeviceGetTemperatureV") >= 1);
  ASSERT_EQ_INT(calls(fake_v2, "nvmlDeviceGetTemperature"), 0);
  assert_true(pfi_sample_has(&s, PFI_FIELD_FB_USED));
  assert_true(pfi_sample_has(&s, PFI_FIELD_TEMP));
  pfi_device_close(dev);
  /* Every init is matched by a shutdown, and every GPM sample freed. */
  ASSERT_EQ_INT(calls(fake_v2, "nvmlShutdown"), downs + 1);
  ASSERT_EQ_INT(calls(fake_v2, "nvmlGpmSampleFree"),
                calls(fake_v2, "nvmlGpmSampleAlloc"));
  dlclose(hold);
}

static void test_v1_fallback(void **state) {
  setenv("PFI_NVML_LIB", fake_v1, 1);
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  struct pfi_sample s;
  unsigned n = 0;
  assert_int_equal(pfi_device_count(dev, &n, &err), 0);
  ASSERT_EQ_INT(n, NGPU);
  assert_int_equal(pfi_device_sample(dev, 2, &s, &err), 0);
  assert_true(calls(fake_v1, "nvmlInit") >= 1);
  assert_true(calls(fake_v1, "nvmlDeviceGetHandleByIndex") >= NGPU);
  assert_true(calls(fake_v1, "nvmlDeviceGetMemoryInfo") >= 1);
  assert_true(calls(fake_v1, "nvmlDeviceGetTemperature") >= 1);
  assert_true(pfi_sample_has(&s, PFI_FIELD_FB_USED));
  assert_true(pfi_sample_has(&s, PFI_FIELD_TEMP));
  pfi_device_close(dev);
}

/* The compute processes per GPU: the v3 entry point (nvmlProcessInfo_t),
 * retried with more room when 64 entries are not enough; the original one
 * (nvmlProcessInfo_v1_t, a smaller layout) on an old library; not
 * supported without either, nor on the emulator. */
static void test_processes(void **state) {
  char path[1200];
  snprintf(path, sizeof path, "%s/procs", state_dir);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fprintf(fp, "0 4100\n0 4101\n");
  for (unsigned i = 0; i < 70; i++)
    fprintf(fp, "1 %u\n", 5000 + i);
  fclose(fp);
  setenv("PFI_FAKE_NVML_PROCS", path, 1);
  const char *libs[] = {fake_v2, fake_v1};
  for (int v = 0; v < 2; v++) {
    setenv("PFI_NVML_LIB", libs[v], 1);
    void *hold = dlopen(libs[v], RTLD_NOW | RTLD_LOCAL);
    assert_non_null(hold);
    const char *entry = v == 0 ? "nvmlDeviceGetComputeRunningProcesses_v3"
                               : "nvmlDeviceGetComputeRunningProcesses";
    long before = calls(libs[v], entry);
    struct pfi_device *dev = open_nvml(NULL);
    struct pfi_error err;
    unsigned pids[100];
    size_t n = 0;
    assert_int_equal(pfi_device_processes(dev, 0, pids, 100, &n, &err), 0);
    ASSERT_EQ_INT(n, 2);
    ASSERT_EQ_INT(pids[0], 4100);
    ASSERT_EQ_INT(pids[1], 4101);
    assert_int_equal(pfi_device_processes(dev, 1, pids, 100, &n, &err), 0);
    ASSERT_EQ_INT(n, 70);
    for (unsigned i = 0; i < 70; i++)
      ASSERT_EQ_INT(pids[i], 5000 + i);
    /* Room for 3: the count says 70, three are written. */
    pids[3] = 0;
    assert_int_equal(pfi_device_processes(dev, 1, pids, 3, &n, &err), 0);
    ASSERT_EQ_INT(n, 70);
    ASSERT_EQ_INT(pids[2], 5002);
    ASSERT_EQ_INT(pids[3], 0);
    assert_int_equal(pfi_device_processes(dev, 2, pids, 100, &n, &err), 0);
    ASSERT_EQ_INT(n, 0);
    /* GPU 0 once, GPU 1 twice per call (64 entries were too few). */
    ASSERT_EQ_INT(calls(libs[v], entry) - before, 1 + 2 + 2 + 1);
    if (v == 0)
      ASSERT_EQ_INT(calls(libs[v], "nvmlDeviceGetComputeRunningProcesses"), 0);
    pfi_device_close(dev);
    dlclose(hold);
  }
  setenv("PFI_NVML_LIB", fake_min, 1);
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  unsigned pids[4];
  size_t n = 0;
  assert_int_equal(pfi_device_processes(dev, 0, pids, 4, &n, &err),
                   PFI_ENOTSUP);
  pfi_device_close(dev);
  dev = open_emu();
  assert_int_equal(pfi_device_processes(dev, 0, pids, 4, &n, &err),
                   PFI_ENOTSUP);
  pfi_device_close(dev);
}

/*
 * A library without the optional entry points: the session opens, reading
 * works, setting a limit is "not supported" naming the missing symbol,
 * fields without an entry point are "not valid", and messages fall back to
 * NVML's symbolic names without nvmlErrorString.
 */
static void test_minimal_library(void **state) {
  setenv("PFI_NVML_LIB", fake_min, 1);
  setenv("PFI_FAKE_NVML_FAIL", "nvmlDeviceGetEnforcedPowerLimit=4", 1);
  pick_job();
  setenv("PFI_FAKE_NVML_JOB", job_id, 1);
  struct pfi_device *dev = open_nvml("gpm_min_window=0");
  struct pfi_error err;
  struct pfi_power_limits lim;
  struct pfi_sample s;
  uint32_t mw = 0;
  assert_int_equal(pfi_device_limits(dev, 0, &lim, &err), 0);
  ASSERT_EQ_INT(lim.max_mw, 700000);
  assert_int_equal(pfi_device_set_cap(dev, 0, 500000, &err), PFI_ENOTSUP);
  assert_non_null(strstr(err.msg, "nvmlDeviceSetPowerManagementLimit"));
  assert_int_equal(pfi_device_get_cap(dev, 0, &mw, &err), 0);
  ASSERT_EQ_INT(mw, 700000);
  assert_int_equal(pfi_device_enforced_cap(dev, 0, &mw, &err), PFI_ENOPERM);
  assert_non_null(strstr(err.msg, "NVML_ERROR_NO_PERMISSION"));
  assert_int_equal(pfi_device_sample(dev, 0, &s, &err), 0);
  assert_true(pfi_sample_has(&s, PFI_FIELD_POWER));
  assert_true(pfi_sample_has(&s, PFI_FIELD_PCIE_TX)); /* instantaneous */
  assert_false(pfi_sample_has(&s, PFI_FIELD_ENERGY));
  assert_false(pfi_sample_has(&s, PFI_FIELD_THROTTLE_POWER));
  assert_false(pfi_sample_has(&s, PFI_FIELD_SM_ACTIVE));
  assert_false(pfi_sample_has(&s, PFI_FIELD_NVLINK_RX));
  pfi_device_close(dev);
}

/* A library that loads but is not NVML (the C math library, which every
 * pfi process has loaded already) fails the open, naming what is missing. */
static void test_not_nvml(void **state) {
  struct pfi_device *dev = NULL;
  struct pfi_error err;
  setenv("PFI_NVML_LIB", "libm.so.6", 1);
  assert_int_equal(pfi_device_open(&dev, "nvml", NULL, &err), PFI_ENOTSUP);
  assert_non_null(strstr(err.msg, "nvmlInit_v2"));
  assert_null(dev);
}

/* The lib= parameter wins over $PFI_NVML_LIB; unknown parameters fail. */
static void test_params(void **state) {
  char params[1100];
  struct pfi_device *dev = NULL;
  struct pfi_error err;
  setenv("PFI_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  snprintf(params, sizeof params, "lib=%s", fake_v2);
  assert_int_equal(pfi_device_open(&dev, "nvml", params, &err), 0);
  pfi_device_close(dev);
  dev = NULL;
  assert_int_equal(pfi_device_open(&dev, "nvml", "bogus=1", &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "bogus"));
  assert_int_equal(pfi_device_open(&dev, "nvml", "gpm_min_window=-1", &err),
                   PFI_EINVAL);
  assert_null(dev);
}

static void test_missing_library(void **state) {
  struct pfi_device *dev = NULL;
  struct pfi_error err;
  setenv("PFI_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  assert_int_equal(pfi_device_open(&dev, "nvml", NULL, &err), PFI_ENOTFOUND);
  assert_non_null(strstr(err.msg, "/nonexistent/libnvidia-ml.so.1"));
  assert_null(dev);
}

static void test_init_failure(void **state) {
  struct pfi_device *dev = NULL;
  struct pfi_error err;
  setenv("PFI_FAKE_NVML_INIT", "9", 1); /* NVML_ERROR_DRIVER_NOT_LOADED */
  assert_int_equal(pfi_device_open(&dev, "nvml", NULL, &err), PFI_ENOTFOUND);
  assert_non_null(strstr(err.msg, "driver is not loaded"));
  assert_null(dev);
}

/*
 * Training telemetry through NVML equals the emulator's own sample at the
 * same device time, within NVML's unit granularity: power in integer mW
 * (exact), clocks in integer MHz (0.5), utilizations in integer percent
 * (0.5), memory in MiB (0.5), temperature in integer C (0.5), GPM
 * activities as doubles (1e-9), NVLink and PCIe through GPM in MiB/s
 * doubles (1e-6 relative).
 */
static void test_telemetry_matches_emulator(void **state) {
  set_cap_all(700000);
  pick_job();
  setenv("PFI_FAKE_NVML_JOB", job_id, 1);
  setenv("PFI_FAKE_NVML_AT", "300", 1);
  struct pfi_device *dev = open_nvml("gpm_min_window=0");
  struct pfi_error err;
  struct pfi_sample s, e;
  assert_int_equal(pfi_device_sample(dev, 1, &s, &err), 0);

  struct pfi_emu_jobs jobs;
  assert_int_equal(pfi_emu_jobs_load(&jobs, jobs_path, &err), 0);
  const struct pfi_emu_job *j = pfi_emu_job_find(&jobs, job_id);
  assert_non_null(j);
  struct pfi_device *emu = open_emu();
  unsigned gpus[NGPU] = {0, 1, 2, 3};
  assert_int_equal(
      pfi_emu_attach(emu, gpus, NGPU, j, PFI_EMU_DEFAULT_SEED, &err), 0);
  assert_int_equal(pfi_device_wait(emu, 300, &err), 0);
  assert_int_equal(pfi_device_sample(emu, 1, &e, &err), 0);

  assert_true(pfi_sample_has(&e, PFI_FIELD_POWER));
  assert_true(pfi_sample_has(&s, PFI_FIELD_POWER));
  ASSERT_EQ_INT(s.power_mw, e.power_mw);
  ASSERT_NEAR(s.v[PFI_FIELD_POWER], e.power_mw / 1000.0, 1e-9);
  /* Under load, so the emulator is not idle. */
  assert_true(e.v[PFI_FIELD_POWER] > 150.0);
  static const struct {
    enum pfi_field f;
    double tol;
  } close_fields[] = {
      {PFI_FIELD_SM_CLOCK, 0.5},       {PFI_FIELD_MEM_CLOCK, 0.5},
      {PFI_FIELD_GPU_UTIL, 0.5},       {PFI_FIELD_MEM_COPY_UTIL, 0.5},
      {PFI_FIELD_FB_USED, 0.5},        {PFI_FIELD_TEMP, 0.5},
      {PFI_FIELD_SM_ACTIVE, 1e-9},     {PFI_FIELD_SM_OCCUPANCY, 1e-9},
      {PFI_FIELD_TENSOR_ACTIVE, 1e-9}, {PFI_FIELD_DRAM_ACTIVE, 1e-9},
  };
  for (size_t i = 0; i < sizeof close_fields / sizeof close_fields[0]; i++) {
    enum pfi_field f = close_fields[i].f;
    if (!pfi_sample_has(&e, f)) {
      /* Not modelled: must not appear out of nowhere. */
      assert_false(pfi_sample_has(&s, f));
      continue;
    }
    if (!pfi_sample_has(&s, f))
      fail_msg("field %s valid in emu but not through nvml", pfi_field_name(f));
    ASSERT_NEAR(s.v[f], e.v[f], close_fields[i].tol);
  }
  static const enum pfi_field rel_fields[] = {
      PFI_FIELD_NVLINK_TX, PFI_FIELD_NVLINK_RX, PFI_FIELD_PCIE_TX,
      PFI_FIELD_PCIE_RX};
  for (size_t i = 0; i < sizeof rel_fields / sizeof rel_fields[0]; i++) {
    enum pfi_field f = rel_fields[i];
    if (!pfi_sample_has(&e, f)) {
      assert_false(pfi_sample_has(&s, f));
      continue;
    }
    assert_true(pfi_sample_has(&s, f));
    ASSERT_NEAR(s.v[f], e.v[f], 1e-6 * (1.0 + e.v[f]));
  }
  /* The H200's HBM clock, from its specification. */
  ASSERT_NEAR(s.v[PFI_FIELD_MEM_CLOCK], 3201.0, 0.5);
  /* GPM delivered the Hopper activity metrics. */
  assert_true(pfi_sample_has(&s, PFI_FIELD_SM_ACTIVE));
  assert_true(pfi_sample_has(&s, PFI_FIELD_DRAM_ACTIVE));
  pfi_device_close(emu);
  pfi_emu_jobs_release(&jobs);
  pfi_device_close(dev);
}

/* Without GPM, activity metrics and NVLink are "not valid", never 0, and
 * PCIe falls back to the instantaneous counters. */
static void test_no_gpm(void **state) {
  pick_job();
  setenv("PFI_FAKE_NVML_JOB", job_id, 1);
  setenv("PFI_FAKE_NVML_NO_GPM", "1", 1);
  struct pfi_device *dev = open_nvml("gpm_min_window=0");
  struct pfi_error err;
  struct pfi_sample s;
  long pcie = calls(fake_v2, "nvmlDeviceGetPcieThroughput");
  assert_int_equal(pfi_device_sample(dev, 0, &s, &err), 0);
  /* Two reads, TX and RX, of the instantaneous PCIe counters. */
  ASSERT_EQ_INT(calls(fake_v2, "nvmlDeviceGetPcieThroughput"), pcie + 2);
  ASSERT_EQ_INT(calls(fake_v2, "nvmlGpmSampleGet"), 0);
  assert_false(pfi_sample_has(&s, PFI_FIELD_SM_ACTIVE));
  assert_false(pfi_sample_has(&s, PFI_FIELD_SM_OCCUPANCY));
  assert_false(pfi_sample_has(&s, PFI_FIELD_TENSOR_ACTIVE));
  assert_false(pfi_sample_has(&s, PFI_FIELD_DRAM_ACTIVE));
  assert_false(pfi_sample_has(&s, PFI_FIELD_NVLINK_TX));
  assert_true(pfi_sample_has(&s, PFI_FIELD_POWER));
  assert_true(pfi_sample_has(&s, PFI_FIELD_SM_CLOCK));
  pfi_device_close(dev);
}

/* GPM's query itself unsupported, and energy unsupported: those fields are
 * not valid and the sample still succeeds. */
static void test_unsupported_reads(void **state) {
  setenv("PFI_FAKE_NVML_FAIL",
         "nvmlGpmQueryDeviceSupport=3,nvmlDeviceGetTotalEnergyConsumption=3",
         1);
  struct pfi_device *dev = open_nvml("gpm_min_window=0");
  struct pfi_error err;
  struct pfi_sample s;
  assert_int_equal(pfi_device_sample(dev, 3, &s, &err), 0);
  assert_false(pfi_sample_has(&s, PFI_FIELD_SM_ACTIVE));
  assert_false(pfi_sample_has(&s, PFI_FIELD_ENERGY));
  ASSERT_EQ_INT(s.energy_mj, 0);
  assert_true(pfi_sample_has(&s, PFI_FIELD_POWER));
  pfi_device_close(dev);
}

static void test_permission_denied(void **state) {
  set_cap_all(700000);
  setenv("PFI_FAKE_NVML_FAIL", "nvmlDeviceSetPowerManagementLimit=4", 1);
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  uint32_t mw = 0;
  assert_int_equal(pfi_device_set_cap(dev, 0, 500000, &err), PFI_ENOPERM);
  assert_non_null(strstr(err.msg, "root or CAP_SYS_ADMIN"));
  assert_non_null(strstr(err.msg, "GPU 0"));
  /* Reading needs no privilege. */
  assert_int_equal(pfi_device_get_cap(dev, 0, &mw, &err), 0);
  ASSERT_EQ_INT(mw, 700000);
  pfi_device_close(dev);
}

/* The driver's own range check: the constraints claim 800 W but the GPU
 * takes at most 700 W, so the request passes pfi's check and NVML answers
 * INVALID_ARGUMENT, which is an out-of-range error. */
static void test_out_of_range(void **state) {
  set_cap_all(700000);
  setenv("PFI_FAKE_NVML_MAX_MW", "800000", 1);
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  struct pfi_power_limits lim;
  uint32_t mw = 0;
  assert_int_equal(pfi_device_limits(dev, 2, &lim, &err), 0);
  ASSERT_EQ_INT(lim.max_mw, 800000);
  assert_int_equal(pfi_device_set_cap(dev, 2, 750000, &err), PFI_ERANGE);
  assert_non_null(strstr(err.msg, "power-limit range"));
  /* Below the minimum, straight to the backend past pfi's own check. */
  const struct pfi_device_ops *ops = pfi_device_ops_of(dev);
  assert_int_equal(ops->set_cap(pfi_device_ctx(dev), 2, 100000, &err),
                   PFI_ERANGE);
  assert_int_equal(pfi_device_get_cap(dev, 2, &mw, &err), 0);
  ASSERT_EQ_INT(mw, 700000);
  pfi_device_close(dev);
}

static void test_gpu_lost(void **state) {
  /* Opening takes 2 device calls per GPU (GPM support, baseline sample). */
  setenv("PFI_FAKE_NVML_LOST_AFTER", "10", 1);
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  uint32_t mw = 0;
  int rc = 0, ok = 0;
  for (int i = 0; i < 10 && rc == 0; i++) {
    rc = pfi_device_get_cap(dev, 0, &mw, &err);
    ok += rc == 0;
  }
  ASSERT_EQ_INT(ok, 2); /* calls 9 and 10 */
  ASSERT_EQ_INT(rc, PFI_EGPULOST);
  assert_non_null(strstr(err.msg, "GPU 0"));
  assert_non_null(strstr(err.msg, "reset"));
  /* A lost GPU ends a sample instead of leaving fields "not valid". */
  struct pfi_sample s;
  assert_int_equal(pfi_device_sample(dev, 1, &s, &err), PFI_EGPULOST);
  assert_int_equal(pfi_device_set_cap(dev, 1, 500000, &err), PFI_EGPULOST);
  pfi_device_close(dev);
}

static void test_uninitialized(void **state) {
  setenv("PFI_FAKE_NVML_FAIL",
         "nvmlDeviceGetPowerManagementLimit=1,nvmlDeviceGetPowerUsage@2=1", 1);
  struct pfi_device *dev = open_nvml(NULL);
  struct pfi_error err;
  struct pfi_sample s;
  uint32_t mw = 0;
  assert_int_equal(pfi_device_get_cap(dev, 0, &mw, &err), PFI_EUNINIT);
  assert_non_null(strstr(err.msg, "not initialized"));
  assert_int_equal(pfi_device_sample(dev, 2, &s, &err), PFI_EUNINIT);
  assert_int_equal(pfi_device_sample(dev, 1, &s, &err), 0);
  pfi_device_close(dev);
}

/* A failed handle lookup fails the open and unloads cleanly. */
static void test_handle_failure(void **state) {
  setenv("PFI_FAKE_NVML_FAIL", "nvmlDeviceGetHandleByIndex_v2@3=15", 1);
  struct pfi_device *dev = NULL;
  struct pfi_error err;
  assert_int_equal(pfi_device_open(&dev, "nvml", NULL, &err), PFI_EGPULOST);
  assert_non_null(strstr(err.msg, "GPU 3"));
  assert_null(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_identity_and_limits, test_setup),
      cmocka_unit_test_setup(test_set_get_persists, test_setup),
      cmocka_unit_test_setup(test_v2_entry_points_first, test_setup),
      cmocka_unit_test_setup(test_v1_fallback, test_setup),
      cmocka_unit_test_setup(test_minimal_library, test_setup),
      cmocka_unit_test_setup(test_not_nvml, test_setup),
      cmocka_unit_test_setup(test_params, test_setup),
      cmocka_unit_test_setup(test_missing_library, test_setup),
      cmocka_unit_test_setup(test_init_failure, test_setup),
      cmocka_unit_test_setup(test_telemetry_matches_emulator, test_setup),
      cmocka_unit_test_setup(test_no_gpm, test_setup),
      cmocka_unit_test_setup(test_unsupported_reads, test_setup),
      cmocka_unit_test_setup(test_permission_denied, test_setup),
      cmocka_unit_test_setup(test_out_of_range, test_setup),
      cmocka_unit_test_setup(test_gpu_lost, test_setup),
      cmocka_unit_test_setup(test_uninitialized, test_setup),
      cmocka_unit_test_setup(test_handle_failure, test_setup),
      cmocka_unit_test_setup(test_processes, test_setup),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
