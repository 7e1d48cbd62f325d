/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The `emu` device backend: emulated H200/H100 GPUs whose caps persist in a
 * state directory shared by every process, with a virtual clock (a
 * 30-minute run passes in milliseconds) or real time, and optionally one
 * job-library entry running on some of the GPUs.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pfi/emu.h"

#define PATH_MAX_EMU 1024

struct emu_ctx {
  const struct pfi_emu_profile *prof;
  unsigned n;
  unsigned long seed;
  int realtime;
  double speed; /* real-time mode: device seconds per real second */
  /* An out-of-band limit (as a node's BMC sets), mW; 0: none. The limit
   * enforced is the lower of it and the cap set through the backend. */
  uint32_t ext_mw;
  char dir[PATH_MAX_EMU];
  char caps_path[PATH_MAX_EMU + 32];
  char lock_path[PATH_MAX_EMU + 32];
  /* The caps as last read, valid while the lock file's generation counter
   * and the caps file's identity are unchanged (see load_caps). */
  int lock_fd;
  int cache_ok;
  uint64_t cache_gen;
  struct stat cache_st;
  int cache_absent;
  uint32_t cache[PFI_EMU_MAX_GPUS];
  double t0_mono; /* real-time mode: monotonic clock at open */
  double vt;      /* the device clock, s */
  double last_t;  /* integrated up to this time */
  double energy_j[PFI_EMU_MAX_GPUS];
  /* The attached job, if any. */
  int attached;
  struct pfi_emu_job job;
  unsigned rank_gpu[PFI_EMU_MAX_GPUS]; /* device GPU of each attached rank */
  size_t n_attached;
  unsigned long job_seed;
  double t_attach;
  double cum_tokens;
  struct pfi_emu_run *run;
  uint32_t run_caps[PFI_EMU_MAX_GPUS]; /* caps the run was built for */
};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cur_time(struct emu_ctx *c) {
  return c->realtime ? c->speed * (mono_s() - c->t0_mono) : c->vt;
}

/* ---- persistent caps ---------------------------------------------------- */

static int mkdirs(const char *dir, struct pfi_error *err) {
  char buf[PATH_MAX_EMU];
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
      return pfi_error_set(err, PFI_EIO, "%s: cannot create directory: %s", buf,
                           strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0700) != 0 && errno != EEXIST)
    return pfi_error_set(err, PFI_EIO, "%s: cannot create directory: %s", buf,
                         strerror(errno));
  return 0;
}

/* Takes the state lock (LOCK_SH or LOCK_EX) on the session's descriptor
 * of the lock file; unlock() releases it. */
/* The state directory must be this user's own: the default one sits in
 * /tmp, where another user could create it first and plant links named
 * like the state files, through which a root pfi would write. */
