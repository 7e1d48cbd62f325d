/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Per-GPU locks: the holder record, its description, taking and releasing
 * (two descriptors of one process conflict like two processes, since
 * flock(2) locks belong to the open file), and the lock directory. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/gpulock.h"

static void parse(const char *s, struct pfi_gpu_lock_holder *h) {
  pfi_gpu_lock_holder_parse(s, strlen(s), h);
}

static void test_parse(void **state) {
  (void)state;
  struct pfi_gpu_lock_holder h;
  parse("pid=123\ncmd=sweep\nstore=/a/b.db\n", &h);
  ASSERT_EQ_INT(h.pid, 123);
  assert_string_equal(h.cmd, "sweep");
  assert_string_equal(h.store, "/a/b.db");
  /* Any order, unknown lines ignored, no final newline. */
  parse("x=1\nstore=/s\ncmd=cap\npid=7", &h);
  ASSERT_EQ_INT(h.pid, 7);
  assert_string_equal(h.cmd, "cap");
  assert_string_equal(h.store, "/s");
  /* Not a positive decimal: no pid. */
  const char *bad[] = {"pid=-5",  "pid=0", "pid=12abc",
                       "pid= 12", "pid=",  "pid=99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    parse(bad[i], &h);
    ASSERT_EQ_INT(h.pid, 0);
  }
  /* Control characters become '?': a record cannot add a line to a
   * message (the carriage return here, the escape). */
  parse("cmd=a\x1b[2Jb\nstore=/x\r/y\n", &h);
  assert_string_equal(h.cmd, "a?[2Jb");
  assert_string_equal(h.store, "/x?/y");
  /* Too long for the field: cut at its size less the NUL (31). */
  parse("cmd=0123456789012345678901234567890123456789\n", &h);
  ASSERT_EQ_INT(strlen(h.cmd), 31);
  /* Empty, and a NUL ending the record early. */
  /* A pending change: orig_mw a decimal below 2^32; kept only with it. */
  parse("pid=9\norig_mw=650000\nkept=1\n", &h);
  assert_true(h.pending);
  assert_true(h.kept);
  ASSERT_EQ_INT(h.orig_mw, 650000);
  const char *bad_mw[] = {"orig_mw=",   "orig_mw=-1", "orig_mw=4294967296",
                          "orig_mw=1x", "orig_mw= 5", "kept=1"};
  for (size_t i = 0; i < sizeof bad_mw / sizeof *bad_mw; i++) {
    parse(bad_mw[i], &h);
    assert_false(h.pending);
    assert_false(h.kept);
  }
  parse("orig_mw=4294967295", &h);
  assert_true(h.pending);
  ASSERT_EQ_INT(h.orig_mw, 4294967295u);
  parse("", &h);
  ASSERT_EQ_INT(h.pid, 0);
  assert_string_equal(h.cmd, "");
  pfi_gpu_lock_holder_parse("pid=5\0cmd=x", 11, &h);
  ASSERT_EQ_INT(h.pid, 5);
  assert_string_equal(h.cmd, "");
}

static void test_describe(void **state) {
  (void)state;
  struct pfi_gpu_lock_holder h;
  char buf[700];
  memset(&h, 0, sizeof h);
  assert_string_equal(pfi_gpu_lock_holder_str(&h, buf, sizeof buf),
                      "another pfi");
  assert_string_equal(pfi_gpu_lock_holder_str(NULL, buf, sizeof buf),
                      "another pfi");
  parse("pid=123\ncmd=sweep\nstore=/a.db\n", &h);
  assert_string_equal(pfi_gpu_lock_holder_str(&h, buf, sizeof buf),
                      "pfi sweep (pid 123, store /a.db)");
  parse("pid=9\ncmd=cap\n", &h);
  assert_string_equal(pfi_gpu_lock_holder_str(&h, buf, sizeof buf),
                      "pfi cap (pid 9)");
  parse("cmd=restore\nstore=/s\n", &h);
  assert_string_equal(pfi_gpu_lock_holder_str(&h, buf, sizeof buf),
                      "pfi restore (store /s)");
  parse("pid=4\n", &h);
  assert_string_equal(pfi_gpu_lock_holder_str(&h, buf, sizeof buf),
                      "pfi (pid 4)");
  /* A small buffer is cut, still terminated. */
  parse("pid=123\ncmd=sweep\nstore=/a.db\n", &h);
  pfi_gpu_lock_holder_str(&h, buf, 8);
  assert_string_equal(buf, "pfi swe");
}

