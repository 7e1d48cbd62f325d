/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Tables of structs (dbtable.h): what is put comes back field for field
 * (NaN as NaN, long text cut and terminated), a row with the same key is
 * replaced, AUTO columns count from 1, conditions and limits select the
 * rows written by hand below, and a file of another kind is refused. A
 * table written with fewer columns (an older pfi's) gains the nullable
 * ones when opened for writing, also by several processes at once, its
 * rows reading NULL there; a missing key or NOT NULL column is refused.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
  /* The last 2 by id: a (3) then longnam (4), in id order; of those with
   * id > 2 the last 5: the same two; of name "b" the last 1: b; limit 0:
   * all three. */
  g.n = 0;
  assert_int_equal(pfi_db_each_last(db, &tab, NULL, 0, 2, collect, &g, &err),
                   0);
  ASSERT_EQ_INT(g.n, 2);
  ASSERT_EQ_INT(g.row[0].id, 3);
  ASSERT_EQ_INT(g.row[1].id, 4);
  g.n = 0;
  assert_int_equal(pfi_db_each_last(db, &tab, &gt, 1, 5, collect, &g, &err),
                   0);
  ASSERT_EQ_INT(g.n, 2);
  ASSERT_EQ_INT(g.row[0].id, 3);
  ASSERT_EQ_INT(g.row[1].id, 4);
  g.n = 0;
  assert_int_equal(pfi_db_each_last(db, &tab, &eq, 1, 1, collect, &g, &err),
                   0);
  ASSERT_EQ_INT(g.n, 1);
  assert_string_equal(g.row[0].name, "b");
  g.n = 0;
  assert_int_equal(pfi_db_each_last(db, &tab, NULL, 0, 0, collect, &g, &err),
                   0);
  ASSERT_EQ_INT(g.n, 3);
  ASSERT_EQ_INT(g.row[0].id, 2);
  ASSERT_EQ_INT(g.row[2].id, 4);
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

/* Table t as described now (note and y added since the old description),
 * and descriptions the file cannot take (a missing key column k2; w
 * nullable, then a missing NOT NULL column z). One row struct for all. */
struct r2 {
  int64_t id;
  char name[8];
  int64_t k;
  char note[8];
  double x, y;
  int64_t k2;
  char w[8], z[8];
};
#define C2(f, ty, fl)                                                          \
  {                                                                            \
#f, ty, offsetof(struct r2, f),                                            \
        ty == PFI_COL_TEXT ? sizeof((struct r2 *)0)->f : 0, fl                 \
  }
#define KEYNN (PFI_COL_KEY | PFI_COL_NOTNULL)
static const struct pfi_col old_cols[] = {
    C2(id, PFI_COL_AUTO, 0), C2(name, PFI_COL_TEXT, KEYNN),
    C2(k, PFI_COL_INT, PFI_COL_KEY), C2(x, PFI_COL_REAL, 0)};
static const struct pfi_col new_cols[] = {
    C2(id, PFI_COL_AUTO, 0),         C2(name, PFI_COL_TEXT, KEYNN),
    C2(k, PFI_COL_INT, PFI_COL_KEY), C2(note, PFI_COL_TEXT, 0),
    C2(x, PFI_COL_REAL, 0),          C2(y, PFI_COL_REAL, 0)};
static const struct pfi_col key_cols[] = {
    C2(id, PFI_COL_AUTO, 0), C2(name, PFI_COL_TEXT, KEYNN),
    C2(k, PFI_COL_INT, PFI_COL_KEY), C2(k2, PFI_COL_INT, PFI_COL_KEY),
    C2(x, PFI_COL_REAL, 0)};
static const struct pfi_col nn_cols[] = {
    C2(id, PFI_COL_AUTO, 0),         C2(name, PFI_COL_TEXT, KEYNN),
    C2(k, PFI_COL_INT, PFI_COL_KEY), C2(x, PFI_COL_REAL, 0),
    C2(w, PFI_COL_TEXT, 0),          C2(z, PFI_COL_TEXT, PFI_COL_NOTNULL)};
static const struct pfi_col w_cols[] = {
    C2(id, PFI_COL_AUTO, 0), C2(name, PFI_COL_TEXT, KEYNN),
    C2(k, PFI_COL_INT, PFI_COL_KEY), C2(w, PFI_COL_TEXT, 0)};
#undef KEYNN
#undef C2
#define TAB2(cols)                                                             \
  { "t", cols, sizeof cols / sizeof cols[0], sizeof(struct r2) }
static const struct pfi_table old_tab = TAB2(old_cols),
                              new_tab = TAB2(new_cols),
                              key_tab = TAB2(key_cols), nn_tab = TAB2(nn_cols),
                              w_tab = TAB2(w_cols);
#undef TAB2

struct got2 {
  struct r2 row[16];
  size_t n;
};

static int collect2(void *ctx, const void *p) {
  struct got2 *g = ctx;
  if (g->n < 16)
    memcpy(&g->row[g->n++], p, sizeof(struct r2));
  return 0;
}

static void put2(struct pfi_db *db, const struct pfi_table *t, const char *name,
                 int64_t k, const char *note, double x, double y) {
  struct r2 w;
  memset(&w, 0, sizeof w);
  snprintf(w.name, sizeof w.name, "%s", name);
  snprintf(w.note, sizeof w.note, "%s", note);
  w.k = k;
  w.x = x;
  w.y = y;
  struct pfi_error err;
  if (pfi_db_put(db, t, &w, &err) < 0)
    fail_msg("put %s: %s", name, err.msg);
}

static void open_ok(struct pfi_db **db, const char *path,
                    const struct pfi_table *t, int create) {
  struct pfi_error err;
  if (pfi_db_open(db, path, &t, 1, "meta", "test-kind", create, 0, &err) < 0)
    fail_msg("open %s (%s): %s", path, create ? "write" : "read", err.msg);
}

/* The rows of table t whose column col equals text (col NULL: all). */
static struct got2 rows2(struct pfi_db *db, const struct pfi_table *t,
                         const char *col, const char *text) {
  struct got2 g = {.n = 0};
  struct pfi_db_cond c = {col, PFI_DB_EQ, text, 0};
  struct pfi_error err;
  if (pfi_db_each(db, t, col ? &c : NULL, col ? 1 : 0, 0, collect2, &g, &err) <
      0)
    fail_msg("each: %s", err.msg);
  return g;
}

static void tmp_db(char *path, size_t n) {
  snprintf(path, n, "/tmp/pfi-dbtable-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  unlink(path);
}

static void rm_db(const char *path) {
  char p[80];
  unlink(path);
  snprintf(p, sizeof p, "%s-wal", path);
  unlink(p);
  snprintf(p, sizeof p, "%s-shm", path);
  unlink(p);
}

/* A file of the old description, with row a. */
static void old_file(const char *path) {
  struct pfi_db *db;
  open_ok(&db, path, &old_tab, 1);
  put2(db, &old_tab, "a", 1, "", 1.5, 0);
  pfi_db_close(db);
}

static void test_add_columns(void **state) {
  (void)state;
  char path[64];
  tmp_db(path, sizeof path);
  old_file(path);
  /* Opened for writing with the new description: note and y are added
   * (at the end of the file's table; note is in the middle of the
   * description), a's row has NULL there, and new rows keep what is put
   * in them, each value in its column. */
  struct pfi_db *db;
  open_ok(&db, path, &new_tab, 1);
  put2(db, &new_tab, "b", 2, "hi", 2, 3);
  put2(db, &new_tab, "c", 3, "", 4, NAN);
  struct got2 g = rows2(db, &new_tab, NULL, NULL);
  ASSERT_EQ_INT(g.n, 3);
  assert_string_equal(g.row[0].name, "a");
  ASSERT_EQ_INT(g.row[0].k, 1);
  ASSERT_NEAR(g.row[0].x, 1.5, 0);
  assert_string_equal(g.row[0].note, "");
  assert_true(isnan(g.row[0].y));
  assert_string_equal(g.row[1].name, "b");
  ASSERT_EQ_INT(g.row[1].k, 2);
  assert_string_equal(g.row[1].note, "hi");
  ASSERT_NEAR(g.row[1].x, 2, 0);
  ASSERT_NEAR(g.row[1].y, 3, 0);
  assert_string_equal(g.row[2].name, "c");
  ASSERT_NEAR(g.row[2].x, 4, 0);
  assert_true(isnan(g.row[2].y));
  /* a's note is NULL, not the empty text c was given: note = '' is c's
   * row alone. */
  g = rows2(db, &new_tab, "note", "");
  ASSERT_EQ_INT(g.n, 1);
  assert_string_equal(g.row[0].name, "c");
  pfi_db_close(db);
  /* Written again with the old description (an older pfi on this file):
   * its row d has NULL in the columns it does not know. */
  open_ok(&db, path, &old_tab, 1);
  put2(db, &old_tab, "d", 4, "", 5, 0);
  pfi_db_close(db);
  open_ok(&db, path, &new_tab, 0);
  g = rows2(db, &new_tab, "name", "d");
  ASSERT_EQ_INT(g.n, 1);
  ASSERT_NEAR(g.row[0].x, 5, 0);
  assert_true(isnan(g.row[0].y));
  ASSERT_EQ_INT(rows2(db, &new_tab, "note", "").n, 1);
  ASSERT_EQ_INT(rows2(db, &new_tab, NULL, NULL).n, 4);
  pfi_db_close(db);
  /* A missing key column, or NOT NULL one, cannot be given to the rows
   * there: refused, naming file, table and column. */
  const struct pfi_table *t = &key_tab;
  struct pfi_error err;
  assert_int_equal(
      pfi_db_open(&db, path, &t, 1, "meta", "test-kind", 1, 0, &err), PFI_EDB);
  assert_non_null(strstr(err.msg, path));
  assert_non_null(strstr(err.msg, "table t has no column k2"));
  t = &nn_tab;
  assert_int_equal(
      pfi_db_open(&db, path, &t, 1, "meta", "test-kind", 1, 0, &err), PFI_EDB);
  assert_non_null(strstr(err.msg, path));
  assert_non_null(strstr(err.msg, "table t has no column z"));
  /* Nothing of that open stays: w, added before z was refused, is not in
   * the file (reading it is an error). */
  open_ok(&db, path, &w_tab, 0);
  struct got2 none = {.n = 0};
  assert_int_equal(pfi_db_each(db, &w_tab, NULL, 0, 0, collect2, &none, &err),
                   PFI_EDB);
  assert_non_null(strstr(err.msg, "no such column: w"));
  pfi_db_close(db);
  /* The file still takes the new description's rows. */
  open_ok(&db, path, &new_tab, 1);
  put2(db, &new_tab, "e", 5, "x", 6, 7);
  ASSERT_EQ_INT(rows2(db, &new_tab, NULL, NULL).n, 5);
  pfi_db_close(db);
  rm_db(path);
}

/* Two pfid may open one older records file together: each adds what it
 * finds missing. Eight processes released together by a pipe open an old
 * file for writing with the new description, ten rounds on fresh files;
 * every open succeeds (not one "duplicate column name": the columns are
 * looked up and added in one write transaction), and every row is there. */
static int add_kid(int k, void *ctx) {
  const struct pfi_table *t = &new_tab;
  struct pfi_db *db;
  struct pfi_error err;
  if (pfi_db_open(&db, ctx, &t, 1, "meta", "test-kind", 1, 0, &err) < 0) {
    fprintf(stderr, "kid %d: %s\n", k, err.msg);
    return 1;
  }
  struct r2 w;
  char name[8];
  memset(&w, 0, sizeof w);
  snprintf(name, sizeof name, "k%d", k);
  memcpy(w.name, name, sizeof name);
  snprintf(w.note, sizeof w.note, "n%d", k);
  w.y = k;
  int rc = pfi_db_put(db, t, &w, &err);
  if (rc < 0)
    fprintf(stderr, "kid %d: %s\n", k, err.msg);
  pfi_db_close(db);
  return rc < 0 ? 2 : 0;
}

static void test_add_columns_together(void **state) {
  (void)state;
  enum { KIDS = 8, ROUNDS = 10 };
  for (int round = 0; round < ROUNDS; round++) {
    char path[64];
    tmp_db(path, sizeof path);
    old_file(path);
    int failed = pfi_test_race(KIDS, add_kid, path);
    if (failed)
      fail_msg("round %d: %d of %d concurrent opens of an old file failed",
               round, failed, KIDS);
    struct pfi_db *db;
    open_ok(&db, path, &new_tab, 0);
    struct got2 g = rows2(db, &new_tab, NULL, NULL);
    ASSERT_EQ_INT(g.n, 1 + KIDS);
    assert_string_equal(g.row[0].name, "a");
    assert_true(isnan(g.row[0].y));
    for (size_t i = 1; i < g.n; i++) {
      int k = g.row[i].name[1] - '0';
      char note[8];
      snprintf(note, sizeof note, "n%d", k);
      assert_string_equal(g.row[i].note, note);
      ASSERT_NEAR(g.row[i].y, k, 0);
    }
    pfi_db_close(db);
    rm_db(path);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_add_columns),
      cmocka_unit_test(test_add_columns_together)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
