/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The sweep harness as a library, on the emulator in virtual time: sample
 * counts, the stop flag (what the signal handlers set), cap events, resume,
 * and the GPU-list parser. */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/device.h"
#include "pfi/store.h"
#include "pfi/sweep.h"
#include "testutil.h"

static char dir[64];
static const char *const G = "moe-ft-qwen30ba3b-x8";

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/pfi-test-sweep-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  char s[128];
  snprintf(s, sizeof s, "%s/emu", dir);
  return setenv("PFI_EMU_STATE", s, 1);
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Every GPU of the emulated 8-GPU H200 node at `mw`, or read them. */
static void set_all(uint32_t mw) {
  struct pfi_device *dev;
  struct pfi_error err;
  assert_int_equal(pfi_device_open(&dev, "emu", "gpus=8", &err), 0);
  for (unsigned g = 0; g < 8; g++)
    assert_int_equal(pfi_device_set_cap(dev, g, mw, &err), 0);
  pfi_device_close(dev);
}

static void assert_all(uint32_t mw) {
  struct pfi_device *dev;
  struct pfi_error err;
  assert_int_equal(pfi_device_open(&dev, "emu", "gpus=8", &err), 0);
  for (unsigned g = 0; g < 8; g++) {
    uint32_t got = 0;
    assert_int_equal(pfi_device_get_cap(dev, g, &got, &err), 0);
    ASSERT_EQ_INT(got, mw);
  }
  pfi_device_close(dev);
}

struct watch {
  volatile sig_atomic_t stop;
  long samples[2];
  long stop_after; /* samples of cap index 1; <0: never */
  double power_at_300;
};

static void on_progress(const struct pfi_sweep_progress *p, void *arg) {
  struct watch *w = arg;
  if (strcmp(p->event, "sample") != 0)
    return;
  w->samples[p->cap_index]++;
  if (p->cap_index == 0 && p->elapsed_s > 1000)
    w->power_at_300 = p->power_w;
  if (p->cap_index == 1 && w->stop_after >= 0 && w->samples[1] >= w->stop_after)
    w->stop = 1; /* as a SIGINT handler would */
}

/* Counts rows with SQL of the test's own on a second, read-only
 * connection (the store gives out no handle). */
static long count(struct pfi_store *st, const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  long n = -1;
  if (sqlite3_open_v2(pfi_store_path(st), &db, SQLITE_OPEN_READONLY, NULL) ==
          SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
  return n;
}

static void stop_restore_resume(void **state) {
  (void)state;
  set_all(650000);
  char db[128];
  snprintf(db, sizeof db, "%s/s.db", dir);
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, db, PFI_STORE_CREATE, &err), 0);
  const double caps[] = {300, 700};
  struct watch w = {.stop_after = 20};
  struct pfi_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.backend = "emu";
  o.caps_w = caps;
  o.n_caps = 2;
  o.emulate = G;
  o.seed = 1;
  o.stop = &w.stop;
  o.progress = on_progress;
  o.progress_arg = &w;
  struct pfi_sweep_result res;
  assert_int_equal(pfi_sweep_run(st, &o, &res, &err), PFI_EINTR);
  /* 30 minutes at 5 s: 360 samples, then 20 before the stop. */
  ASSERT_EQ_INT(w.samples[0], 360);
  ASSERT_EQ_INT(w.samples[1], 20);
  ASSERT_EQ_INT(res.runs_done, 1);
  /* An 8-GPU job capped at 300 W draws at most 8 x 300 W. */
  assert_true(w.power_at_300 > 0 && w.power_at_300 <= 2400 + 1e-9);
  assert_all(650000);
  ASSERT_EQ_INT(count(st, "select count(*) from runs where state='complete'"),
                1);
  ASSERT_EQ_INT(
      count(st, "select count(*) from runs where state='interrupted'"), 1);
  ASSERT_EQ_INT(count(st, "select count(*) from cap_ledger"), 0);
  /* Each run: 8 caps recorded, set, read back and restored. */
  ASSERT_EQ_INT(count(st, "select count(*) from cap_events where "
                          "action='restore' and mw=650000"),
                16);
  ASSERT_EQ_INT(count(st, "select count(*) from cap_events where "
                          "action='readback' and mw=300000"),
                8);
  /* One row per instant of the 8 GPUs' samples (schema 2). */
  ASSERT_EQ_INT(count(st, "select count(*) from samples where run_id=1"), 360);
  ASSERT_EQ_INT(count(st, "select sum(gpus) from samples where run_id=1"),
                360 * 8);
  ASSERT_EQ_INT(count(st, "select count(*) from steps where run_id=1"), 360);
  /* Resume: the complete 300 W run is skipped. */
  w.stop = 0;
  w.stop_after = -1;
  w.samples[0] = w.samples[1] = 0;
  assert_int_equal(pfi_sweep_run(st, &o, &res, &err), 0);
  ASSERT_EQ_INT(res.runs_skipped, 1);
  ASSERT_EQ_INT(res.runs_done, 1);
  ASSERT_EQ_INT(w.samples[0], 0);
  ASSERT_EQ_INT(w.samples[1], 360);
  assert_all(650000);
  /* Another seed in the same store is refused before anything changes. */
  o.seed = 2;
  assert_int_equal(pfi_sweep_run(st, &o, &res, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "seed 1"));
  pfi_store_close(st);
}