static int check_dir(const char *dir, struct pfi_error *err) {
  struct stat sb;
  if (lstat(dir, &sb) != 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", dir, strerror(errno));
  if (!S_ISDIR(sb.st_mode))
    return pfi_error_set(err, PFI_EIO,
                         "%s: the emulator's state directory is not a "
                         "directory (a symbolic link?)",
                         dir);
  if (sb.st_uid != geteuid() || (sb.st_mode & S_IWOTH))
    return pfi_error_set(err, PFI_ENOPERM,
                         "%s: the emulator's state directory belongs to "
                         "another user or is writable by all; use one of "
                         "your own (PFI_EMU_STATE)",
                         dir);
  return 0;
}

static int lock_take(struct emu_ctx *c, int op, struct pfi_error *err) {
  while (flock(c->lock_fd, op) != 0) {
    if (errno == EINTR)
      continue;
    return pfi_error_set(err, PFI_EIO, "%s: cannot lock: %s", c->lock_path,
                         strerror(errno));
  }
  return 0;
}

static void unlock(struct emu_ctx *c) { flock(c->lock_fd, LOCK_UN); }

/* The state's generation: a counter in the first 8 bytes of the lock file
 * that every writer increments, under the exclusive lock, after replacing
 * the caps file. An empty lock file (a new state directory) is 0. */
static uint64_t read_gen(const struct emu_ctx *c) {
  uint64_t g = 0;
  if (pread(c->lock_fd, &g, sizeof g, 0) != (ssize_t)sizeof g)
    g = 0;
  return g;
}

/* The caps file's identity; *absent when there is none. */
static int caps_stat(const struct emu_ctx *c, struct stat *sb, int *absent,
                     struct pfi_error *err) {
  *absent = 0;
  if (stat(c->caps_path, sb) == 0)
    return 0;
  memset(sb, 0, sizeof *sb);
  if (errno == ENOENT) {
    *absent = 1;
    return 0;
  }
  return pfi_error_set(err, PFI_EIO, "%s: %s", c->caps_path, strerror(errno));
}

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
         a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
         a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
         a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
         a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Reads the caps file into caps[0..PFI_EMU_MAX_GPUS) (TDP where absent):
 * every GPU of the file, not only this session's c->n, so that a session
 * of fewer GPUs that rewrites the file keeps the caps of the others. The
 * caller holds the lock. A malformed line is an error naming the file and
 * line. */
static int read_caps(struct emu_ctx *c, uint32_t *caps, struct pfi_error *err) {
  for (unsigned i = 0; i < PFI_EMU_MAX_GPUS; i++)
    caps[i] = c->prof->default_mw;
  FILE *fp = fopen(c->caps_path, "r");
  if (!fp) {
    if (errno == ENOENT)
      return 0;
    return pfi_error_set(err, PFI_EIO, "%s: cannot read: %s", c->caps_path,
                         strerror(errno));
  }
  char line[256];
  long ln = 0;
  int rc = 0;
  while (fgets(line, sizeof line, fp)) {
    ln++;
    if (line[0] == '#' || line[0] == '\n')
      continue;
    unsigned g;
    unsigned long mw;
    char extra;
    if (sscanf(line, "%u %lu %c", &g, &mw, &extra) != 2 ||
        mw < c->prof->min_mw || mw > c->prof->max_mw) {
      rc = pfi_error_setloc(err, PFI_ESTATE, c->caps_path, ln, 1,
                            "malformed emulator state (expected 'GPU "
                            "CAP_MW' within the limits); remove the file to "
                            "reset the emulated GPUs");
      break;
    }
    if (g < PFI_EMU_MAX_GPUS)
      caps[g] = (uint32_t)mw;
  }
  fclose(fp);
  return rc;
}

/* The caps as every process sees them. Reading the file under the shared
 * lock on every call costs an open, a lock and a parse per sample; instead
 * the last read is kept and reused while (a) the generation counter that
 * every writer bumps is unchanged and (b) the caps file is the same file
 * (device, inode, size, modification and change times), which also catches
 * a file edited or deleted by hand. A writer replaces the file and then
 * bumps the counter before it drops its lock, so a reader that sees the old
 * counter reads while that set_cap has not yet returned; once it has
 * returned, every reader sees the new counter and rereads. The reread takes
 * the shared lock, so counter, file and parse are one consistent state. */
static int load_caps(struct emu_ctx *c, uint32_t *caps, struct pfi_error *err) {
  struct stat sb;
  int absent, rc;
  if (c->cache_ok) {
    uint64_t g = read_gen(c);
    if ((rc = caps_stat(c, &sb, &absent, err)) < 0)
      return rc;
    if (g == c->cache_gen && absent == c->cache_absent &&
        (absent || same_file(&sb, &c->cache_st))) {
      memcpy(caps, c->cache, sizeof c->cache);
      return 0;
    }
  }
  c->cache_ok = 0;
  if ((rc = lock_take(c, LOCK_SH, err)) < 0)
    return rc;
  uint64_t g = read_gen(c);
  rc = caps_stat(c, &sb, &absent, err);
  if (rc == 0)
    rc = read_caps(c, caps, err);
  unlock(c);
  if (rc < 0)
    return rc;
  memcpy(c->cache, caps, sizeof c->cache);
  c->cache_gen = g;
  c->cache_st = sb;
  c->cache_absent = absent;
  c->cache_ok = 1;
  return 0;
}

/* Read-modify-write of one GPU's cap under the exclusive lock; the new
 * file replaces the old by rename, so a reader never sees half a file. */
static int store_cap(struct emu_ctx *c, unsigned gpu, uint32_t mw,
                     struct pfi_error *err) {
  uint32_t all[PFI_EMU_MAX_GPUS];
  char tmp[PATH_MAX_EMU + 64];
  FILE *fp = NULL;
  int rc = lock_take(c, LOCK_EX, err);
  if (rc < 0)
    return rc;
  c->cache_ok = 0;
  if ((rc = read_caps(c, all, err)) < 0)
    goto out;
  all[gpu] = mw;
  /* Every GPU this session has, and any other GPU whose cap is not the
   * default (set by a session of more GPUs). */
  unsigned nw = c->n;
  for (unsigned i = c->n; i < PFI_EMU_MAX_GPUS; i++)
    if (all[i] != c->prof->default_mw)
      nw = i + 1;
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", c->caps_path, (long)getpid());
  /* A new file, never through a link: a stale one of a dead process of the
   * same pid is removed first (unlink removes a link, not its target). */
  unlink(tmp);
  int tfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                 0600);
  fp = tfd >= 0 ? fdopen(tfd, "w") : NULL;
  if (!fp && tfd >= 0)
    close(tfd);
  if (!fp) {
    rc = pfi_error_set(err, PFI_EIO, "%s: cannot write: %s", tmp,
                       strerror(errno));
    goto out;
  }
  fprintf(fp, "# pfi emulated GPU state (%s): GPU power limit in mW\n",
          c->prof->name);
  for (unsigned i = 0; i < nw; i++)
    fprintf(fp, "%u %u\n", i, all[i]);
  /* No fsync: the rename makes the change atomic for every process, and
   * the state need not outlive the machine, as a real GPU's power limit
   * does not outlive a reboot (a file lost to a power cut reads as "every
   * GPU at its default limit"). An fsync per cap change was most of the
   * time of an emulated sweep. */
  int bad = ferror(fp);
  if (fclose(fp) != 0 || bad) {
    rc = pfi_error_set(err, PFI_EIO, "%s: write failed: %s", tmp,
                       strerror(errno ? errno : EIO));
    unlink(tmp);
    goto out;
  }
  if (rename(tmp, c->caps_path) != 0) {
    rc = pfi_error_set(err, PFI_EIO, "%s: cannot replace: %s", c->caps_path,
                       strerror(errno));
    unlink(tmp);
    goto out;
  }
  {
    uint64_t g = read_gen(c) + 1;
    if (pwrite(c->lock_fd, &g, sizeof g, 0) != (ssize_t)sizeof g)
      rc = pfi_error_set(err, PFI_EIO, "%s: cannot write: %s", c->lock_path,
                         strerror(errno));
  }
out:
  unlock(c);
  return rc;
}

