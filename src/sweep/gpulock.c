/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Per-GPU locks shared by the sweep, pfi cap and the crash recovery. */
#include "pfi/gpulock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfi/emu.h"

void pfi_gpu_lock_dirs(struct pfi_device *dev, int emulated,
                       struct pfi_gpu_lock_dirs *d) {
  const char *e;
  struct pfi_error err;
  memset(d, 0, sizeof *d);
  if (dev && pfi_emu_state_dir(dev, d->dir[0], sizeof d->dir[0], &err) == 0) {
    d->n = 1;
    return;
  }
  if (emulated) {
    /* Another backend's emulated GPUs live in the emulator's default
     * state directory, chosen as the emu backend chooses it. */
    if ((e = getenv("PFI_EMU_STATE")) && *e)
      snprintf(d->dir[0], sizeof d->dir[0], "%s", e);
    else if ((e = getenv("XDG_RUNTIME_DIR")) && *e)
      snprintf(d->dir[0], sizeof d->dir[0], "%s/pfi-emu", e);
    else
      snprintf(d->dir[0], sizeof d->dir[0], "/tmp/pfi-emu-%ld", (long)getuid());
    d->n = 1;
    return;
  }
  if (access("/run/lock", W_OK) == 0)
    snprintf(d->dir[d->n++], sizeof d->dir[0], "/run/lock");
  snprintf(d->dir[d->n++], sizeof d->dir[0], "/tmp");
  if ((e = getenv("PFI_LOCK_DIR")) && *e && strcmp(e, "/run/lock") != 0 &&
      strcmp(e, "/tmp") != 0)
    snprintf(d->dir[d->n++], sizeof d->dir[0], "%s", e);
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
  int kept = 0;
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
    } else if (strncmp(line, "orig_mw=", 8) == 0) {
      char *end;
      errno = 0;
      unsigned long long v = strtoull(line + 8, &end, 10);
      if (end != line + 8 && *end == '\0' && errno == 0 && line[8] >= '0' &&
          line[8] <= '9' && v <= UINT32_MAX) {
        h->orig_mw = (uint32_t)v;
        h->pending = 1;
      }
    } else if (strncmp(line, "job=", 4) == 0) {
      char *end, *end2;
      errno = 0;
      long v = strtol(line + 4, &end, 10);
      if (end != line + 4 && *end == ':' && v > 0 && errno == 0 &&
          line[4] >= '0' && line[4] <= '9' && end[1] >= '0' && end[1] <= '9') {
        unsigned long long st = strtoull(end + 1, &end2, 10);
        if (*end2 == '\0' && errno == 0) {
          h->job_pid = v;
          h->job_start = st;
        }
      }
    } else if (strcmp(line, "kept=1") == 0) {
      kept = 1;
    }
  }
  h->kept = h->pending && kept;
}

/* Reads the holder's record from the lock file. A pending change is
 * believed only from a file of this user or root: another user could
 * have created the file first (in /tmp) with a limit of their choosing. */
static void read_holder(int fd, struct pfi_gpu_lock_holder *h) {
  char buf[1024];
  ssize_t got = pread(fd, buf, sizeof buf, 0);
  struct stat sb;
  pfi_gpu_lock_holder_parse(buf, got > 0 ? (size_t)got : 0, h);
  if (fstat(fd, &sb) != 0 || (sb.st_uid != 0 && sb.st_uid != geteuid())) {
    h->pending = 0;
    h->orig_mw = 0;
    h->kept = 0;
    h->job_pid = 0;
    h->job_start = 0;
  }
}

/* Replaces the record with this process's. Returns 0 or -1 when the
 * record could not be written whole. */
