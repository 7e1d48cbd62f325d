/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The trace store, its cap ledger, and summaries of hand-made traces. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/store.h"
#include "pfi/trace.h"
#include "testutil.h"

static char dir[64];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/pfi-test-store-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", dir, name);
}

static void ledger(void **state) {
  (void)state;
  char p[128];
  path_of(p, sizeof p, "ledger.db");
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_CREATE, &err), 0);
  struct pfi_saved_cap c[2];
  memset(c, 0, sizeof c);
  for (int i = 0; i < 2; i++) {
    snprintf(c[i].backend, sizeof c[i].backend, "emu");
    c[i].gpu = (unsigned)i;
    c[i].cap_mw = 700000 - 1000 * i;
  }
  assert_int_equal(pfi_store_caps_record(st, c, 2, &err), 0);
  /* A second record (as after a crash, when the GPU holds a sweep cap)
   * keeps the first, original cap. */
  c[0].cap_mw = 200000;
  assert_int_equal(pfi_store_caps_record(st, c, 1, &err), 0);
  pfi_store_close(st);
  assert_int_equal(pfi_store_open(&st, p, 0, &err), 0);
  struct pfi_saved_cap *got;
  size_t n;
  assert_int_equal(pfi_store_caps_pending(st, &got, &n, &err), 0);
  ASSERT_EQ_INT(n, 2);
  ASSERT_EQ_INT(got[0].cap_mw, 700000);
  ASSERT_EQ_INT(got[1].cap_mw, 699000);
  free(got);
  assert_int_equal(pfi_store_caps_clear(st, "emu", 0, &err), 0);
  assert_int_equal(pfi_store_caps_pending(st, &got, &n, &err), 0);
  ASSERT_EQ_INT(n, 1);
  ASSERT_EQ_INT(got[0].gpu, 1);
  free(got);
  /* Runs: find complete, mark running as interrupted. */
  struct pfi_run_info ri;
  memset(&ri, 0, sizeof ri);
  snprintf(ri.job, sizeof ri.job, "j");
  snprintf(ri.source, sizeof ri.source, "emulated");
  ri.cap_w = 300;
  ri.gpus = 1;
  assert_int_equal(pfi_store_run_begin(st, &ri, &err), 0);
  int64_t id;
  assert_int_equal(pfi_store_run_find_complete(st, "j", 300, &id, &err), 0);
  assert_int_equal(pfi_store_run_end(st, ri.id, PFI_RUN_COMPLETE, 10, 0, &err),
                   0);
  assert_int_equal(pfi_store_run_find_complete(st, "j", 300, &id, &err), 1);
  ASSERT_EQ_INT(id, ri.id);
  assert_int_equal(pfi_store_run_begin(st, &ri, &err), 0);
  assert_int_equal(pfi_store_runs_mark_interrupted(st, &err), 1);
  char v[32];
  assert_int_equal(pfi_store_meta_get(st, "schema", v, sizeof v, &err), 1);
  assert_string_equal(v, "2");
  pfi_store_close(st);
  /* Not a store: a text file and a missing file. */
  path_of(p, sizeof p, "text.db");
  FILE *fp = fopen(p, "w");
  fputs("job,cap_w\nx,1\n", fp);
  fclose(fp);
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_CREATE, &err), PFI_EDB);
  path_of(p, sizeof p, "missing.db");
  assert_int_equal(pfi_store_open(&st, p, 0, &err), PFI_EIO);
  /* Another program's SQLite file is refused and left as it was. */
  path_of(p, sizeof p, "other.db");
  sqlite3 *db;
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE foo(x)", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_CREATE, &err), PFI_EDB);
  assert_non_null(strstr(err.msg, "another program"));
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master",
                                      -1, &q, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  ASSERT_EQ_INT(sqlite3_column_int(q, 0), 1);
  sqlite3_finalize(q);
  sqlite3_close(db);
}

/*
 * Two runs of one 1-GPU job, 20 samples a second apart:
 *   t = 1, 2     frame buffer 5000 MiB (warmup)
 *   t = 3, 4     loaded, utilization 0 (startup)
 *   t = 5..20    utilization 90 (training), except t = 10 at 10 % (pause)
 * Training samples: t = 5..9, 11..20, m = 15; top 10 % = ceil(1.5) = 2
 * samples, t = 19 and 20. Power = base + t, throughput = rate + t, so the
 * summaries are base + 19.5 and rate + 19.5, computed by hand.
 */