/* ---- open / close ------------------------------------------------------- */

static int parse_params(struct emu_ctx *c, const char *params,
                        struct pfi_error *err) {
  const char *env;
  c->prof = pfi_emu_profile_find("h200");
  c->n = 8;
  c->seed = PFI_EMU_DEFAULT_SEED;
  c->realtime = (env = getenv("PFI_EMU_REALTIME")) && strcmp(env, "1") == 0;
  c->speed = 1;
  if ((env = getenv("PFI_EMU_STATE")) && *env)
    snprintf(c->dir, sizeof c->dir, "%s", env);
  else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
    snprintf(c->dir, sizeof c->dir, "%s/pfi-emu", env);
  else
    snprintf(c->dir, sizeof c->dir, "/tmp/pfi-emu-%ld", (long)getuid());
  if (!params)
    return 0;
  char buf[1024];
  if (strlen(params) >= sizeof buf)
    return pfi_error_set(err, PFI_EINVAL, "emu parameters too long");
  strcpy(buf, params);
  char *save = NULL;
  for (char *kv = strtok_r(buf, ",", &save); kv;
       kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq)
      return pfi_error_set(err, PFI_EINVAL,
                           "emu parameter '%s': expected key=value", kv);
    *eq = 0;
    const char *k = kv, *v = eq + 1;
    char *end;
    if (strcmp(k, "profile") == 0) {
      if (!(c->prof = pfi_emu_profile_find(v)))
        return pfi_error_set(err, PFI_EINVAL,
                             "emu parameter profile=%s: expected h200 or h100",
                             v);
    } else if (strcmp(k, "gpus") == 0) {
      unsigned long n = strtoul(v, &end, 10);
      if (!*v || *end || n < 1 || n > PFI_EMU_MAX_GPUS)
        return pfi_error_set(err, PFI_EINVAL,
                             "emu parameter gpus=%s: expected 1..%d", v,
                             PFI_EMU_MAX_GPUS);
      c->n = (unsigned)n;
    } else if (strcmp(k, "seed") == 0) {
      unsigned long s = strtoul(v, &end, 10);
      if (!*v || *end || *v == '-')
        return pfi_error_set(err, PFI_EINVAL,
                             "emu parameter seed=%s: expected an integer", v);
      c->seed = s;
    } else if (strcmp(k, "state") == 0) {
      if (!*v || strlen(v) >= sizeof c->dir)
        return pfi_error_set(err, PFI_EINVAL,
                             "emu parameter state=: expected a directory");
      snprintf(c->dir, sizeof c->dir, "%s", v);
    } else if (strcmp(k, "ext_cap_w") == 0) {
      double w = strtod(v, &end);
      if (!*v || *end || !(w >= 1 && w <= 100000))
        return pfi_error_set(err, PFI_EINVAL,
                             "emu parameter ext_cap_w=%s: expected watts", v);
      c->ext_mw = (uint32_t)llround(w * 1000.0);
    } else if (strcmp(k, "realtime") == 0) {
      if (strcmp(v, "0") && strcmp(v, "1"))
        return pfi_error_set(err, PFI_EINVAL,
                             "emu parameter realtime=%s: expected 0 or 1", v);
      c->realtime = v[0] == '1';
    } else if (strcmp(k, "speed") == 0) {
      double x = strtod(v, &end);
      if (!*v || *end || !(x >= 0.01 && x <= 1000))
        return pfi_error_set(err, PFI_EINVAL,
                             "emu parameter speed=%s: expected a factor in "
                             "[0.01, 1000]",
                             v);
      c->speed = x;
    } else {
      return pfi_error_set(err, PFI_EINVAL,
                           "unknown emu parameter '%s' (profile, gpus, seed, "
                           "state, realtime, speed, ext_cap_w)",
                           k);
    }
  }
  if (c->speed != 1 && !c->realtime)
    return pfi_error_set(err, PFI_EINVAL,
                         "emu parameter speed= needs realtime=1 (virtual time "
                         "advances only through waits)");
  return 0;
}

