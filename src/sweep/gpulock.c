/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Per-GPU locks shared by the sweep, pfi cap and the crash recovery. */
#include "pfi/gpulock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "pfi/emu.h"

void pfi_gpu_lock_dir(struct pfi_device *dev, int emulated, char *buf,
                      size_t n) {
  const char *e;
  struct pfi_error err;
  if ((e = getenv("PFI_LOCK_DIR")) && *e)
    snprintf(buf, n, "%s", e);
  else if (dev && pfi_emu_state_dir(dev, buf, n, &err) == 0)
    return;
  else if (emulated && (e = getenv("PFI_EMU_STATE")) && *e)
    snprintf(buf, n, "%s", e);
  else if (emulated && (e = getenv("XDG_RUNTIME_DIR")) && *e)
    snprintf(buf, n, "%s/pfi-emu", e);
  else if (emulated)
    snprintf(buf, n, "/tmp/pfi-emu-%ld", (long)getuid());
  else if (access("/run/lock", W_OK) == 0)
    snprintf(buf, n, "/run/lock");
  else
    snprintf(buf, n, "/tmp");
}

/* Copies s into dst (n bytes) with control characters replaced, so that a
 * store path with a newline cannot forge a line of the record. */
static void clean_copy(char *dst, size_t n, const char *s) {
  size_t i = 0;
  for (; s && s[i] && i + 1 < n; i++)
    dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
  if (n)
    dst[i] = '\0';
}

void pfi_gpu_lock_holder_parse(const char *data, size_t n,
                               struct pfi_gpu_lock_holder *h) {
  char buf[1024];
  memset(h, 0, sizeof *h);
  /* A record is a few hundred bytes; the rest of a larger file is not a
   * record this pfi wrote. */
  if (n > sizeof buf - 1)
    n = sizeof buf - 1;
  memcpy(buf, data, n);
  buf[n] = '\0';
  for (char *line = buf, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    if (strncmp(line, "pid=", 4) == 0) {
      char *end;
      errno = 0;
      long v = strtol(line + 4, &end, 10);
      if (end != line + 4 && *end == '\0' && v > 0 && errno == 0 &&
          line[4] >= '0' && line[4] <= '9')
        h->pid = v;
    } else if (strncmp(line, "cmd=", 4) == 0) {
      clean_copy(h->cmd, sizeof h->cmd, line + 4);
    } else if (strncmp(line, "store=", 6) == 0) {
      clean_copy(h->store, sizeof h->store, line + 6);
    }
  }
}

/* Reads the holder's record from the lock file. */
static void read_holder(int fd, struct pfi_gpu_lock_holder *h) {
  char buf[1024];
  ssize_t got = pread(fd, buf, sizeof buf, 0);
  pfi_gpu_lock_holder_parse(buf, got > 0 ? (size_t)got : 0, h);
}

/* Replaces the record with this process's. Best effort: the lock is what
 * matters, the record only names its holder. */
static void write_holder(int fd, const char *cmd, const char *store) {
  char rec[1200], c[32], s[512] = "", abs[PATH_MAX];
  clean_copy(c, sizeof c, cmd ? cmd : "");
  if (store && *store)
    clean_copy(s, sizeof s, realpath(store, abs) ? abs : store);
  int len = snprintf(rec, sizeof rec, "pid=%ld\ncmd=%s\nstore=%s\n",
                     (long)getpid(), c, s);
  if (len <= 0 || (size_t)len >= sizeof rec || ftruncate(fd, 0) != 0)
    return;
  if (pwrite(fd, rec, (size_t)len, 0) != len) {
    /* A partial record would name a wrong store: leave none. */
    if (ftruncate(fd, 0) != 0)
      return;
  }
}

int pfi_gpu_lock_take(const char *dir, const char *uuid, const char *cmd,
                      const char *store, struct pfi_gpu_lock_holder *holder,
                      struct pfi_error *err) {
  char path[PATH_MAX];
  if (holder)
    memset(holder, 0, sizeof *holder);
  if (!uuid || !uuid[0] || strchr(uuid, '/'))
    return pfi_error_set(err, PFI_EINVAL, "GPU UUID '%s' cannot name a lock",
                         uuid ? uuid : "");
  if ((size_t)snprintf(path, sizeof path, "%s/pfi-sweep-%s.lock", dir, uuid) >=
      sizeof path)
    return pfi_error_set(err, PFI_EIO, "%s: lock directory path too long",
                         dir);
  int writable = 1;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && (errno == EACCES || errno == EPERM)) {
    /* A lock file another user created (0644): a read-only descriptor
     * locks it just as well, only without a record of the holder. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    writable = 0;
  }
  if (fd < 0)
    return pfi_error_set(err, PFI_EIO,
                         "%s: cannot create the GPU's lock: %s (set "
                         "PFI_LOCK_DIR to a writable directory)",
                         path, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    if (e == EWOULDBLOCK) {
      struct pfi_gpu_lock_holder h;
      char who[700];
      read_holder(fd, &h);
      close(fd);
      if (holder)
        *holder = h;
      return pfi_error_set(err, PFI_EBUSY, "GPU %s is held by %s", uuid,
                           pfi_gpu_lock_holder_str(&h, who, sizeof who));
    }
    close(fd);
    return pfi_error_set(err, PFI_EIO, "%s: lock: %s", path, strerror(e));
  }
  if (writable)
    write_holder(fd, cmd, store);
  return fd;
}

void pfi_gpu_lock_release(int fd) {
  if (fd >= 0)
    close(fd); /* closing the only descriptor drops the flock */
}

char *pfi_gpu_lock_holder_str(const struct pfi_gpu_lock_holder *h, char *buf,
                              size_t n) {
  if (!h || (!h->cmd[0] && !h->pid)) {
    snprintf(buf, n, "another pfi");
    return buf;
  }
  int w = snprintf(buf, n, "pfi%s%s", h->cmd[0] ? " " : "", h->cmd);
  if (w < 0 || (size_t)w >= n)
    return buf;
  if (h->pid && h->store[0])
    snprintf(buf + w, n - (size_t)w, " (pid %ld, store %s)", h->pid,
             h->store);
  else if (h->pid)
    snprintf(buf + w, n - (size_t)w, " (pid %ld)", h->pid);
  else if (h->store[0])
    snprintf(buf + w, n - (size_t)w, " (store %s)", h->store);
  return buf;
}