static void add_run(struct pfi_store *st, double cap, double base,
                    double rate) {
  struct pfi_error err;
  struct pfi_run_info ri;
  memset(&ri, 0, sizeof ri);
  snprintf(ri.job, sizeof ri.job, "hand");
  snprintf(ri.arch, sizeof ri.arch, "moe");
  snprintf(ri.task, sizeof ri.task, "ft");
  snprintf(ri.source, sizeof ri.source, "emulated");
  ri.cap_w = cap;
  ri.gpus = 1;
  assert_int_equal(pfi_store_run_begin(st, &ri, &err), 0);
  assert_int_equal(pfi_store_begin(st, &err), 0);
  for (int t = 1; t <= 20; t++) {
    struct pfi_sample s;
    memset(&s, 0, sizeof s);
    s.t_s = t;
    s.v[PFI_FIELD_FB_USED] = t <= 2 ? 5000 : 20000;
    s.v[PFI_FIELD_GPU_UTIL] = t <= 4 ? 0 : t == 10 ? 10 : 90;
    s.v[PFI_FIELD_POWER] = base + t;
    s.v[PFI_FIELD_DRAM_ACTIVE] = 0.5;
    s.v[PFI_FIELD_MEM_COPY_UTIL] = 40;
    s.v[PFI_FIELD_SM_ACTIVE] = 0.8;
    s.v[PFI_FIELD_TENSOR_ACTIVE] = 0.4;
    s.v[PFI_FIELD_SM_CLOCK] = 1500;
    s.v[PFI_FIELD_NVLINK_TX] = 2e9;
    s.valid = (1u << PFI_FIELD_FB_USED) | (1u << PFI_FIELD_GPU_UTIL) |
              (1u << PFI_FIELD_POWER) | (1u << PFI_FIELD_DRAM_ACTIVE) |
              (1u << PFI_FIELD_MEM_COPY_UTIL) | (1u << PFI_FIELD_SM_ACTIVE) |
              (1u << PFI_FIELD_TENSOR_ACTIVE) | (1u << PFI_FIELD_SM_CLOCK) |
              (1u << PFI_FIELD_NVLINK_TX);
    assert_int_equal(pfi_store_add_sample(st, ri.id, 0, &s, &err), 0);
    struct pfi_step sp = {.t_s = t,
                          .job_t_s = NAN,
                          .tokens = NAN,
                          .tokens_per_s = rate + t,
                          .step = t,
                          .loss = NAN,
                          .mfu = NAN};
    assert_int_equal(pfi_store_add_step(st, ri.id, &sp, &err), 0);
  }
  assert_int_equal(pfi_store_commit(st, &err), 0);
  assert_int_equal(pfi_store_run_end(st, ri.id, PFI_RUN_COMPLETE, 20, 0, &err),
                   0);
}