static int emu_open(void **ctx, const char *params, struct pfi_error *err) {
  struct emu_ctx *c = calloc(1, sizeof *c);
  int rc;
  if (!c)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  c->lock_fd = -1;
  if ((rc = parse_params(c, params, err)) < 0 ||
      (rc = mkdirs(c->dir, err)) < 0 || (rc = check_dir(c->dir, err)) < 0)
    goto fail;
  snprintf(c->caps_path, sizeof c->caps_path, "%s/caps-%s.txt", c->dir,
           c->prof->name);
  snprintf(c->lock_path, sizeof c->lock_path, "%s/lock", c->dir);
  c->lock_fd =
      open(c->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (c->lock_fd < 0) {
    rc = pfi_error_set(err, PFI_EIO, "%s: cannot open: %s", c->lock_path,
                       strerror(errno));
    goto fail;
  }
  /* Fail early on an unreadable or corrupt state. */
  uint32_t caps[PFI_EMU_MAX_GPUS];
  if ((rc = load_caps(c, caps, err)) < 0)
    goto fail;
  c->t0_mono = mono_s();
  *ctx = c;
  return 0;
fail:
  if (c->lock_fd >= 0)
    close(c->lock_fd);
  free(c);
  return rc;
}

static void emu_close(void *ctx) {
  struct emu_ctx *c = ctx;
  if (!c)
    return;
  if (c->lock_fd >= 0)
    close(c->lock_fd);
  free(c->run);
  free(c);
}

static int emu_count(void *ctx, unsigned *n, struct pfi_error *err) {
  *n = ((struct emu_ctx *)ctx)->n;
  return 0;
}

static int emu_name(void *ctx, unsigned gpu, char *buf, size_t n,
                    struct pfi_error *err) {
  snprintf(buf, n, "%s", ((struct emu_ctx *)ctx)->prof->gpu_name);
  return 0;
}

static int emu_uuid(void *ctx, unsigned gpu, char *buf, size_t n,
                    struct pfi_error *err) {
  struct emu_ctx *c = ctx;
  /* Stable per profile and index, in NVML's GPU-8-4-4-4-12 layout; the
   * "e0e0" group marks it as emulated. */
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = c->prof->name; *p; p++)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  h = (h ^ gpu) * 0x100000001b3ull;
  snprintf(buf, n, "GPU-%08x-e0e0-%04x-%04x-%012llx", (unsigned)(h >> 32),
           (unsigned)(h >> 16) & 0xffff, gpu & 0xffff,
           (unsigned long long)(h & 0xffffffffffffull));
  return 0;
}

