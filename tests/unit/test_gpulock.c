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
  const char *bad[] = {"pid=-5", "pid=0", "pid=12abc", "pid= 12", "pid=",
                       "pid=99999999999999999999999"};
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
  int fd = pfi_gpu_lock_take(dir, "GPU-x", "sweep", "/nonexistent/t.db", &h,
                             &err);
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
  assert_non_null(strstr(err.msg, "PFI_LOCK_DIR"));
  unlink(path);
  snprintf(path, sizeof path, "%s/pfi-sweep-GPU-y.lock", dir);
  unlink(path);
  rmdir(dir);
}

static void test_dir(void **state) {
  (void)state;
  char buf[512];
  setenv("PFI_LOCK_DIR", "/x/locks", 1);
  pfi_gpu_lock_dir(NULL, 1, buf, sizeof buf);
  assert_string_equal(buf, "/x/locks");
  unsetenv("PFI_LOCK_DIR");
  setenv("PFI_EMU_STATE", "/e/state", 1);
  pfi_gpu_lock_dir(NULL, 1, buf, sizeof buf);
  assert_string_equal(buf, "/e/state");
  /* Real GPUs: /run/lock when writable, else /tmp. */
  pfi_gpu_lock_dir(NULL, 0, buf, sizeof buf);
  assert_string_equal(buf, access("/run/lock", W_OK) == 0 ? "/run/lock"
                                                           : "/tmp");
  unsetenv("PFI_EMU_STATE");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_describe),
      cmocka_unit_test(test_take_release),
      cmocka_unit_test(test_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