static void summarize_by_hand(void **state) {
  (void)state;
  char p[128], out[128], f[160];
  path_of(p, sizeof p, "sum.db");
  path_of(out, sizeof out, "out");
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_CREATE, &err), 0);
  add_run(st, 700, 100, 1000);
  add_run(st, 300, 50, 500);
  assert_int_equal(pfi_store_meta_set(st, "sm_clock_max_mhz", "2000", &err), 0);
  long skipped = -1, nocurve = -1;
  struct pfi_summary_opts so;
  pfi_summary_opts_init(&so);
  so.runs_skipped = &skipped;
  so.jobs_without_curve = &nocurve;
  assert_int_equal(pfi_trace_summarize(st, out, &so, &err), 1);
  ASSERT_EQ_INT(skipped, 0);
  ASSERT_EQ_INT(nocurve, 0);
  snprintf(f, sizeof f, "%s/curves.csv", out);
  struct pfi_curveset cs;
  assert_int_equal(pfi_curveset_read(&cs, f, NULL, &err), 0);
  ASSERT_EQ_INT(cs.n, 1);
  ASSERT_EQ_INT(cs.c[0].n, 2);
  /* Exact to print precision (%.10g of numbers < 1e4). */
  ASSERT_NEAR(cs.c[0].pts[0].power_w, 69.5, 1e-9);
  ASSERT_NEAR(cs.c[0].pts[0].tokens_per_s, 519.5, 1e-9);
  ASSERT_NEAR(cs.c[0].pts[1].power_w, 119.5, 1e-9);
  ASSERT_NEAR(cs.c[0].pts[1].tokens_per_s, 1019.5, 1e-9);
  /* Standard error of the aggregate's own samples: of the 15 training
   * values 105..120 without 110, the top ceil(0.1 * 15) = 2 are 120 and
   * 119; by hand, sample sd sqrt(0.5) = 0.70711, sem 0.70711 / sqrt(2) =
   * 0.5. */
  ASSERT_NEAR(cs.c[0].pts[1].power_sd_w, 0.5, 1e-9);
  pfi_curveset_release(&cs);
  snprintf(f, sizeof f, "%s/features.csv", out);
  struct pfi_table t;
  assert_int_equal(pfi_table_load(&t, f, &err), 0);
  static const char *const cols[] = {"job",
                                     "arch",
                                     "task",
                                     "gpus",
                                     "dram_active",
                                     "mem_copy_util",
                                     "dram_copy_product",
                                     "sm_active",
                                     "tensor_active",
                                     "tensor_sm_ratio",
                                     "dram_sm_ratio",
                                     "arithmetic_intensity",
                                     "nvlink_tx_gbps",
                                     "nvlink_rx_gbps",
                                     "pcie_tx_gbps",
                                     "pcie_rx_gbps",
                                     "power_w",
                                     "sm_clock_mhz",
                                     "clock_fraction",
                                     "gpu_util",
                                     "fb_used_gib",
                                     "gpu_temp_c",
                                     "source"};
  ASSERT_EQ_INT(t.ncols, sizeof cols / sizeof cols[0]);
  for (size_t i = 0; i < t.ncols; i++)
    assert_string_equal(t.header[i], cols[i]);
  ASSERT_EQ_INT(t.nrows, 1);
  assert_string_equal(pfi_table_cell(&t, 0, 0), "hand");
  assert_string_equal(pfi_table_cell(&t, 0, 1), "moe");
  double v;
#define COL(name, want, tol)                                                   \
  do {                                                                         \
    assert_int_equal(                                                          \
        pfi_table_double(&t, 0, pfi_table_find(&t, name), &v, &err), 0);       \
    ASSERT_NEAR(v, want, tol);                                                 \
  } while (0)
  COL("dram_copy_product", 20, 1e-9);     /* 0.5 x 40 */
  COL("tensor_sm_ratio", 0.5, 1e-9);      /* 0.4 / 0.8 */
  COL("dram_sm_ratio", 0.625, 1e-9);      /* 0.5 / 0.8 */
  COL("arithmetic_intensity", 0.8, 1e-9); /* 0.4 / 0.5 */
  COL("nvlink_tx_gbps", 2, 1e-9);         /* 2e9 B/s */
  COL("power_w", 119.5, 1e-9);            /* uncapped run, top 2 */
  COL("clock_fraction", 0.75, 1e-9);      /* 1500 / 2000 */
  COL("fb_used_gib", 20000.0 / 1024, 1e-9);
  COL("gpu_util", 90, 1e-9);
#undef COL
  /* Fields never valid are empty, not 0. */
  assert_string_equal(pfi_table_cell(&t, 0, pfi_table_find(&t, "gpu_temp_c")),
                      "");
  assert_string_equal(pfi_table_cell(&t, 0, pfi_table_find(&t, "source")),
                      "emulated");
  pfi_table_release(&t);
  /* Export: 40 rows. */
  snprintf(f, sizeof f, "%s/export.csv", out);
  FILE *fp = fopen(f, "w");
  ASSERT_EQ_INT(pfi_trace_export(st, fp, &err), 40);
  fclose(fp);
  /* Thresholds move the phases: at 95 % nothing is training. */
  so.train_util_pct = 95;
  assert_int_equal(pfi_trace_summarize(st, out, &so, &err), PFI_ENOTFOUND);
  ASSERT_EQ_INT(skipped, 2);
  pfi_store_close(st);
}

/* Node power beside two hand-made runs (add_run): at every instant but t =
 * 15, node_w = 2 x GPU power + 100 (gpu_w = base + t, other = base + t +
 * 100). Its aggregate takes the same training-phase instants as power's:
 * the top 2 are t = 19 and 20, so node power is 2 (base + 19.5) + 100 =
 * 339 (base 100) and 239 (base 50), its standard error sd(2 (base + 19),
 * 2 (base + 20)) / sqrt(2) = sqrt(2) / sqrt(2) = 1, all by hand. */