static int emu_limits(void *ctx, unsigned gpu, struct pfi_power_limits *lim,
                      struct pfi_error *err) {
  const struct pfi_emu_profile *p = ((struct emu_ctx *)ctx)->prof;
  lim->min_mw = p->min_mw;
  lim->max_mw = p->max_mw;
  lim->default_mw = p->default_mw;
  return 0;
}

static int emu_get_cap(void *ctx, unsigned gpu, uint32_t *mw,
                       struct pfi_error *err) {
  uint32_t caps[PFI_EMU_MAX_GPUS];
  int rc = load_caps(ctx, caps, err);
  if (rc < 0)
    return rc;
  *mw = caps[gpu];
  return 0;
}

static int emu_set_cap(void *ctx, unsigned gpu, uint32_t mw,
                       struct pfi_error *err) {
  struct emu_ctx *c = ctx;
  if (mw < c->prof->min_mw || mw > c->prof->max_mw)
    return pfi_error_set(err, PFI_ERANGE,
                         "power limit %u mW is outside %u..%u mW", mw,
                         c->prof->min_mw, c->prof->max_mw);
  return store_cap(c, gpu, mw, err);
}

/* ---- the attached job and the integration of energy and tokens -------- */

static int rank_of(const struct emu_ctx *c, unsigned gpu) {
  if (!c->attached)
    return -1;
  for (size_t r = 0; r < c->n_attached; r++)
    if (c->rank_gpu[r] == gpu)
      return (int)r;
  return -1;
}

/* Makes c->run match the current caps (rebuilding when they changed). */
static int sync_run(struct emu_ctx *c, const uint32_t *caps,
                    struct pfi_error *err) {
  uint32_t want[PFI_EMU_MAX_GPUS];
  double capw[PFI_EMU_MAX_GPUS];
  int same = c->run != NULL;
  for (unsigned r = 0; r < c->job.gpus; r++) {
    want[r] = caps[c->rank_gpu[r % c->n_attached]];
    if (c->ext_mw && c->ext_mw < want[r])
      want[r] = c->ext_mw;
    capw[r] = want[r] / 1000.0;
    if (same && want[r] != c->run_caps[r])
      same = 0;
  }
  if (same)
    return 0;
  if (!c->run && !(c->run = malloc(sizeof *c->run)))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  int rc = pfi_emu_run_init(c->run, &c->job, capw, c->job_seed, err);
  if (rc < 0)
    return rc;
  memcpy(c->run_caps, want, sizeof(uint32_t) * c->job.gpus);
  return 0;
}

static void idle_sample(const struct emu_ctx *c, unsigned gpu, double t,
                        struct pfi_sample *s) {
  const struct pfi_emu_profile *p = c->prof;
  memset(s, 0, sizeof *s);
  s->t_s = t;
  double power = p->idle_w;
#define SETF(f, x) (s->v[f] = (x), s->valid |= 1u << (f))
  SETF(PFI_FIELD_POWER, power);
  s->power_mw = (uint32_t)llround(power * 1000.0);
  SETF(PFI_FIELD_SM_CLOCK, p->sm_clock_idle_mhz);
  SETF(PFI_FIELD_MEM_CLOCK, p->mem_clock_mhz);
  SETF(PFI_FIELD_GPU_UTIL, 0.0);
  SETF(PFI_FIELD_SM_ACTIVE, 0.0);
  SETF(PFI_FIELD_SM_OCCUPANCY, 0.0);
  SETF(PFI_FIELD_TENSOR_ACTIVE, 0.0);
  SETF(PFI_FIELD_DRAM_ACTIVE, 0.0);
  SETF(PFI_FIELD_MEM_COPY_UTIL, 0.0);
  SETF(PFI_FIELD_NVLINK_TX, 0.0);
  SETF(PFI_FIELD_NVLINK_RX, 0.0);
  SETF(PFI_FIELD_PCIE_TX, 0.0);
  SETF(PFI_FIELD_PCIE_RX, 0.0);
  SETF(PFI_FIELD_FB_USED, 512.0); /* driver-reserved memory */
  SETF(PFI_FIELD_TEMP, 30.0 + 0.065 * power);
  SETF(PFI_FIELD_THROTTLE_POWER, 0.0);
#undef SETF
}

