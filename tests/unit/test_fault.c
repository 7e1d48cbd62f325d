/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fault backend: calls pass through to the wrapped emu backend
 * unchanged, and exactly the calls the parameters name fail, with the
 * chosen code. Call numbers are counted by hand in each test.
 */
#include <stdlib.h>
#include <string.h>

#include "pfi/device.h"
#include "pfi/fault.h"
#include "testutil.h"

static char state_dir[] = "/tmp/pfi-test-fault-XXXXXX";

static int group_setup(void **state) {
  if (!mkdtemp(state_dir))
    return -1;
  setenv("PFI_EMU_STATE", state_dir, 1);
  return 0;
}

static int group_teardown(void **state) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", state_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static struct pfi_device *open_fault(const char *params) {
  struct pfi_device *dev = NULL;
  struct pfi_error err;
  int rc = pfi_device_open(&dev, "fault", params, &err);
  if (rc != 0)
    fail_msg("opening fault with '%s': %s (%d)", params, err.msg, rc);
  return dev;
}

static void test_transient_set(void **state) {
  struct pfi_device *dev =
      open_fault("fail_set_after=2,code=gpulost,inner_params=gpus=4");
  struct pfi_error err;
  assert_int_equal(pfi_device_set_cap(dev, 0, 500000, &err), 0); /* call 1 */
  assert_int_equal(pfi_device_set_cap(dev, 1, 500000, &err), 0); /* call 2 */
  assert_int_equal(pfi_device_set_cap(dev, 2, 500000, &err), PFI_EGPULOST);
  assert_non_null(strstr(err.msg, "injected transient failure on set_cap "
                                  "call 3 (GPU 2)"));
  assert_int_equal(pfi_device_set_cap(dev, 2, 500000, &err), 0); /* call 4 */
  /* What went through reached the emulator. */
  struct pfi_device *emu = NULL;
  uint32_t mw = 0;
  assert_int_equal(pfi_device_open(&emu, "emu", "gpus=4", &err), 0);
  for (unsigned i = 0; i < 3; i++) {
    assert_int_equal(pfi_device_get_cap(emu, i, &mw, &err), 0);
    ASSERT_EQ_INT(mw, 500000);
    assert_int_equal(pfi_device_set_cap(emu, i, 700000, &err), 0);
  }
  pfi_device_close(emu);
  pfi_device_close(dev);
}

static void test_persistent_get(void **state) {
  struct pfi_device *dev =
      open_fault("fail_get_after=1,mode=persistent,code=noperm");
  struct pfi_error err;
  uint32_t mw = 0;
  assert_int_equal(pfi_device_get_cap(dev, 0, &mw, &err), 0);
  ASSERT_EQ_INT(mw, 700000);
  assert_int_equal(pfi_device_enforced_cap(dev, 0, &mw, &err), PFI_ENOPERM);
  assert_int_equal(pfi_device_get_cap(dev, 0, &mw, &err), PFI_ENOPERM);
  assert_non_null(strstr(err.msg, "persistent"));
  /* Other kinds are not affected. */
  struct pfi_sample s;
  assert_int_equal(pfi_device_sample(dev, 0, &s, &err), 0);
  assert_true(pfi_sample_has(&s, PFI_FIELD_POWER));
  pfi_device_close(dev);
}

/* Only GPU 1's calls count and fail. */
static void test_gpu_filter(void **state) {
  struct pfi_device *dev = open_fault("fail_sample_after=1,gpu=1");
  struct pfi_error err;
  struct pfi_sample s;
  for (int k = 0; k < 3; k++)
    assert_int_equal(pfi_device_sample(dev, 0, &s, &err), 0);
  assert_int_equal(pfi_device_sample(dev, 1, &s, &err), 0);
  assert_int_equal(pfi_device_sample(dev, 1, &s, &err), PFI_EIO);
  assert_int_equal(pfi_device_sample(dev, 1, &s, &err), 0);
  pfi_device_close(dev);
}

/* fail_any_after counts every GPU operation; set_cap through the
 * validating wrapper is two (limits, then set). */
static void test_any(void **state) {
  struct pfi_device *dev = open_fault("fail_any_after=3,code=busy");
  struct pfi_error err;
  char name[128];
  uint32_t mw;
  assert_int_equal(pfi_device_name(dev, 0, name, sizeof name, &err), 0); /* 1 */
  assert_int_equal(pfi_device_get_cap(dev, 0, &mw, &err), 0);            /* 2 */
  assert_int_equal(pfi_device_set_cap(dev, 0, 600000, &err),
                   PFI_EBUSY); /* 3,4 */
  assert_non_null(strstr(err.msg, "call 4"));
  assert_int_equal(pfi_device_get_cap(dev, 0, &mw, &err), 0); /* 5 */
  ASSERT_EQ_INT(mw, 700000); /* the failed set changed nothing */
  pfi_device_close(dev);
}

/* A call that its own kind's rule fails still counts toward
 * fail_any_after. set_cap is two operations (the limits check, then the
 * set): any-calls 1 and 2, the set failing as set call 1; the name is
 * any-call 3, past fail_any_after=2. */
static void test_any_counts_failed_calls(void **state) {
  struct pfi_device *dev =
      open_fault("fail_set_after=0,fail_any_after=2,code=busy");
  struct pfi_error err;
  char name[128];
  assert_int_equal(pfi_device_set_cap(dev, 0, 600000, &err), PFI_EBUSY);
  assert_non_null(strstr(err.msg, "set_cap call 1"));
  assert_int_equal(pfi_device_name(dev, 0, name, sizeof name, &err), PFI_EBUSY);
  assert_non_null(strstr(err.msg, "call 3"));
  pfi_device_close(dev);
}

static void test_inner(void **state) {
  struct pfi_device *dev =
      open_fault("inner=emu,inner_params=profile=h100,gpus=2");
  struct pfi_error err;
  unsigned n = 0;
  char name[128];
  assert_int_equal(pfi_device_count(dev, &n, &err), 0);
  ASSERT_EQ_INT(n, 2);
  assert_int_equal(pfi_device_name(dev, 0, name, sizeof name, &err), 0);
  assert_non_null(strstr(name, "H100"));
  struct pfi_device *in = pfi_fault_inner(dev);
  assert_non_null(in);
  assert_string_equal(pfi_device_ops_of(in)->name, "emu");
  assert_null(pfi_fault_inner(in));
  pfi_device_close(dev);
}

static void test_bad_params(void **state) {
  static const char *const bad[] = {
      "fail_set_after=x", "fail_set_after=-1", "mode=sometimes", "code=boom",
      "inner=fault",      "bogus=1",           "gpu=",           "inner=",
      "fail_set_after",   "inner=nosuch"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct pfi_device *dev = NULL;
    struct pfi_error err;
    int rc = pfi_device_open(&dev, "fault", bad[i], &err);
    if (rc == 0)
      fail_msg("'%s' was accepted", bad[i]);
    assert_null(dev);
    assert_true(rc == PFI_EINVAL || rc == PFI_ENOTFOUND);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transient_set),
      cmocka_unit_test(test_persistent_get),
      cmocka_unit_test(test_gpu_filter),
      cmocka_unit_test(test_any),
      cmocka_unit_test(test_any_counts_failed_calls),
      cmocka_unit_test(test_inner),
      cmocka_unit_test(test_bad_params),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