static void node_power_by_hand(void **state) {
  (void)state;
  char p[128], out[128], f[160];
  path_of(p, sizeof p, "node.db");
  path_of(out, sizeof out, "nout");
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_CREATE, &err), 0);
  add_run(st, 700, 100, 1000);
  add_run(st, 300, 50, 500);
  const double base[3] = {0, 100, 50}; /* by run id */
  assert_int_equal(pfi_store_begin(st, &err), 0);
  for (int64_t run = 1; run <= 2; run++)
    for (int t = 1; t <= 20; t++) {
      if (t == 15)
        continue;
      double g = base[run] + t;
      struct pfi_node_power np = {t, g, g + 100, 2 * g + 100,
                                  PFI_NODE_SOURCE_EMULATED};
      assert_int_equal(pfi_store_add_node_power(st, run, &np, &err), 0);
    }
  struct pfi_node_power bad = {30, 1, 1, NAN, PFI_NODE_SOURCE_EMULATED};
  assert_int_equal(pfi_store_add_node_power(st, 1, &bad, &err), PFI_EINVAL);
  assert_int_equal(pfi_store_commit(st, &err), 0);
  /* Read back: 19 rows of run 2 by time, as written. */
  struct pfi_store_iter *it;
  struct pfi_node_power np;
  assert_int_equal(pfi_store_node_power_open(st, 2, &it, &err), 0);
  int n = 0, r;
  while ((r = pfi_store_node_power_next(it, &np, &err)) == 1) {
    if (n == 0) {
      ASSERT_NEAR(np.t_s, 1, 0);
      ASSERT_NEAR(np.gpu_w, 51, 0);
      ASSERT_NEAR(np.other_w, 151, 0);
      ASSERT_NEAR(np.node_w, 202, 0);
      assert_string_equal(np.source, "emulated");
    }
    n++;
  }
  assert_int_equal(r, 0);
  ASSERT_EQ_INT(n, 19);
  pfi_store_iter_close(it);
  assert_int_equal(pfi_trace_summarize(st, out, NULL, &err), 1);
  snprintf(f, sizeof f, "%s/node_curves.csv", out);
  struct pfi_curveset cs;
  assert_int_equal(pfi_curveset_read(&cs, f, PFI_CURVE_NODE_POWER_MAP, &err),
                   0);
  ASSERT_EQ_INT(cs.n, 1);
  ASSERT_EQ_INT(cs.c[0].n, 2);
  ASSERT_NEAR(cs.c[0].pts[0].power_w, 239, 1e-9);
  ASSERT_NEAR(cs.c[0].pts[1].power_w, 339, 1e-9);
  ASSERT_NEAR(cs.c[0].pts[1].power_sd_w, 1, 1e-9);
  ASSERT_NEAR(cs.c[0].pts[1].tokens_per_s, 1019.5, 1e-9);
  pfi_curveset_release(&cs);
  /* The same file read plainly has the GPU power of curves.csv. */
  assert_int_equal(pfi_curveset_read(&cs, f, NULL, &err), 0);
  ASSERT_NEAR(cs.c[0].pts[1].power_w, 119.5, 1e-9);
  pfi_curveset_release(&cs);
  pfi_store_close(st);
  /* A store from before the table: no node power, no node_curves.csv (the
   * old one removed). */
  sqlite3 *db;
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "DROP TABLE node_power", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
  assert_int_equal(pfi_store_node_power_open(st, 1, &it, &err), 0);
  assert_int_equal(pfi_store_node_power_next(it, &np, &err), 0);
  pfi_store_iter_close(it);
  assert_int_equal(pfi_trace_summarize(st, out, NULL, &err), 1);
  assert_int_equal(access(f, F_OK), -1);
  pfi_store_close(st);
}

/* ---- schema 2: the samples of an instant in one row ----------------------
 * Expected bytes and values are written here, not taken from the store's
 * encoder: little-endian uint32 GPU, uint32 mask, a double per valid field. */
static size_t le32(unsigned char *p, uint32_t x) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(x >> (8 * i));
  return 4;
}

static size_t le64(unsigned char *p, double v) {
  uint64_t x;
  memcpy(&x, &v, sizeof x);
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(x >> (8 * i));
  return 8;
}