/* The sample of device GPU `gpu` at device time t (no energy). */
static int raw_sample(struct emu_ctx *c, unsigned gpu, double t,
                      const uint32_t *caps, struct pfi_sample *s, double *tok,
                      struct pfi_error *err) {
  int r = rank_of(c, gpu);
  if (tok)
    *tok = 0;
  if (r < 0) {
    idle_sample(c, gpu, t, s);
    return 0;
  }
  int rc = sync_run(c, caps, err);
  if (rc < 0)
    return rc;
  pfi_emu_run_sample(c->run, (unsigned)r, t - c->t_attach, s, tok, NULL);
  s->t_s = t;
  return 0;
}

/* Integrates energy (every GPU) and the job's tokens from last_t to t, in
 * steps of at most one second, with the power of each step's start. */
static int advance_to(struct emu_ctx *c, double t, struct pfi_error *err) {
  uint32_t caps[PFI_EMU_MAX_GPUS];
  if (t <= c->last_t)
    return 0;
  if (!c->attached) {
    /* Idle GPUs draw constant power: one step, however long the wait. */
    for (unsigned g = 0; g < c->n; g++)
      c->energy_j[g] += c->prof->idle_w * (t - c->last_t);
    c->last_t = t;
    return 0;
  }
  int rc = load_caps(c, caps, err);
  if (rc < 0)
    return rc;
  while (c->last_t < t) {
    double dt = t - c->last_t;
    if (dt > 1.0)
      dt = 1.0;
    for (unsigned g = 0; g < c->n; g++) {
      struct pfi_sample s;
      double tok = 0;
      if ((rc = raw_sample(c, g, c->last_t, caps, &s, &tok, err)) < 0)
        return rc;
      c->energy_j[g] += s.v[PFI_FIELD_POWER] * dt;
      if (c->attached && c->n_attached && g == c->rank_gpu[0])
        c->cum_tokens += tok * dt;
    }
    c->last_t += dt;
  }
  return 0;
}

static int emu_sample(void *ctx, unsigned gpu, struct pfi_sample *s,
                      struct pfi_error *err) {
  struct emu_ctx *c = ctx;
  uint32_t caps[PFI_EMU_MAX_GPUS];
  double t = cur_time(c);
  int rc = advance_to(c, t, err);
  if (rc < 0 || (rc = load_caps(c, caps, err)) < 0)
    return rc;
  if ((rc = raw_sample(c, gpu, t, caps, s, NULL, err)) < 0)
    return rc;
  s->v[PFI_FIELD_ENERGY] = c->energy_j[gpu];
  s->valid |= 1u << PFI_FIELD_ENERGY;
  s->energy_mj = (uint64_t)llround(c->energy_j[gpu] * 1000.0);
  return 0;
}

static int emu_enforced(void *ctx, unsigned gpu, uint32_t *mw,
                        struct pfi_error *err) {
  /* The emulated firmware applies a limit at once: enforced == requested,
   * unless an out-of-band limit is lower. */
  struct emu_ctx *c = ctx;
  int rc = emu_get_cap(ctx, gpu, mw, err);
  if (rc == 0 && c->ext_mw && c->ext_mw < *mw)
    *mw = c->ext_mw;
  return rc;
}

static int emu_now(void *ctx, double *t, struct pfi_error *err) {
  *t = cur_time(ctx);
  return 0;
}

static int emu_wait(void *ctx, double seconds, struct pfi_error *err) {
  struct emu_ctx *c = ctx;
  if (!c->realtime) {
    c->vt += seconds;
    return advance_to(c, c->vt, err);
  }
  double real = seconds / c->speed;
  struct timespec ts;
  ts.tv_sec = (time_t)real;
  ts.tv_nsec = (long)((real - (double)ts.tv_sec) * 1e9);
  if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
    return pfi_error_set(err, PFI_EINTR, "wait interrupted by a signal");
  return advance_to(c, cur_time(c), err);
}

const struct pfi_device_ops pfi_emu_ops = {
    PFI_DEVICE_OPS_VERSION,
    "emu",
    "emulated H200/H100 GPUs (physical model, calibrated to published PFI)",
    emu_open,
    emu_close,
    emu_count,
    emu_name,
    emu_uuid,
    emu_limits,
    emu_get_cap,
    emu_set_cap,
    emu_enforced,
    emu_sample,
    emu_now,
    emu_wait,
    NULL, /* processes: the emulator runs none */
};