static void test_take_release(void **state) {
  (void)state;
  char dir[] = "/tmp/pfi-gpulock-XXXXXX";
  assert_non_null(mkdtemp(dir));
  struct pfi_error err;
  struct pfi_gpu_lock_holder h;
  int fd =
      pfi_gpu_lock_take(dir, "GPU-x", "sweep", "/nonexistent/t.db", &h, &err);
  assert_true(fd >= 0);
  /* The record: this pid, the command, the store as given (it has no real
   * path to resolve). */
  char path[600], want[200], got[200] = "";
  snprintf(path, sizeof path, "%s/pfi-sweep-GPU-x.lock", dir);
  snprintf(want, sizeof want, "pid=%ld\ncmd=sweep\nstore=/nonexistent/t.db\n",
           (long)getpid());
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(got, 1, sizeof got - 1, f);
  fclose(f);
  got[n] = '\0';
  assert_string_equal(got, want);
  /* Held: a second take is refused, naming the holder from the record. */
  int fd2 = pfi_gpu_lock_take(dir, "GPU-x", "cap", NULL, &h, &err);
  ASSERT_EQ_INT(fd2, PFI_EBUSY);
  ASSERT_EQ_INT(err.code, PFI_EBUSY);
  ASSERT_EQ_INT(h.pid, getpid());
  assert_string_equal(h.cmd, "sweep");
  assert_string_equal(h.store, "/nonexistent/t.db");
  assert_non_null(strstr(err.msg, "GPU-x"));
  assert_non_null(strstr(err.msg, "pfi sweep"));
  /* Another GPU is another lock. */
  int fd3 = pfi_gpu_lock_take(dir, "GPU-y", "cap", NULL, NULL, &err);
  assert_true(fd3 >= 0);
  pfi_gpu_lock_release(fd3);
  /* Released: free again, and the new holder's record replaces the old. */
  pfi_gpu_lock_release(fd);
  fd = pfi_gpu_lock_take(dir, "GPU-x", "cap", NULL, &h, &err);
  assert_true(fd >= 0);
  fd2 = pfi_gpu_lock_take(dir, "GPU-x", "sweep", NULL, &h, &err);
  ASSERT_EQ_INT(fd2, PFI_EBUSY);
  assert_string_equal(h.cmd, "cap");
  assert_string_equal(h.store, "");
  pfi_gpu_lock_release(fd);
  pfi_gpu_lock_release(-1); /* a no-op */
  /* UUIDs that cannot name a file, and a directory that does not exist. */
  ASSERT_EQ_INT(pfi_gpu_lock_take(dir, "a/b", "cap", NULL, NULL, &err),
                PFI_EINVAL);
  ASSERT_EQ_INT(pfi_gpu_lock_take(dir, "", "cap", NULL, NULL, &err),
                PFI_EINVAL);
  char missing[600];
  snprintf(missing, sizeof missing, "%s/none", dir);
  ASSERT_EQ_INT(pfi_gpu_lock_take(missing, "GPU-x", "cap", NULL, NULL, &err),
                PFI_EIO);
  unlink(path);
  snprintf(path, sizeof path, "%s/pfi-sweep-GPU-y.lock", dir);
  unlink(path);
  rmdir(dir);
}