static void add_one(struct pfi_store *st, int64_t run, unsigned gpu, double t,
                    uint32_t valid, enum pfi_field f1, double v1,
                    enum pfi_field f2, double v2) {
  struct pfi_error err;
  struct pfi_sample s;
  memset(&s, 0, sizeof s);
  s.t_s = t;
  s.valid = valid;
  s.v[f1] = v1;
  s.v[f2] = v2;
  assert_int_equal(pfi_store_add_sample(st, run, gpu, &s, &err), 0);
}

/* The samples iterator's rows as "t/gpu/valid/value-of-power;..." */
static void read_all(struct pfi_store *st, int64_t run, int gpu, char *out,
                     size_t n) {
  struct pfi_error err;
  struct pfi_store_iter *it;
  assert_int_equal(pfi_store_samples_open(st, run, gpu, &it, &err), 0);
  struct pfi_store_sample smp;
  size_t o = 0;
  int r;
  out[0] = 0;
  while ((r = pfi_store_samples_next(it, &smp, &err)) == 1) {
    assert_true(smp.run_id == run);
    o += (size_t)snprintf(out + o, n - o, "%g/%u/%x/%.17g;", smp.t_s, smp.gpu,
                          smp.valid, smp.v[PFI_FIELD_POWER]);
    for (int f = 0; f < PFI_FIELD__COUNT; f++)
      assert_true(((smp.valid >> f) & 1u) ? isfinite(smp.v[f])
                                          : isnan(smp.v[f]));
  }
  assert_int_equal(r, 0);
  pfi_store_iter_close(it);
}

static long long sql_int(const char *path, const char *sql) {
  sqlite3 *db;
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  long long v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

static void sql_exec(const char *path, const char *sql) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK)
    fprintf(stderr, "%s: %s\n", sql, msg ? msg : "?");
  sqlite3_free(msg);
  sqlite3_close(db);
  assert_int_equal(rc, SQLITE_OK);
}

#define B(f) (1u << PFI_FIELD_##f)