static struct emu_ctx *emu_ctx_of(struct pfi_device *dev,
                                  struct pfi_error *err) {
  if (!dev || pfi_device_ops_of(dev) != &pfi_emu_ops) {
    pfi_error_set(err, PFI_EINVAL, "not an emu device session");
    return NULL;
  }
  return pfi_device_ctx(dev);
}

int pfi_emu_attach(struct pfi_device *dev, const unsigned *gpus, size_t n,
                   const struct pfi_emu_job *job, unsigned long seed,
                   struct pfi_error *err) {
  return pfi_emu_attach_at(dev, gpus, n, job, seed, 0, err);
}

int pfi_emu_attach_at(struct pfi_device *dev, const unsigned *gpus, size_t n,
                      const struct pfi_emu_job *job, unsigned long seed,
                      double job_t_s, struct pfi_error *err) {
  if (!(job_t_s >= 0 && job_t_s <= 1e7))
    return pfi_error_set(err, PFI_EINVAL,
                         "attach: job time %g s is outside 0..1e7 s", job_t_s);
  struct emu_ctx *c = emu_ctx_of(dev, err);
  if (!c)
    return PFI_EINVAL;
  if (c->attached)
    return pfi_error_set(err, PFI_EBUSY, "job %s is already attached",
                         c->job.id);
  if (!job || !gpus || n < 1 || n > job->gpus)
    return pfi_error_set(err, PFI_EINVAL, "attach needs 1..%u GPUs for job %s",
                         job ? job->gpus : 0, job ? job->id : "(none)");
  if (strcmp(job->profile, c->prof->name) != 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "job %s is for the %s profile, the device emulates %s",
                         job->id, job->profile, c->prof->name);
  for (size_t i = 0; i < n; i++) {
    if (gpus[i] >= c->n)
      return pfi_error_set(err, PFI_ERANGE, "GPU %u does not exist (%u GPUs)",
                           gpus[i], c->n);
    for (size_t k = 0; k < i; k++)
      if (gpus[k] == gpus[i])
        return pfi_error_set(err, PFI_EINVAL, "GPU %u listed twice", gpus[i]);
  }
  /* Bring the integrals up to now before the job changes the power. */
  int rc = advance_to(c, cur_time(c), err);
  if (rc < 0)
    return rc;
  c->job = *job;
  memcpy(c->rank_gpu, gpus, n * sizeof *gpus);
  c->n_attached = n;
  c->job_seed = seed;
  c->t_attach = cur_time(c) - job_t_s;
  c->cum_tokens = 0;
  free(c->run);
  c->run = NULL;
  c->attached = 1;
  return 0;
}

int pfi_emu_progress(struct pfi_device *dev, double *cum_tokens,
                     double *tokens_per_s, enum pfi_phase *phase,
                     struct pfi_error *err) {
  struct emu_ctx *c = emu_ctx_of(dev, err);
  uint32_t caps[PFI_EMU_MAX_GPUS];
  if (!c)
    return PFI_EINVAL;
  if (!c->attached)
    return pfi_error_set(err, PFI_ESTATE, "no job is attached");
  double t = cur_time(c);
  int rc = advance_to(c, t, err);
  if (rc < 0 || (rc = load_caps(c, caps, err)) < 0 ||
      (rc = sync_run(c, caps, err)) < 0)
    return rc;
  struct pfi_sample s;
  double tok;
  enum pfi_phase ph;
  pfi_emu_run_sample(c->run, 0, t - c->t_attach, &s, &tok, &ph);
  if (cum_tokens)
    *cum_tokens = c->cum_tokens;
  if (tokens_per_s)
    *tokens_per_s = tok;
  if (phase)
    *phase = ph;
  return 0;
}

void pfi_emu_detach(struct pfi_device *dev) {
  struct emu_ctx *c = emu_ctx_of(dev, NULL);
  if (!c || !c->attached)
    return;
  struct pfi_error e;
  advance_to(c, cur_time(c), &e);
  c->attached = 0;
  free(c->run);
  c->run = NULL;
}

int pfi_emu_state_dir(struct pfi_device *dev, char *buf, size_t n,
                      struct pfi_error *err) {
  struct emu_ctx *c = emu_ctx_of(dev, err);
  if (!c)
    return PFI_EINVAL;
  if (strlen(c->dir) >= n)
    return pfi_error_set(err, PFI_ERANGE, "state directory name too long");
  memcpy(buf, c->dir, strlen(c->dir) + 1);
  return 0;
}
