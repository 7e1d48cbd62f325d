/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Tables of structs (dbtable.h): what is put comes back field for field
 * (NaN as NaN, long text cut and terminated), a row with the same key is
 * replaced, AUTO columns count from 1, conditions and limits select the
 * rows written by hand below, and a file of another kind is refused.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/dbtable.h"
#include "testutil.h"

struct r {
  int64_t id;
  char name[8];
  int64_t k;
  double x;
};

static const struct pfi_col cols[] = {
    {"id", PFI_COL_AUTO, offsetof(struct r, id), 0, 0},
    {"name", PFI_COL_TEXT, offsetof(struct r, name), 8,
     PFI_COL_KEY | PFI_COL_NOTNULL},
    {"k", PFI_COL_INT, offsetof(struct r, k), 0, PFI_COL_KEY},
    {"x", PFI_COL_REAL, offsetof(struct r, x), 0, 0},
};
static const struct pfi_table tab = {"t", cols, 4, sizeof(struct r)};

struct got {
  struct r row[16];
  size_t n;
};

static int collect(void *ctx, const void *p) {
  struct got *g = ctx;
  if (g->n < 16)
    memcpy(&g->row[g->n++], p, sizeof(struct r));
  return 0;
}

static void put(struct pfi_db *db, const char *name, int64_t k, double x) {
  struct r w = {0, "", k, x};
  snprintf(w.name, sizeof w.name, "%s", name);
  struct pfi_error err;
  assert_int_equal(pfi_db_put(db, &tab, &w, &err), 0);
}

static void test_roundtrip(void **state) {
  (void)state;
  char path[] = "/tmp/pfi-dbtable-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  unlink(path);
  const struct pfi_table *t = &tab;
  struct pfi_db *db;
  struct pfi_error err;
  assert_int_equal(
      pfi_db_open(&db, path, &t, 1, "meta", "test-kind", 1, 0, &err), 0);
  assert_int_equal(pfi_db_begin(db, &err), 0);
  put(db, "a", 1, 1.5);
  put(db, "b", 2, NAN);
  put(db, "a", 1, 2.5);       /* same key (a, 1): replaces */
  put(db, "longname", 3, -4); /* cut to 7 bytes and a NUL */
  assert_int_equal(pfi_db_commit(db, &err), 0);
  struct got g = {.n = 0};
  assert_int_equal(pfi_db_each(db, &tab, NULL, 0, 0, collect, &g, &err), 0);
  /* Ordered by id: b (2), the replacement of a (3), longnam (4). */
  ASSERT_EQ_INT(g.n, 3);
  ASSERT_EQ_INT(g.row[0].id, 2);
  assert_string_equal(g.row[0].name, "b");
  assert_true(isnan(g.row[0].x));
  ASSERT_EQ_INT(g.row[1].id, 3);
  assert_string_equal(g.row[1].name, "a");
  ASSERT_NEAR(g.row[1].x, 2.5, 0);
  assert_string_equal(g.row[2].name, "longnam");
  ASSERT_EQ_INT(g.row[2].k, 3);
  /* id > 2, at most 1 row: a. name = "b": b. */
  struct pfi_db_cond gt = {"id", PFI_DB_GT, NULL, 2};
  g.n = 0;
  assert_int_equal(pfi_db_each(db, &tab, &gt, 1, 1, collect, &g, &err), 0);
  ASSERT_EQ_INT(g.n, 1);
  assert_string_equal(g.row[0].name, "a");
  struct pfi_db_cond eq = {"name", PFI_DB_EQ, "b", 0};
  g.n = 0;
  assert_int_equal(pfi_db_each(db, &tab, &eq, 1, 0, collect, &g, &err), 0);
  ASSERT_EQ_INT(g.n, 1);
  ASSERT_EQ_INT(g.row[0].k, 2);
  struct pfi_db_cond bad = {"nosuch", PFI_DB_EQ, "b", 0};
  assert_int_equal(pfi_db_each(db, &tab, &bad, 1, 0, collect, &g, &err),
                   PFI_EINVAL);
  pfi_db_close(db);
  /* Read-only: the rows are there; writing is refused. */
  assert_int_equal(
      pfi_db_open(&db, path, &t, 1, "meta", "test-kind", 0, 0, &err), 0);
  g.n = 0;
  assert_int_equal(pfi_db_each(db, &tab, NULL, 0, 0, collect, &g, &err), 0);
  ASSERT_EQ_INT(g.n, 3);
  struct r w = {0, "c", 9, 1};
  assert_int_equal(pfi_db_put(db, &tab, &w, &err), PFI_EINVAL);
  pfi_db_close(db);
  /* Another kind of file is not opened, for reading or writing. */
  assert_int_equal(pfi_db_open(&db, path, &t, 1, "meta", "other", 0, 0, &err),
                   PFI_EDB);
  assert_non_null(strstr(err.msg, "not a other database"));
  assert_int_equal(pfi_db_open(&db, path, &t, 1, "meta", "other", 1, 0, &err),
                   PFI_EDB);
  unlink(path);
  char wal[64], shm[64];
  snprintf(wal, sizeof wal, "%s-wal", path);
  snprintf(shm, sizeof shm, "%s-shm", path);
  unlink(wal);
  unlink(shm);
  /* A missing file opened for reading is an error, not a new file. */
  assert_true(pfi_db_open(&db, path, &t, 1, "meta", "test-kind", 0, 0, &err) <
              0);
  assert_int_equal(access(path, F_OK), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_roundtrip)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