static void packed_rows(void **state) {
  (void)state;
  char p[128];
  path_of(p, sizeof p, "packed.db");
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_CREATE, &err), 0);
  struct pfi_run_info ri;
  memset(&ri, 0, sizeof ri);
  snprintf(ri.job, sizeof ri.job, "packed");
  snprintf(ri.source, sizeof ri.source, "emulated");
  ri.cap_w = 300;
  ri.gpus = 4;
  assert_int_equal(pfi_store_run_begin(st, &ri, &err), 0);
  /* Out of order, a GPU twice at one instant (the later wins), a value
   * flagged valid that is NaN (stored as not valid). */
  assert_int_equal(pfi_store_begin(st, &err), 0);
  add_one(st, ri.id, 3, 10, B(POWER) | B(TEMP), PFI_FIELD_POWER, 300.5,
          PFI_FIELD_TEMP, 61);
  add_one(st, ri.id, 1, 5, B(POWER) | B(GPU_UTIL), PFI_FIELD_POWER, 101.25,
          PFI_FIELD_GPU_UTIL, 90);
  add_one(st, ri.id, 0, 5, B(POWER) | B(SM_CLOCK), PFI_FIELD_POWER, 100,
          PFI_FIELD_SM_CLOCK, NAN);
  add_one(st, ri.id, 0, 10, B(POWER), PFI_FIELD_POWER, 200, PFI_FIELD_TEMP, 0);
  add_one(st, ri.id, 1, 5, B(POWER), PFI_FIELD_POWER, 111.75, PFI_FIELD_TEMP,
          0);
  /* This connection reads what its open batch holds. */
  char got[1024];
  read_all(st, ri.id, 1, got, sizeof got);
  assert_string_equal(got, "5/1/1/111.75;");
  struct pfi_step sp = {5, NAN, NAN, 1, 1, NAN, NAN};
  assert_int_equal(pfi_store_add_step(st, ri.id, &sp, &err), 0);
  sp.tokens_per_s = 2;
  assert_int_equal(pfi_store_add_step(st, ri.id, &sp, &err), 0);
  sp.t_s = 10;
  sp.tokens_per_s = 3;
  assert_int_equal(pfi_store_add_step(st, ri.id, &sp, &err), 0);
  assert_int_equal(pfi_store_commit(st, &err), 0);
  /* A second batch: a GPU more at t = 5 (merged into the stored row) and
   * GPU 3 at t = 10 again (replaced, its temperature gone). */
  assert_int_equal(pfi_store_begin(st, &err), 0);
  add_one(st, ri.id, 2, 5, B(POWER), PFI_FIELD_POWER, 102, PFI_FIELD_TEMP, 0);
  add_one(st, ri.id, 3, 10, B(POWER), PFI_FIELD_POWER, 333, PFI_FIELD_TEMP, 0);
  assert_int_equal(pfi_store_commit(st, &err), 0);
  /* Outside a batch: committed at once. */
  add_one(st, ri.id, 1, 15, B(TEMP), PFI_FIELD_TEMP, 70, PFI_FIELD_POWER, 0);
  assert_int_equal(pfi_store_run_end(st, ri.id, PFI_RUN_COMPLETE, 15, 0, &err),
                   0);
  pfi_store_close(st);

  /* The rows as SQLite holds them. */
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT count(*) * 1000 + sum(gpus) FROM samples WHERE run_id=%lld",
           (long long)ri.id);
  ASSERT_EQ_INT(sql_int(p, sql), 3 * 1000 + 6);
  ASSERT_EQ_INT(sql_int(p, "SELECT gpu_first FROM samples WHERE t_s=15"), 1);
  ASSERT_EQ_INT(sql_int(p, "SELECT value FROM meta WHERE key='schema'"), 2);
  unsigned char want[64];
  size_t n = 0;
  n += le32(want + n, 0);
  n += le32(want + n, B(POWER));
  n += le64(want + n, 200);
  n += le32(want + n, 3);
  n += le32(want + n, B(POWER));
  n += le64(want + n, 333);
  sqlite3 *db;
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT gpus, gpu_first, data FROM "
                                      "samples WHERE t_s = 10",
                                      -1, &q, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  ASSERT_EQ_INT(sqlite3_column_int(q, 0), 2);
  ASSERT_EQ_INT(sqlite3_column_int(q, 1), 0);
  ASSERT_EQ_INT(sqlite3_column_bytes(q, 2), (long)n);
  assert_memory_equal(sqlite3_column_blob(q, 2), want, n);
  sqlite3_finalize(q);
  sqlite3_close(db);

  /* Read back through the iterators, read-only. */
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
  read_all(st, ri.id, PFI_STORE_ALL_GPUS, got, sizeof got);
  assert_string_equal(got, "5/0/1/100;5/1/1/111.75;5/2/1/102;10/0/1/200;"
                           "10/3/1/333;15/1/8000/nan;");
  read_all(st, ri.id, PFI_STORE_FIRST_GPU, got, sizeof got);
  assert_string_equal(got, "5/0/1/100;10/0/1/200;");
  read_all(st, ri.id, 3, got, sizeof got);
  assert_string_equal(got, "10/3/1/333;");
  read_all(st, ri.id, 7, got, sizeof got);
  assert_string_equal(got, "");
  ASSERT_NEAR(pfi_store_field_max(st, PFI_FIELD_POWER), 333, 0);
  ASSERT_NEAR(pfi_store_field_max(st, PFI_FIELD_TEMP), 70, 0);
  assert_true(isnan(pfi_store_field_max(st, PFI_FIELD_SM_CLOCK)));
  struct pfi_store_iter *it;
  struct pfi_store_run run;
  assert_int_equal(
      pfi_store_runs_open(st, PFI_RUNS_ALL | PFI_RUNS_COUNTS, &it, &err), 0);
  assert_int_equal(pfi_store_runs_next(it, &run, &err), 1);
  ASSERT_EQ_INT(run.samples, 6);
  ASSERT_EQ_INT(run.steps, 3);
  pfi_store_iter_close(it);
  /* Steps by time, ties in order of addition. */
  assert_int_equal(pfi_store_steps_open(st, ri.id, &it, &err), 0);
  struct pfi_store_step stp;
  double want_steps[3][2] = {{5, 1}, {5, 2}, {10, 3}};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(pfi_store_steps_next(it, &stp, &err), 1);
    ASSERT_NEAR(stp.t_s, want_steps[i][0], 0);
    ASSERT_NEAR(stp.tokens_per_s, want_steps[i][1], 0);
  }
  assert_int_equal(pfi_store_steps_next(it, &stp, &err), 0);
  pfi_store_iter_close(it);
  pfi_store_close(st);
}

/* A store of schema 1 (a row per GPU and instant, a column per field), made
 * here with its documented SQL: read, and written in its own layout. */
