/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Per-run clocks from a hand-made trace store (pfi_trace_mechanism). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "pfi/trace.h"
#include "pfi/store.h"

/* Adds a run of `job` at `cap` with 20 samples per GPU: 2 warmup (frame
 * buffer 1000 MiB), 2 startup (loaded, utilization 0), 16 training
 * (utilization 90 %) whose SM clock is base + 10 i, power 300 + i, memory
 * clock 3201. GPU 1 reads 500 MHz higher, to show that only the first GPU
 * counts. When `invalid_top` is set, the highest SM clock sample is marked
 * not valid (and holds a wild value). */
static int64_t add_run(struct pfi_store *st, const char *job, double cap,
                       const char *state, double base, int invalid_top) {
  struct pfi_error err;
  struct pfi_run_info info;
  memset(&info, 0, sizeof info);
  snprintf(info.job, sizeof info.job, "%s", job);
  snprintf(info.source, sizeof info.source, "emulated");
  info.cap_w = cap;
  info.gpus = 2;
  info.exit_status = -1;
  assert_int_equal(pfi_store_run_begin(st, &info, &err), 0);
  assert_int_equal(pfi_store_begin(st, &err), 0);
  for (unsigned gpu = 0; gpu < 2; gpu++)
    for (int k = 0; k < 20; k++) {
      struct pfi_sample s;
      memset(&s, 0, sizeof s);
      s.t_s = 5.0 * k;
      int i = k - 4; /* training index */
      s.v[PFI_FIELD_FB_USED] = k < 2 ? 1000 : 20000;
      s.v[PFI_FIELD_GPU_UTIL] = k < 4 ? 0 : 90;
      s.v[PFI_FIELD_SM_CLOCK] = (k < 4 ? 300 : base + 10 * i) + 500 * gpu;
      s.v[PFI_FIELD_MEM_CLOCK] = 3201;
      s.v[PFI_FIELD_POWER] = k < 4 ? 80 : 300 + i;
      s.valid = (1u << PFI_FIELD_FB_USED) | (1u << PFI_FIELD_GPU_UTIL) |
                (1u << PFI_FIELD_SM_CLOCK) | (1u << PFI_FIELD_MEM_CLOCK) |
                (1u << PFI_FIELD_POWER);
      if (invalid_top && i == 15) {
        s.v[PFI_FIELD_SM_CLOCK] = 9999;
        s.valid &= ~(1u << PFI_FIELD_SM_CLOCK);
      }
      assert_int_equal(pfi_store_add_sample(st, info.id, gpu, &s, &err), 0);
    }
  assert_int_equal(pfi_store_commit(st, &err), 0);
  assert_int_equal(pfi_store_run_end(st, info.id, state, 100, 0, &err), 0);
  return info.id;
}

static void test_mechanism(void **state) {
  (void)state;
  char dir[] = "/tmp/pfi-test-mech-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char db[256], csv[256];
  snprintf(db, sizeof db, "%s/t.db", dir);
  snprintf(csv, sizeof csv, "%s/mechanism.csv", dir);
  struct pfi_store *st = NULL;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, db, PFI_STORE_CREATE, &err), 0);
  add_run(st, "j", 200, PFI_RUN_COMPLETE, 1000, 1);
  add_run(st, "j", 700, PFI_RUN_COMPLETE, 1500, 0);
  add_run(st, "j", 700, PFI_RUN_COMPLETE, 1600, 0); /* newer: kept */
  add_run(st, "j", 500, PFI_RUN_FAILED, 1200, 0);   /* not complete */
  int rows = pfi_trace_mechanism(st, csv, &err);
  if (rows < 0)
    fail_msg("pfi_trace_mechanism: %s", err.msg);
  assert_int_equal(rows, 2);
  pfi_store_close(st);

  FILE *fp = fopen(csv, "r");
  assert_non_null(fp);
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  buf[n] = '\0';
  fclose(fp);
  /* Worked by hand. 16 training samples, top 10 % = ceil(1.6) = 2 values.
   * Cap 200: the top SM sample (1150) is not valid, so the top two of the
   * 15 valid ones are 1140 and 1130: 1135; power: 315 and 314: 314.5.
   * Cap 700 (newest complete run, base 1600): 1750 and 1740: 1745. The
   * memory clock is 3201 throughout; GPU 1 is never read. */
  assert_string_equal(buf, "job,cap_w,sm_clock_mhz,mem_clock_mhz,power_w,"
                           "source\n"
                           "j,200,1135,3201,314.5,emulated\n"
                           "j,700,1745,3201,314.5,emulated\n");
  unlink(csv);
  unlink(db);
  char side[300];
  snprintf(side, sizeof side, "%s-wal", db);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", db);
  unlink(side);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_mechanism)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