static int write_holder(int fd, const char *cmd, const char *store, int pending,
                        uint32_t orig_mw, int kept, long job_pid,
                        unsigned long long job_start) {
  char rec[1200], c[32], s[512] = "", abs[PATH_MAX], extra[128] = "";
  clean_copy(c, sizeof c, cmd ? cmd : "");
  if (store && *store)
    clean_copy(s, sizeof s, realpath(store, abs) ? abs : store);
  size_t o = 0;
  if (pending)
    o = (size_t)snprintf(extra, sizeof extra, "orig_mw=%lu\n%s",
                         (unsigned long)orig_mw, kept ? "kept=1\n" : "");
  if (job_pid > 0)
    snprintf(extra + o, sizeof extra - o, "job=%ld:%llu\n", job_pid, job_start);
  int len = snprintf(rec, sizeof rec, "pid=%ld\ncmd=%s\nstore=%s\n%s",
                     (long)getpid(), c, s, extra);
  if (len <= 0 || (size_t)len >= sizeof rec || ftruncate(fd, 0) != 0)
    return -1;
  if (pwrite(fd, rec, (size_t)len, 0) != len) {
    /* A partial record would name a wrong store: leave none. */
    if (ftruncate(fd, 0) != 0)
      return -1;
    return -1;
  }
  return 0;
}

/* Opens and locks one lock file. Returns the descriptor, PFI_EBUSY (with
 * *h from the holder's record), or another error; *writable says whether
 * the record can be written. */
static int lock_one(const char *dir, const char *uuid, int *writable,
                    struct pfi_gpu_lock_holder *h, struct pfi_error *err) {
  char path[PATH_MAX];
  memset(h, 0, sizeof *h);
  if ((size_t)snprintf(path, sizeof path, "%s/pfi-sweep-%s.lock", dir, uuid) >=
      sizeof path)
    return pfi_error_set(err, PFI_EIO, "%s: lock directory path too long", dir);
  *writable = 1;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && (errno == EACCES || errno == EPERM)) {
    /* A lock file another user created (0644): a read-only descriptor
     * locks it just as well, only without a record of the holder. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    *writable = 0;
  }
  if (fd < 0)
    return pfi_error_set(err, PFI_EIO, "%s: cannot create the GPU's lock: %s",
                         path, strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    if (e == EWOULDBLOCK) {
      char who[700];
      read_holder(fd, h);
      close(fd);
      return pfi_error_set(err, PFI_EBUSY, "GPU %s is held by %s", uuid,
                           pfi_gpu_lock_holder_str(h, who, sizeof who));
    }
    close(fd);
    return pfi_error_set(err, PFI_EIO, "%s: lock: %s", path, strerror(e));
  }
  read_holder(fd, h);
  return fd;
}

int pfi_gpu_lock_take(const char *dir, const char *uuid, const char *cmd,
                      const char *store, struct pfi_gpu_lock_holder *holder,
                      struct pfi_error *err) {
  struct pfi_gpu_lock_holder h;
  int writable;
  if (holder)
    memset(holder, 0, sizeof *holder);
  if (!uuid || !uuid[0] || strchr(uuid, '/'))
    return pfi_error_set(err, PFI_EINVAL, "GPU UUID '%s' cannot name a lock",
                         uuid ? uuid : "");
  int fd = lock_one(dir, uuid, &writable, &h, err);
  if (fd == PFI_EBUSY && holder)
    *holder = h;
  if (fd >= 0 && writable)
    write_holder(fd, cmd, store, 0, 0, 0, 0, 0);
  return fd;
}

void pfi_gpu_lock_release(int fd) {
  if (fd >= 0)
    close(fd); /* closing the only descriptor drops the flock */
}

void pfi_gpu_lock_init(struct pfi_gpu_lock *l) {
  memset(l, 0, sizeof *l);
  for (size_t i = 0; i < PFI_GPU_LOCK_DIRS_MAX; i++)
    l->fd[i] = -1;
}

void pfi_gpu_lock_drop(struct pfi_gpu_lock *l) {
  for (size_t i = 0; i < PFI_GPU_LOCK_DIRS_MAX; i++) {
    pfi_gpu_lock_release(l->fd[i]);
    l->fd[i] = -1;
  }
  l->n = 0;
}