static const char *const schema1_sql =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT INTO meta VALUES('schema','1'),('pfi_version','0.0');"
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, job TEXT NOT NULL, arch TEXT,"
    " task TEXT, cap_w REAL NOT NULL, gpus INTEGER NOT NULL, source TEXT NOT"
    " NULL, state TEXT NOT NULL, t_start_s REAL, t_end_s REAL, exit_status"
    " INTEGER, command TEXT, started_utc TEXT);"
    "CREATE TABLE steps(run_id INTEGER NOT NULL, t_s REAL NOT NULL, job_t_s"
    " REAL, tokens REAL, tokens_per_s REAL, step REAL, loss REAL, mfu REAL);"
    "CREATE INDEX steps_run ON steps(run_id, t_s);"
    "CREATE TABLE samples(run_id INTEGER NOT NULL, gpu INTEGER NOT NULL, t_s"
    " REAL NOT NULL, valid INTEGER NOT NULL, power_w REAL, energy_j REAL,"
    " sm_clock_mhz REAL, mem_clock_mhz REAL, gpu_util REAL, sm_active REAL,"
    " sm_occupancy REAL, tensor_active REAL, dram_active REAL, mem_copy_util"
    " REAL, nvlink_tx_bps REAL, nvlink_rx_bps REAL, pcie_tx_bps REAL,"
    " pcie_rx_bps REAL, fb_used_mib REAL, gpu_temp_c REAL, power_throttle_s"
    " REAL, PRIMARY KEY(run_id, t_s, gpu)) WITHOUT ROWID;"
    "INSERT INTO runs VALUES(1,'old',NULL,NULL,300,2,'emulated','complete',"
    "0,10,0,NULL,NULL);"
    "INSERT INTO samples(run_id,gpu,t_s,valid,power_w,fb_used_mib) VALUES"
    "(1,1,5,16385,260,1000),(1,0,5,1,250.5,NULL);"
    "INSERT INTO steps VALUES(1,5,NULL,NULL,42,1,NULL,NULL);";

static void schema1_store(void **state) {
  (void)state;
  char p[128];
  path_of(p, sizeof p, "old.db");
  sql_exec(p, schema1_sql);
  struct pfi_store *st;
  struct pfi_error err;
  char got[512];
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
  read_all(st, 1, PFI_STORE_ALL_GPUS, got, sizeof got);
  assert_string_equal(got, "5/0/1/250.5;5/1/4001/260;");
  pfi_store_close(st);
  /* Written: the store stays schema 1, the new sample in its layout. */
  assert_int_equal(pfi_store_open(&st, p, 0, &err), 0);
  assert_int_equal(pfi_store_begin(st, &err), 0);
  add_one(st, 1, 0, 10, B(POWER), PFI_FIELD_POWER, 270, PFI_FIELD_TEMP, 0);
  struct pfi_step sp = {10, NAN, NAN, 43, 2, NAN, NAN};
  assert_int_equal(pfi_store_add_step(st, 1, &sp, &err), 0);
  assert_int_equal(pfi_store_commit(st, &err), 0);
  read_all(st, 1, PFI_STORE_FIRST_GPU, got, sizeof got);
  assert_string_equal(got, "5/0/1/250.5;10/0/1/270;");
  struct pfi_store_iter *it;
  struct pfi_store_run run;
  assert_int_equal(
      pfi_store_runs_open(st, PFI_RUNS_ALL | PFI_RUNS_COUNTS, &it, &err), 0);
  assert_int_equal(pfi_store_runs_next(it, &run, &err), 1);
  ASSERT_EQ_INT(run.samples, 3);
  ASSERT_EQ_INT(run.steps, 2);
  pfi_store_iter_close(it);
  ASSERT_NEAR(pfi_store_field_max(st, PFI_FIELD_POWER), 270, 0);
  pfi_store_close(st);
  ASSERT_EQ_INT(sql_int(p, "SELECT value FROM meta WHERE key='schema'"), 1);
  ASSERT_EQ_INT(sql_int(p, "SELECT count(*) FROM samples"), 3);
  ASSERT_EQ_INT(
      sql_int(p, "SELECT power_w FROM samples WHERE t_s=10 AND gpu=0"), 270);
}

/* Damaged rows: a located PFI_EPARSE naming the file, run, time and byte;
 * a store of a newer schema is refused, named. */
