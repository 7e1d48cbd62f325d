/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfi_read_secret: Kubernetes Secret volumes (symlinks into a root-owned
 * directory), systemd credentials (cred:NAME) and the hostile cases the
 * reader refuses (docs/security.md "Secrets"). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "testutil.h"

#include "pfi/transport.h"

static char base[256];

static void put(const char *rel, const char *text, mode_t mode) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  assert_int_equal(chmod(p, mode), 0);
}

static void mkd(const char *rel, mode_t mode) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  assert_int_equal(mkdir(p, 0700), 0);
  assert_int_equal(chmod(p, mode), 0); /* past the umask, the sticky bit */
}

static void lnk(const char *target, const char *rel) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  assert_int_equal(symlink(target, p), 0);
}

/* Reads base/rel: its length (or the error code), the text in buf, the
 * message in msg. */
static int rd(const char *rel, char *buf, size_t n, char *msg, size_t mn) {
  char p[PATH_MAX];
  if (strncmp(rel, "cred:", 5) == 0)
    snprintf(p, sizeof p, "%s", rel);
  else
    snprintf(p, sizeof p, "%s/%s", base, rel);
  struct pfi_error err;
  pfi_error_clear(&err);
  buf[0] = 0;
  int rc = pfi_read_secret(p, buf, n, &err);
  snprintf(msg, mn, "%s", rc < 0 ? err.msg : "");
  return rc;
}

#define EXPECT_REFUSED(rel, needle)                                            \
  do {                                                                         \
    char b_[64], m_[512];                                                      \
    int rc_ = rd(rel, b_, sizeof b_, m_, sizeof m_);                           \
    if (rc_ >= 0)                                                              \
      fail_msg("%s: read \"%s\", expected a refusal", rel, b_);               \
    if (!strstr(m_, needle))                                                   \
      fail_msg("%s: \"%s\" does not say \"%s\"", rel, m_, needle);            \
  } while (0)

static int setup(void **st) {
  (void)st;
  const char *t = getenv("TMPDIR");
  snprintf(base, sizeof base, "%s/pfi-secret-XXXXXX", t && *t ? t : "/tmp");
  assert_non_null(mkdtemp(base));
  return 0;
}

static int teardown(void **st) {
  (void)st;
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  return system(cmd) == 0 ? 0 : -1;
}

/* A Secret volume as the kubelet writes it: a sticky directory holding a
 * timestamped directory, ..data pointing at it and each key pointing
 * through ..data. */
static void k8s_volume_accepted(void **st) {
  (void)st;
  mkd("vol", 01777);
  mkd("vol/..2026_12_07_15_00_00.1234", 0755);
  put("vol/..2026_12_07_15_00_00.1234/token", "s3cret-token\nsecond\n", 0600);
  lnk("..2026_12_07_15_00_00.1234", "vol/..data");
  lnk("..data/token", "vol/token");
  char b[64], m[512];
  int rc = rd("vol/token", b, sizeof b, m, sizeof m);
  if (rc < 0)
    fail_msg("vol/token refused: %s", m);
  assert_string_equal(b, "s3cret-token");
  ASSERT_EQ_INT(rc, 12);
  /* An absolute link to it from elsewhere, and a relative path. */
  char abs[PATH_MAX];
  snprintf(abs, sizeof abs, "%s/vol/token", base);
  lnk(abs, "abs-link");
  assert_int_equal(rd("abs-link", b, sizeof b, m, sizeof m), 12);
  assert_string_equal(b, "s3cret-token");
  char cwd[PATH_MAX];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(base), 0);
  struct pfi_error err;
  char b2[64];
  rc = pfi_read_secret("./vol/../vol/token", b2, sizeof b2, &err);
  if (rc < 0)
    fail_msg("relative path refused: %s", err.msg);
  assert_string_equal(b2, "s3cret-token");
  /* Relative to the root directory. */
  assert_int_equal(chdir("/"), 0);
  char rel[PATH_MAX];
  snprintf(rel, sizeof rel, "%s/vol/token", base + 1);
  b2[0] = 0;
  rc = pfi_read_secret(rel, b2, sizeof b2, &err);
  assert_int_equal(chdir(cwd), 0);
  if (rc < 0)
    fail_msg("%s from /: refused: %s", rel, err.msg);
  assert_string_equal(b2, "s3cret-token");
  /* The link loop the old reader reported is now a bounded walk. */
  lnk("loop-b", "loop-a");
  lnk("loop-a", "loop-b");
  EXPECT_REFUSED("loop-a", "more than 40 symlinks");
}