static void test_dir(void **state) {
  (void)state;
  struct pfi_gpu_lock_dirs d;
  /* Emulated GPUs: the emulator's state directory only; PFI_LOCK_DIR can
   * neither replace nor add to it. */
  setenv("PFI_LOCK_DIR", "/x/locks", 1);
  setenv("PFI_EMU_STATE", "/e/state", 1);
  pfi_gpu_lock_dirs(NULL, 1, &d);
  ASSERT_EQ_INT(d.n, 1);
  assert_string_equal(d.dir[0], "/e/state");
  /* Real GPUs: /run/lock when writable and /tmp, always; PFI_LOCK_DIR
   * only adds a directory. */
  pfi_gpu_lock_dirs(NULL, 0, &d);
  int run = access("/run/lock", W_OK) == 0;
  ASSERT_EQ_INT(d.n, (size_t)(run ? 3 : 2));
  if (run)
    assert_string_equal(d.dir[0], "/run/lock");
  assert_string_equal(d.dir[run ? 1 : 0], "/tmp");
  assert_string_equal(d.dir[run ? 2 : 1], "/x/locks");
  unsetenv("PFI_LOCK_DIR");
  pfi_gpu_lock_dirs(NULL, 0, &d);
  ASSERT_EQ_INT(d.n, (size_t)(run ? 2 : 1));
  unsetenv("PFI_EMU_STATE");
}

/* The record of a pending change: written by pfi_gpu_lock_note, found by
 * the next holder in `prev`, in every directory. */
static void test_pending(void **state) {
  (void)state;
  char a[] = "/tmp/pfi-test-lockXXXXXX", b[] = "/tmp/pfi-test-lockXXXXXX";
  assert_non_null(mkdtemp(a));
  assert_non_null(mkdtemp(b));
  struct pfi_gpu_lock_dirs d = {.n = 2};
  snprintf(d.dir[0], sizeof d.dir[0], "%s", a);
  snprintf(d.dir[1], sizeof d.dir[1], "%s", b);
  struct pfi_gpu_lock l, l2;
  struct pfi_gpu_lock_holder h;
  struct pfi_error err;
  ASSERT_EQ_INT(pfi_gpu_lock_acquire(&l, &d, "GPU-p", &h, &err), 0);
  assert_false(l.prev.pending);
  ASSERT_EQ_INT(pfi_gpu_lock_note(&l, "sweep", "/s/a.db", 1, 650000, 0, &err),
                0);
  /* Held in both directories: a second taker is refused. */
  ASSERT_EQ_INT(pfi_gpu_lock_acquire(&l2, &d, "GPU-p", &h, &err), PFI_EBUSY);
  assert_string_equal(h.cmd, "sweep");
  assert_true(h.pending);
  ASSERT_EQ_INT(h.orig_mw, 650000);
  struct pfi_gpu_lock_dirs only_b = {.n = 1};
  snprintf(only_b.dir[0], sizeof only_b.dir[0], "%s", b);
  ASSERT_EQ_INT(pfi_gpu_lock_acquire(&l2, &only_b, "GPU-p", &h, &err),
                PFI_EBUSY);
  pfi_gpu_lock_drop(&l);
  /* The holder died: the next one finds its pending change. */
  ASSERT_EQ_INT(pfi_gpu_lock_acquire(&l, &d, "GPU-p", &h, &err), 0);
  assert_true(l.prev.pending);
  assert_false(l.prev.kept);
  ASSERT_EQ_INT(l.prev.orig_mw, 650000);
  assert_string_equal(l.prev.store, "/s/a.db");
  ASSERT_EQ_INT(pfi_gpu_lock_note(&l, "cap", "/s/b.db", 1, 300000, 1, &err), 0);
  pfi_gpu_lock_drop(&l);
  ASSERT_EQ_INT(pfi_gpu_lock_acquire(&l, &only_b, "GPU-p", &h, &err), 0);
  assert_true(l.prev.kept);
  ASSERT_EQ_INT(l.prev.orig_mw, 300000);
  ASSERT_EQ_INT(pfi_gpu_lock_note(&l, "restore", NULL, 0, 0, 0, &err), 0);
  pfi_gpu_lock_drop(&l);
  ASSERT_EQ_INT(pfi_gpu_lock_acquire(&l, &only_b, "GPU-p", &h, &err), 0);
  assert_false(l.prev.pending);
  pfi_gpu_lock_drop(&l);
  char path[600];
  snprintf(path, sizeof path, "%s/pfi-sweep-GPU-p.lock", a);
  unlink(path);
  snprintf(path, sizeof path, "%s/pfi-sweep-GPU-p.lock", b);
  unlink(path);
  rmdir(a);
  rmdir(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),        cmocka_unit_test(test_describe),
      cmocka_unit_test(test_take_release), cmocka_unit_test(test_dir),
      cmocka_unit_test(test_pending),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
