/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfi_read_secret (pfi/secret.h): a password or token file's first line.
 * Apart from the NATS transport, so that a program that reads a token but
 * speaks no NATS (pfi ctl) does not link the NATS client.
 *
 * The rule (docs/security.md "Secrets"):
 * - "cred:NAME" is the file NAME in $CREDENTIALS_DIRECTORY (systemd's
 *   LoadCredential=); NAME has no '/' and is not "." or "..".
 * - The file is a regular file whose owner alone may read or write it: no
 *   group or other permission bits, or, where it has a POSIX access ACL,
 *   no other bits, no permission for the owning group or a named group and
 *   no named user but the reader (systemd grants a service's user a
 *   credential through such an ACL, whose mask then shows as group bits).
 * - A path with no symlink in it is read as it is. A path through symlinks
 *   (a Kubernetes Secret volume: token -> ..data/token, ..data ->
 *   ..2026_...) is resolved here one component at a time, and followed only
 *   when each symlink and the final file are owned by root or the reader,
 *   and every directory on the way (the resolved path's and those holding
 *   a symlink) is owned by root or the reader and not writable by group or
 *   others, except a sticky directory (1777: a Secret volume's own
 *   directory) where no one else can replace root's or the reader's
 *   entries. */
#include "pfi/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_LINKS 40

static int owner_ok(uid_t u) { return u == 0 || u == geteuid(); }