int pfi_gpu_lock_acquire(struct pfi_gpu_lock *l,
                         const struct pfi_gpu_lock_dirs *d, const char *uuid,
                         struct pfi_gpu_lock_holder *holder,
                         struct pfi_error *err) {
  pfi_gpu_lock_init(l);
  if (holder)
    memset(holder, 0, sizeof *holder);
  if (!uuid || !uuid[0] || strchr(uuid, '/') || strlen(uuid) >= sizeof l->uuid)
    return pfi_error_set(err, PFI_EINVAL, "GPU UUID '%s' cannot name a lock",
                         uuid ? uuid : "");
  snprintf(l->uuid, sizeof l->uuid, "%s", uuid);
  int got_prev = 0;
  for (size_t i = 0; i < d->n; i++) {
    struct pfi_gpu_lock_holder h;
    int writable;
    int fd = lock_one(d->dir[i], uuid, &writable, &h, err);
    if (fd < 0) {
      if (fd == PFI_EBUSY && holder)
        *holder = h;
      pfi_gpu_lock_drop(l);
      return fd;
    }
    l->fd[l->n++] = fd;
    /* The record of the first directory that has one; a pending change
     * wherever one is recorded. */
    if ((!got_prev && (h.pid || h.cmd[0])) || (h.pending && !l->prev.pending)) {
      l->prev = h;
      got_prev = 1;
    }
  }
  return 0;
}

int pfi_gpu_lock_note(struct pfi_gpu_lock *l, const char *cmd,
                      const char *store, int pending, uint32_t orig_mw,
                      int kept, struct pfi_error *err) {
  return pfi_gpu_lock_note_job(l, cmd, store, pending, orig_mw, kept, 0, 0,
                               err);
}

int pfi_gpu_lock_note_job(struct pfi_gpu_lock *l, const char *cmd,
                          const char *store, int pending, uint32_t orig_mw,
                          int kept, long job_pid, unsigned long long job_start,
                          struct pfi_error *err) {
  int ok = 0;
  for (size_t i = 0; i < l->n; i++) {
    struct stat sb;
    /* Only a record that a later read believes counts (see read_holder). */
    if (l->fd[i] >= 0 &&
        write_holder(l->fd[i], cmd, store, pending, orig_mw, kept, job_pid,
                     job_start) == 0 &&
        fstat(l->fd[i], &sb) == 0 && (sb.st_uid == 0 || sb.st_uid == geteuid()))
      ok++;
  }
  if (ok == 0 && l->n > 0)
    return pfi_error_set(err, PFI_EIO,
                         "GPU %s: cannot write the lock's record of the "
                         "limit to put back (a lock file of another user?)",
                         l->uuid);
  return 0;
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
    snprintf(buf + w, n - (size_t)w, " (pid %ld, store %s)", h->pid, h->store);
  else if (h->pid)
    snprintf(buf + w, n - (size_t)w, " (pid %ld)", h->pid);
  else if (h->store[0])
    snprintf(buf + w, n - (size_t)w, " (store %s)", h->store);
  return buf;
}

int pfi_proc_start(long pid, unsigned long long *start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0)
    return -1;
  buf[got] = '\0';
  /* "pid (comm) state ppid ...": comm may hold spaces and ')', so fields
   * are counted from the last ')': the first word after it is field 3,
   * starttime is field 22. */
  char *p = strrchr(buf, ')'), *save = NULL, *tok;
  if (!p)
    return -1;
  int field = 3;
  for (tok = strtok_r(p + 1, " ", &save); tok && field < 22;
       tok = strtok_r(NULL, " ", &save))
    field++;
  if (!tok)
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(tok, &end, 10);
  if (end == tok || errno)
    return -1;
  *start = v;
  return 0;
}

int pfi_gpu_lock_end_job(const struct pfi_gpu_lock_holder *h,
                         struct pfi_error *err) {
  unsigned long long st = 0;
  if (!h || h->job_pid <= 0 || pfi_proc_start(h->job_pid, &st) != 0 ||
      st != h->job_start || getpgid((pid_t)h->job_pid) != (pid_t)h->job_pid)
    return 0;
  if (kill(-(pid_t)h->job_pid, SIGKILL) != 0)
    return pfi_error_set(err, errno == EPERM ? PFI_ENOPERM : PFI_EIO,
                         "cannot end the job (pid %ld) that a pfi %s which "
                         "died left running: %s",
                         h->job_pid, h->cmd[0] ? h->cmd : "", strerror(errno));
  return 1;
}