static void hostile_refused(void **st) {
  (void)st;
  /* A file read directly: as before. */
  put("group-readable", "x\n", 0640);
  EXPECT_REFUSED("group-readable", "mode 640");
  put("world", "x\n", 0604);
  EXPECT_REFUSED("world", "mode 604");
  /* Through a symlink into a world-writable (not sticky) directory: anyone
   * could put their own token there. */
  mkd("ww", 0777);
  put("ww/token", "theirs\n", 0600);
  lnk("ww/token", "into-ww");
  EXPECT_REFUSED("into-ww", "writable by others (mode 777)");
  mkd("gw", 0770);
  put("gw/token", "theirs\n", 0600);
  lnk("gw/token", "into-gw");
  EXPECT_REFUSED("into-gw", "writable by others (mode 770)");
  /* A symlink lying in a world-writable directory, pointing at a good
   * file: whoever wrote it chose the file. */
  mkd("ok", 0755);
  put("ok/token", "mine\n", 0600);
  lnk("../ok/token", "ww/link");
  EXPECT_REFUSED("ww/link", "writable by others (mode 777)");
  /* Group-readable at the end of a symlink. */
  put("ok/gr", "x\n", 0640);
  lnk("ok/gr", "to-gr");
  EXPECT_REFUSED("to-gr", "mode 640");
  /* Another user's symlink, directory or file (the test runs as root when
   * it can chown; otherwise these cases need no check: a user cannot give
   * a file away). */
  if (geteuid() == 0) {
    char p[PATH_MAX];
    lnk("ok/token", "their-link");
    snprintf(p, sizeof p, "%s/their-link", base);
    assert_int_equal(lchown(p, 54321, 54321), 0);
    EXPECT_REFUSED("their-link", "symlink owned by uid 54321");
    mkd("theirs", 0755);
    put("theirs/token", "x\n", 0600);
    snprintf(p, sizeof p, "%s/theirs", base);
    assert_int_equal(chown(p, 54321, 54321), 0);
    lnk("theirs/token", "to-theirs");
    EXPECT_REFUSED("to-theirs", "owned by uid 54321, not root or the reader");
    put("ok/their-file", "x\n", 0600);
    snprintf(p, sizeof p, "%s/ok/their-file", base);
    assert_int_equal(chown(p, 54321, 54321), 0);
    lnk("ok/their-file", "to-their-file");
    EXPECT_REFUSED("to-their-file",
                   "owned by uid 54321, not root or the reader");
  }
  /* And the good file through a good link is read. */
  lnk("ok/token", "good-link");
  char b[64], m[512];
  assert_int_equal(rd("good-link", b, sizeof b, m, sizeof m), 4);
  assert_string_equal(b, "mine");
}

/* systemd's LoadCredential=: cred:NAME in $CREDENTIALS_DIRECTORY. */
static void credentials(void **st) {
  (void)st;
  mkd("creds", 0500 | 0200);
  put("creds/api-token", "cred-token\n", 0400);
  char dir[PATH_MAX], b[64], m[512];
  snprintf(dir, sizeof dir, "%s/creds", base);
  assert_int_equal(setenv("CREDENTIALS_DIRECTORY", dir, 1), 0);
  int rc = rd("cred:api-token", b, sizeof b, m, sizeof m);
  if (rc < 0)
    fail_msg("cred:api-token refused: %s", m);
  assert_string_equal(b, "cred-token");
  EXPECT_REFUSED("cred:missing", "creds/missing: No such file");
  EXPECT_REFUSED("cred:../ok/token", "no '/'");
  EXPECT_REFUSED("cred:", "no '/', not empty");
  EXPECT_REFUSED("cred:..", "no '/', not empty");
  assert_int_equal(unsetenv("CREDENTIALS_DIRECTORY"), 0);
  EXPECT_REFUSED("cred:api-token", "$CREDENTIALS_DIRECTORY is not set");
}