/* A directory a symlink may lead through: see the rule above. */
static int dir_ok(const char *dir, struct pfi_error *err) {
  struct stat sb;
  if (stat(dir, &sb) != 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", dir, strerror(errno));
  if (!owner_ok(sb.st_uid))
    return pfi_error_set(err, PFI_ENOPERM,
                         "%s: owned by uid %u, not root or the reader; not "
                         "following a symlink through it",
                         dir, (unsigned)sb.st_uid);
  if ((sb.st_mode & 022) && !(sb.st_mode & S_ISVTX))
    return pfi_error_set(err, PFI_ENOPERM,
                         "%s: writable by others (mode %03o); not following "
                         "a symlink through it",
                         dir, (unsigned)(sb.st_mode & 0777));
  return 0;
}

/* Resolves `path` (absolute or relative) into out, checking each symlink
 * and the directory holding it as it goes; *followed: whether one was. */
static int resolve(const char *path, char *out, size_t n, int *followed,
                   struct pfi_error *err) {
  char res[PATH_MAX], rest[2 * PATH_MAX], tmp[2 * PATH_MAX];
  int links = 0;
  *followed = 0;
  if (path[0] == '/')
    res[0] = 0;
  else if (!getcwd(res, sizeof res))
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  else if (strcmp(res, "/") == 0)
    res[0] = 0; /* components are appended as "/NAME" */
  if (strlen(path) >= sizeof rest)
    return pfi_error_set(err, PFI_EIO, "%s: path too long", path);
  strcpy(rest, path);
  char *p = rest;
  for (;;) {
    while (*p == '/')
      p++;
    if (!*p)
      break;
    char *q = strchr(p, '/');
    size_t cl = q ? (size_t)(q - p) : strlen(p);
    if (cl == 1 && p[0] == '.') {
      p += cl;
      continue;
    }
    if (cl == 2 && p[0] == '.' && p[1] == '.') {
      char *s = strrchr(res, '/');
      if (s)
        *s = 0;
      p += cl;
      continue;
    }
    size_t rl = strlen(res);
    if (rl + 1 + cl >= sizeof res)
      return pfi_error_set(err, PFI_EIO, "%s: path too long", path);
    char cand[PATH_MAX];
    memcpy(cand, res, rl);
    cand[rl] = '/';
    memcpy(cand + rl + 1, p, cl);
    cand[rl + 1 + cl] = 0;
    p += cl;
    struct stat sb;
    if (lstat(cand, &sb) != 0)
      return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
    if (!S_ISLNK(sb.st_mode)) {
      memcpy(res, cand, rl + 2 + cl);
      continue;
    }
    if (++links > MAX_LINKS)
      return pfi_error_set(err, PFI_EIO, "%s: more than %d symlinks", path,
                           MAX_LINKS);
    *followed = 1;
    int rc;
    if ((rc = dir_ok(rl ? res : "/", err)) < 0)
      return rc;
    if (!owner_ok(sb.st_uid))
      return pfi_error_set(err, PFI_ENOPERM,
                           "%s: symlink owned by uid %u, not root or the "
                           "reader; not followed",
                           cand, (unsigned)sb.st_uid);
    char tgt[PATH_MAX];
    ssize_t tl = readlink(cand, tgt, sizeof tgt - 1);
    if (tl < 0)
      return pfi_error_set(err, PFI_EIO, "%s: %s", cand, strerror(errno));
    tgt[tl] = 0;
    if (tgt[0] == '/')
      res[0] = 0;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/%s", tgt, p) >= sizeof tmp)
      return pfi_error_set(err, PFI_EIO, "%s: path too long", path);
    strcpy(rest, tmp);
    p = rest;
  }
  if (!res[0])
    strcpy(res, "/");
  if (strlen(res) >= n)
    return pfi_error_set(err, PFI_EIO, "%s: path too long", path);
  strcpy(out, res);
  if (!*followed)
    return 0;
  /* Every directory of the resolved path, from the root down. */
  char dir[PATH_MAX];
  strcpy(dir, res);
  char *s = strrchr(dir, '/');
  for (;;) {
    *s = 0;
    int rc = dir_ok(dir[0] ? dir : "/", err);
    if (rc < 0)
      return rc;
    if (!dir[0])
      break;
    s = strrchr(dir, '/');
  }
  return 0;
}

/* POSIX ACL xattr (linux/posix_acl_xattr.h): a version, then entries of a
 * tag, permissions and an id, little-endian. */
enum {
  ACL_UOBJ = 0x01,
  ACL_NUSER = 0x02,
  ACL_GOBJ = 0x04,
  ACL_NGROUP = 0x08,
  ACL_MASKE = 0x10,
  ACL_OTHERE = 0x20
};

static uint32_t le32(const unsigned char *b) {
  return b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

/* 0 when only the owner (and, through a named-user entry, the reader) may
 * read or write the file; otherwise the reason in why. */
static int private_ok(int fd, const struct stat *sb, char *why, size_t n) {
  unsigned char acl[1024];
  ssize_t al = fgetxattr(fd, "system.posix_acl_access", acl, sizeof acl);
  if (al < 0 || al < 4) {
    if (!(sb->st_mode & 077))
      return 0;
    snprintf(why, n, "readable or writable by others (mode %03o); chmod 600 it",
             (unsigned)(sb->st_mode & 0777));
    return -1;
  }
  if (sb->st_mode & 007) {
    snprintf(why, n, "readable or writable by others (mode %03o); chmod 600 it",
             (unsigned)(sb->st_mode & 0777));
    return -1;
  }
  for (ssize_t i = 4; i + 8 <= al; i += 8) {
    unsigned tag = acl[i] | acl[i + 1] << 8, perm = acl[i + 2] | acl[i + 3] << 8;
    uint32_t id = le32(acl + i + 4);
    if ((tag == ACL_GOBJ || tag == ACL_NGROUP) && (perm & 06)) {
      snprintf(why, n, "its ACL lets a group read or write it; setfacl -b it");
      return -1;
    }
    if (tag == ACL_NUSER && (perm & 06) && id != (uint32_t)geteuid()) {
      snprintf(why, n, "its ACL lets uid %u read or write it; setfacl -b it",
               (unsigned)id);
      return -1;
    }
  }
  return 0;
}

static int read_private(const char *path, char *buf, size_t n, int whole,
                        struct pfi_error *err) {
  char cpath[PATH_MAX], rpath[PATH_MAX];
  const char *shown = path;
  if (strncmp(path, "cred:", 5) == 0) {
    const char *name = path + 5, *dir = getenv("CREDENTIALS_DIRECTORY");
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0)
      return pfi_error_set(err, PFI_EINVAL,
                           "%s: a credential's name: no '/', not empty", path);
    if (!dir || dir[0] != '/')
      return pfi_error_set(err, PFI_EINVAL,
                           "%s: $CREDENTIALS_DIRECTORY is not set (systemd's "
                           "LoadCredential=)",
                           path);
    if ((size_t)snprintf(cpath, sizeof cpath, "%s/%s", dir, name) >=
        sizeof cpath)
      return pfi_error_set(err, PFI_EIO, "%s: path too long", path);
    path = cpath;
  }
  int followed, rc;
  if ((rc = resolve(path, rpath, sizeof rpath, &followed, err)) < 0)
    return rc;
  /* O_NOFOLLOW: the resolved path's last component is no symlink unless
   * it was replaced since, which only root or the reader could do. */
  int fd = open(followed ? rpath : path,
                O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat sb;
  if (fd < 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", shown, strerror(errno));
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return pfi_error_set(err, PFI_EIO, "%s: not a regular file", shown);
  }
  char why[160];
  if (private_ok(fd, &sb, why, sizeof why) < 0) {
    close(fd);
    return pfi_error_set(err, PFI_ENOPERM, "%s: %s", shown, why);
  }
  if (followed && !owner_ok(sb.st_uid)) {
    close(fd);
    return pfi_error_set(err, PFI_ENOPERM,
                         "%s: %s owned by uid %u, not root or the reader",
                         shown, rpath, (unsigned)sb.st_uid);
  }
  ssize_t k = read(fd, buf, n - 1);
  close(fd);
  if (k < 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", shown, strerror(errno));
  buf[k] = 0;
  if (whole) {
    if ((size_t)k == n - 1)
      return pfi_error_set(err, PFI_EPARSE, "%s: longer than %zu bytes", shown,
                           n - 2);
    if (memchr(buf, 0, (size_t)k))
      return pfi_error_set(err, PFI_EPARSE, "%s: a NUL byte", shown);
    return (int)k;
  }
  size_t len = strcspn(buf, "\r\n");
  if ((size_t)k == n - 1 && len == (size_t)k)
    return pfi_error_set(err, PFI_EPARSE, "%s: secret longer than %zu bytes",
                         shown, n - 2);
  buf[len] = 0;
  if (len == 0)
    return pfi_error_set(err, PFI_EPARSE, "%s: empty first line", shown);
  return (int)len;
}

int pfi_read_secret(const char *path, char *buf, size_t n,
                    struct pfi_error *err) {
  return read_private(path, buf, n, 0, err);
}

int pfi_read_secret_file(const char *path, char *buf, size_t n,
                         struct pfi_error *err) {
  return read_private(path, buf, n, 1, err);
}
