/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfi_read_secret (pfi/transport.h): a password or token file's first line.
 * Apart from the NATS transport, so that a program that reads a token but
 * speaks no NATS (pfi ctl) does not link the NATS client. */
#include "pfi/transport.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pfi_read_secret(const char *path, char *buf, size_t n,
                    struct pfi_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat sb;
  if (fd < 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return pfi_error_set(err, PFI_EIO, "%s: not a regular file", path);
  }
  if (sb.st_mode & 077) {
    close(fd);
    return pfi_error_set(err, PFI_ENOPERM,
                         "%s: readable or writable by others (mode %03o); "
                         "chmod 600 it",
                         path, (unsigned)(sb.st_mode & 0777));
  }
  ssize_t k = read(fd, buf, n - 1);
  close(fd);
  if (k < 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  buf[k] = 0;
  size_t len = strcspn(buf, "\r\n");
  if ((size_t)k == n - 1 && len == (size_t)k)
    return pfi_error_set(err, PFI_EPARSE, "%s: secret longer than %zu bytes",
                         path, n - 2);
  buf[len] = 0;
  if (len == 0)
    return pfi_error_set(err, PFI_EPARSE, "%s: empty first line", path);
  return (int)len;
}