static void bad_requests(void **state) {
  (void)state;
  char db[128];
  snprintf(db, sizeof db, "%s/b.db", dir);
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, db, PFI_STORE_CREATE, &err), 0);
  const double caps[] = {100};
  struct pfi_sweep_opts o;
  memset(&o, 0, sizeof o);
  o.caps_w = caps;
  o.n_caps = 1;
  assert_int_equal(pfi_sweep_run(st, &o, NULL, &err), PFI_EINVAL); /* no job */
  o.emulate = G;
  set_all(650000);
  /* 100 W is below the H200's minimum: refused before any change. */
  assert_int_equal(pfi_sweep_run(st, &o, NULL, &err), PFI_ERANGE);
  assert_all(650000);
  ASSERT_EQ_INT(count(st, "select count(*) from cap_events"), 0);
  o.emulate = "no-such-group";
  assert_int_equal(pfi_sweep_run(st, &o, NULL, &err), PFI_ENOTFOUND);
  o.emulate = G;
  o.backend = "nvml";
  assert_int_equal(pfi_sweep_run(st, &o, NULL, &err), PFI_EINVAL);
  pfi_store_close(st);
}

static void gpu_lists(void **state) {
  (void)state;
  unsigned *g;
  size_t n;
  struct pfi_error err;
  assert_int_equal(pfi_sweep_parse_gpus("0-2,5", &g, &n, &err), 0);
  ASSERT_EQ_INT(n, 4);
  ASSERT_EQ_INT(g[2], 2);
  ASSERT_EQ_INT(g[3], 5);
  free(g);
  assert_int_equal(pfi_sweep_parse_gpus("all", &g, &n, &err), 0);
  assert_null(g);
  static const char *const bad[] = {"",   "1,,2", "3-1",     "1,1", "a",
                                    "-1", "1-",   "0-99999", "1;2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(pfi_sweep_parse_gpus(bad[i], &g, &n, &err), PFI_EINVAL);
}

/* The default job name: the word that identifies the job (worked out by
 * hand from the rules in include/pfi/sweep.h), '-', 8 hex digits. The hash
 * of {"a", NULL}, from a reference implementation (Python's integers):
 * FNV-1a 64 of the bytes 'a', 0 (offset basis 0xcbf29ce484222325 ^ 0x61,
 * times the prime 0x100000001b3 mod 2^64, then ^ 0 and times the prime
 * again; of 'a' alone it is 0xaf63dc4c8601ec8c, the published test
 * vector) is 0x089be207b544f1e4; folded, 0x089be207 ^ 0xb544f1e4 =
 * 0xbddf13e3. */
static void job_names(void **state) {
  (void)state;
  static const struct {
    const char *argv[10];
    const char *word;
  } cases[] = {
      {{"python3", "-X", "dev", "-u", "/x/train.py", "--lr", "3", NULL},
       "train"},
      {{"env", "A=1", "-u", "B", "python3", "-m", "pkg.train", NULL},
       "pkg.train"},
      {{"python", "-m", "torch.distributed.run", "--nproc_per_node=2", "x.py",
        NULL},
       "x"},
      {{"torchrun", "--nproc-per-node", "8", "run.py", NULL}, "run"},
      {{"bash", "go.sh", "1", NULL}, "go"},
      {{"python3", "-c", "print(1)", NULL}, "python3"},
      {{"/usr/bin/app", "--x", "y.py", NULL}, "app"},
      {{"python3.11", "t.py", NULL}, "t"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[128];
    pfi_sweep_job_name((char *const *)cases[i].argv, buf, sizeof buf);
    size_t l = strlen(cases[i].word);
    assert_int_equal(strlen(buf), l + 9);
    assert_memory_equal(buf, cases[i].word, l);
    assert_int_equal(buf[l], '-');
    assert_int_equal(strspn(buf + l + 1, "0123456789abcdef"), 8);
  }
  /* Another argument, another name; the same words, the same name. */
  char a[128], b[128], c[128];
  char *const one[] = {"python3", "t.py", "--lr", "1", NULL};
  char *const two[] = {"python3", "t.py", "--lr", "2", NULL};
  pfi_sweep_job_name(one, a, sizeof a);
  pfi_sweep_job_name(two, b, sizeof b);
  pfi_sweep_job_name(one, c, sizeof c);
  assert_string_not_equal(a, b);
  assert_string_equal(a, c);
  char *const lone[] = {"a", NULL};
  pfi_sweep_job_name(lone, a, sizeof a);
  assert_string_equal(a, "a-bddf13e3");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stop_restore_resume),
      cmocka_unit_test(bad_requests),
      cmocka_unit_test(gpu_lists),
      cmocka_unit_test(job_names),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