/* A POSIX ACL (as systemd grants a service's user its credential): the
 * group bits then show the ACL's mask. Builds the xattr by hand
 * (linux/posix_acl_xattr.h: version 2, entries tag/perm/id, little
 * endian). */
static size_t acl_blob(unsigned char *b, const unsigned e[][3], int n) {
  b[0] = 2, b[1] = b[2] = b[3] = 0;
  for (int i = 0; i < n; i++) {
    unsigned char *p = b + 4 + 8 * i;
    p[0] = e[i][0] & 255, p[1] = e[i][0] >> 8;
    p[2] = e[i][1] & 255, p[3] = e[i][1] >> 8;
    for (int k = 0; k < 4; k++)
      p[4 + k] = (e[i][2] >> (8 * k)) & 255;
  }
  return 4 + 8 * (size_t)n;
}

static void acl_grants(void **st) {
  (void)st;
  const unsigned NOID = 0xffffffffu, me = (unsigned)geteuid();
  /* user::rw- user:<reader>:r-- group::--- mask::r-- other::--- */
  const unsigned mine[][3] = {{0x01, 6, NOID}, {0x02, 4, me},
                              {0x04, 0, NOID}, {0x10, 4, NOID},
                              {0x20, 0, NOID}};
  /* user::rw- group::--- group:54321:r-- mask::r-- other::--- */
  const unsigned grp[][3] = {{0x01, 6, NOID}, {0x04, 0, NOID},
                             {0x08, 4, 54321}, {0x10, 4, NOID},
                             {0x20, 0, NOID}};
  /* user::rw- user:54321:r-- group::--- mask::r-- other::--- */
  const unsigned other[][3] = {{0x01, 6, NOID}, {0x02, 4, 54321},
                               {0x04, 0, NOID}, {0x10, 4, NOID},
                               {0x20, 0, NOID}};
  unsigned char b[128];
  char p[PATH_MAX];
  put("acl-mine", "acl-token\n", 0600);
  snprintf(p, sizeof p, "%s/acl-mine", base);
  size_t n = acl_blob(b, mine, 5);
  if (setxattr(p, "system.posix_acl_access", b, n, 0) != 0) {
    if (errno == ENOTSUP || errno == EOPNOTSUPP) {
      print_message("skipped: no POSIX ACLs on %s\n", base);
      skip();
    }
    fail_msg("setxattr %s: %s", p, strerror(errno));
  }
  struct stat sb;
  assert_int_equal(stat(p, &sb), 0);
  ASSERT_EQ_INT(sb.st_mode & 0777, 0640); /* the mask shows as group bits */
  char rb[64], m[512];
  int rc = rd("acl-mine", rb, sizeof rb, m, sizeof m);
  if (rc < 0)
    fail_msg("acl-mine refused: %s", m);
  assert_string_equal(rb, "acl-token");
  put("acl-grp", "x\n", 0600);
  snprintf(p, sizeof p, "%s/acl-grp", base);
  n = acl_blob(b, grp, 5);
  assert_int_equal(setxattr(p, "system.posix_acl_access", b, n, 0), 0);
  EXPECT_REFUSED("acl-grp", "its ACL lets a group read or write it");
  put("acl-other", "x\n", 0600);
  snprintf(p, sizeof p, "%s/acl-other", base);
  n = acl_blob(b, other, 5);
  assert_int_equal(setxattr(p, "system.posix_acl_access", b, n, 0), 0);
  EXPECT_REFUSED("acl-other", "its ACL lets uid 54321 read or write it");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(k8s_volume_accepted, setup, teardown),
      cmocka_unit_test_setup_teardown(hostile_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(credentials, setup, teardown),
      cmocka_unit_test_setup_teardown(acl_grants, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