/* Writers that open one new store at the same moment (concurrent sweeps
 * naming it): each open waits for the others (the busy timeout), none
 * fails with "database is locked". A new database's change into WAL takes
 * an exclusive lock that SQLite does not wait for; before the open
 * retried it, one of two sweeps started together on a new store could
 * exit 2 (cli.test_kill_random, seed 171261000 in CI). Eight processes
 * released together by a pipe, twenty rounds on fresh files. */
static int create_kid(int k, void *ctx) {
  struct pfi_store *st = NULL;
  struct pfi_error err;
  if (pfi_store_open(&st, ctx, PFI_STORE_CREATE, &err) < 0) {
    fprintf(stderr, "kid %d: %s\n", k, err.msg);
    return 1;
  }
  pfi_store_close(st);
  return 0;
}

static void concurrent_create(void **state) {
  (void)state;
  enum { KIDS = 8, ROUNDS = 20 };
  for (int round = 0; round < ROUNDS; round++) {
    char path[400], name[32];
    snprintf(name, sizeof name, "race%d.db", round);
    path_of(path, sizeof path, name);
    int failed = pfi_test_race(KIDS, create_kid, path);
    if (failed)
      fail_msg("round %d: %d of %d concurrent opens of a new store failed",
               round, failed, KIDS);
  }
}

static void damaged_rows(void **state) {
  (void)state;
  char p[128];
  path_of(p, sizeof p, "bad.db");
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_CREATE, &err), 0);
  struct pfi_run_info ri;
  memset(&ri, 0, sizeof ri);
  snprintf(ri.job, sizeof ri.job, "bad");
  snprintf(ri.source, sizeof ri.source, "emulated");
  ri.cap_w = 300;
  ri.gpus = 2;
  assert_int_equal(pfi_store_run_begin(st, &ri, &err), 0);
  assert_int_equal(pfi_store_begin(st, &err), 0);
  for (int t = 5; t <= 15; t += 5)
    for (unsigned g = 0; g < 2; g++)
      add_one(st, ri.id, g, t, B(POWER) | B(TEMP), PFI_FIELD_POWER, 100 + t,
              PFI_FIELD_TEMP, 50);
  assert_int_equal(pfi_store_commit(st, &err), 0);
  pfi_store_close(st);
  /* Each entry is 8 + 2 * 8 = 24 bytes: cut the t = 10 row to 20 (its
   * first entry's values end at 24), say the t = 15 row has 3 GPUs. */
  sql_exec(p, "UPDATE samples SET data = substr(data, 1, 20) WHERE t_s = 10;"
              "UPDATE samples SET gpus = 3 WHERE t_s = 15;");
  const char *const want[] = {
      "samples of run 1 at t_s 10: byte 8 of the 20-byte row: truncated "
      "values",
      "samples of run 1 at t_s 15: byte 48 of the 48-byte row: 2 GPU entries "
      "where the row says 3"};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
    struct pfi_store_iter *it;
    assert_int_equal(
        pfi_store_samples_open(st, 1, PFI_STORE_ALL_GPUS, &it, &err), 0);
    struct pfi_store_sample smp;
    int r, rows = 0;
    while ((r = pfi_store_samples_next(it, &smp, &err)) == 1)
      rows++;
    ASSERT_EQ_INT(r, PFI_EPARSE);
    ASSERT_EQ_INT(rows, k == 0 ? 2 : 6);
    assert_string_equal(err.file, p);
    if (!strstr(err.msg, want[k]))
      fprintf(stderr, "message: %s\n", err.msg);
    assert_non_null(strstr(err.msg, want[k]));
    pfi_store_iter_close(it);
    pfi_store_close(st);
    /* The t = 10 row mended (t = 5's entries) for the next fault. */
    sql_exec(p, "UPDATE samples SET data = (SELECT data FROM samples WHERE "
                "t_s = 5) WHERE t_s = 10;");
  }
  /* Written by a newer pfi. */
  sql_exec(p, "UPDATE meta SET value = '3' WHERE key = 'schema';");
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), PFI_EDB);
  assert_non_null(strstr(err.msg, p));
  assert_non_null(strstr(err.msg, "schema 3, newer than this pfi reads"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ledger),
      cmocka_unit_test(summarize_by_hand),
      cmocka_unit_test(node_power_by_hand),
      cmocka_unit_test(packed_rows),
      cmocka_unit_test(schema1_store),
      cmocka_unit_test(damaged_rows),
      cmocka_unit_test(concurrent_create),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
