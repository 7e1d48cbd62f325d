/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The `fault` device backend: a wrapper around another backend that fails
 * chosen operations after a number of calls, for testing how callers
 * (pfi cap, the sweep harness, the daemon) recover, in the manner of
 * SQLite's test VFS. It never changes what the inner backend does on calls
 * it lets through.
 *
 * Open parameters, comma-separated key=value; inner_params, if present,
 * must come last and takes the rest of the string (commas included):
 *   inner=NAME            the wrapped backend (default emu; not fault)
 *   fail_set_after=N      set_cap calls after the first N fail
 *   fail_get_after=N      get_cap and enforced_cap calls after N fail
 *   fail_sample_after=N   sample calls after N fail
 *   fail_any_after=N      any GPU operation after N (all kinds counted) fails
 *   mode=transient|persistent
 *                         transient: only call N+1 fails (default);
 *                         persistent: every call after N fails
 *   code=noperm|gpulost|range|io|notsup|busy|uninit
 *                         the error returned (default io)
 *   gpu=K                 only calls on GPU K count and fail
 *   inner_params=...      the wrapped backend's own parameters
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "pfi/fault.h"

enum { OP_SET, OP_GET, OP_SAMPLE, OP_ANY };
static const char *const op_names[PFI__FAULT_OPS] = {"set_cap", "get_cap",
                                                     "sample", "operation"};

struct fctx {
  struct pfi_device *inner;
  struct pfi__fault_conf conf;
  long calls[PFI__FAULT_OPS];
};

static const struct {
  const char *name;
  int code;
} codes[] = {{"noperm", PFI_ENOPERM}, {"gpulost", PFI_EGPULOST},
             {"range", PFI_ERANGE},   {"io", PFI_EIO},
             {"notsup", PFI_ENOTSUP}, {"busy", PFI_EBUSY},
             {"uninit", PFI_EUNINIT}};

static int parse_long(const char *s, size_t len, long *out) {
  char buf[24];
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (buf[i] < '0' || buf[i] > '9')
      return -1;
  errno = 0;
  long v = strtol(buf, NULL, 10);
  if (errno)
    return -1;
  *out = v;
  return 0;
}

static void fault_close(void *vctx) {
  struct fctx *c = vctx;
  if (!c)
    return;
  pfi_device_close(c->inner);
  free(c);
}

int pfi__fault_parse_params(const char *params, struct pfi__fault_conf *cf,
                            struct pfi_error *err) {
  memset(cf, 0, sizeof *cf);
  snprintf(cf->inner, sizeof cf->inner, "emu");
  for (int i = 0; i < PFI__FAULT_OPS; i++)
    cf->after[i] = -1;
  cf->code = PFI_EIO;
  cf->gpu = -1;
  for (const char *p = params; p && *p;) {
    if (strncmp(p, "inner_params=", 13) == 0) {
      cf->inner_params = p + 13;
      break;
    }
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    size_t klen = eq ? (size_t)(eq - p) : len;
    const char *v = eq ? eq + 1 : p + len;
    size_t vlen = eq ? len - klen - 1 : 0;
    int ok = eq != NULL;
#define KEY(k) (klen == strlen(k) && strncmp(p, k, klen) == 0)
    if (!ok) {
    } else if (KEY("inner")) {
      ok = vlen > 0 && vlen < sizeof cf->inner;
      if (ok) {
        memcpy(cf->inner, v, vlen);
        cf->inner[vlen] = '\0';
      }
    } else if (KEY("fail_set_after")) {
      ok = parse_long(v, vlen, &cf->after[OP_SET]) == 0;
    } else if (KEY("fail_get_after")) {
      ok = parse_long(v, vlen, &cf->after[OP_GET]) == 0;
    } else if (KEY("fail_sample_after")) {
      ok = parse_long(v, vlen, &cf->after[OP_SAMPLE]) == 0;
    } else if (KEY("fail_any_after")) {
      ok = parse_long(v, vlen, &cf->after[OP_ANY]) == 0;
    } else if (KEY("gpu")) {
      ok = parse_long(v, vlen, &cf->gpu) == 0;
    } else if (KEY("mode")) {
      if (vlen == 9 && strncmp(v, "transient", 9) == 0)
        cf->persistent = 0;
      else if (vlen == 10 && strncmp(v, "persistent", 10) == 0)
        cf->persistent = 1;
      else
        ok = 0;
    } else if (KEY("code")) {
      ok = 0;
      for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++)
        if (vlen == strlen(codes[k].name) &&
            strncmp(v, codes[k].name, vlen) == 0) {
          cf->code = codes[k].code;
          ok = 1;
        }
    } else {
      ok = 0;
    }
#undef KEY
    if (!ok)
      return pfi_error_set(err, PFI_EINVAL,
                           "fault: bad parameter '%.*s' (see docs/nvml.md, "
                           "\"The fault backend\")",
                           (int)len, p);
    p = end ? end + 1 : NULL;
  }
  if (strcmp(cf->inner, "fault") == 0)
    return pfi_error_set(err, PFI_EINVAL, "fault: cannot wrap itself");
  return 0;
}

static int fault_open(void **out, const char *params, struct pfi_error *err) {
  int rc = 0;
  struct fctx *c = calloc(1, sizeof *c);
  *out = NULL;
  if (!c)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  rc = pfi__fault_parse_params(params, &c->conf, err);
  if (rc < 0)
    goto out;
  const char *ip = c->conf.inner_params;
  rc = pfi_device_open(&c->inner, c->conf.inner, ip && *ip ? ip : NULL, err);
  /* The inner parameters pointed into `params`, which the caller owns. */
  c->conf.inner_params = NULL;
  if (rc < 0)
    goto out;
  *out = c;
  c = NULL;
out:
  fault_close(c);
  return rc;
}

/* Counts a call of kind `op` on `gpu` and says whether it fails. */
static int inject(struct fctx *c, int op, unsigned gpu, struct pfi_error *err) {
  const struct pfi__fault_conf *cf = &c->conf;
  if (cf->gpu >= 0 && (unsigned long)cf->gpu != gpu)
    return 0;
  int kinds[2] = {op, OP_ANY};
  int nk = op == OP_ANY ? 1 : 2;
  /* Every call counts toward fail_any_after, also one that the rule of its
   * own kind fails: count all kinds first, then decide. */
  for (int k = 0; k < nk; k++)
    ++c->calls[kinds[k]];
  for (int k = 0; k < nk; k++) {
    int o = kinds[k];
    long n = c->calls[o];
    if (cf->after[o] < 0 || n <= cf->after[o])
      continue;
    if (!cf->persistent && n != cf->after[o] + 1)
      continue;
    return pfi_error_set(
        err, cf->code, "fault: injected %s on %s call %ld (GPU %u): %s",
        cf->persistent ? "persistent failure" : "transient failure",
        op_names[op], n, gpu, pfi_strerror(cf->code));
  }
  return 0;
}

static int fault_count(void *vctx, unsigned *n, struct pfi_error *err) {
  return pfi_device_count(((struct fctx *)vctx)->inner, n, err);
}

static int fault_name_of(void *vctx, unsigned gpu, char *buf, size_t n,
                         struct pfi_error *err) {
  struct fctx *c = vctx;
  int rc = inject(c, OP_ANY, gpu, err);
  return rc < 0 ? rc : pfi_device_name(c->inner, gpu, buf, n, err);
}

static int fault_uuid_of(void *vctx, unsigned gpu, char *buf, size_t n,
                         struct pfi_error *err) {
  struct fctx *c = vctx;
  int rc = inject(c, OP_ANY, gpu, err);
  return rc < 0 ? rc : pfi_device_uuid(c->inner, gpu, buf, n, err);
}

static int fault_limits(void *vctx, unsigned gpu, struct pfi_power_limits *lim,
                        struct pfi_error *err) {
  struct fctx *c = vctx;
  int rc = inject(c, OP_ANY, gpu, err);
  return rc < 0 ? rc : pfi_device_limits(c->inner, gpu, lim, err);
}

static int fault_get_cap(void *vctx, unsigned gpu, uint32_t *mw,
                         struct pfi_error *err) {
  struct fctx *c = vctx;
  int rc = inject(c, OP_GET, gpu, err);
  return rc < 0 ? rc : pfi_device_get_cap(c->inner, gpu, mw, err);
}

static int fault_set_cap(void *vctx, unsigned gpu, uint32_t mw,
                         struct pfi_error *err) {
  struct fctx *c = vctx;
  int rc = inject(c, OP_SET, gpu, err);
  return rc < 0 ? rc : pfi_device_set_cap(c->inner, gpu, mw, err);
}

static int fault_enforced_cap(void *vctx, unsigned gpu, uint32_t *mw,
                              struct pfi_error *err) {
  struct fctx *c = vctx;
  int rc = inject(c, OP_GET, gpu, err);
  return rc < 0 ? rc : pfi_device_enforced_cap(c->inner, gpu, mw, err);
}

static int fault_sample(void *vctx, unsigned gpu, struct pfi_sample *s,
                        struct pfi_error *err) {
  struct fctx *c = vctx;
  int rc = inject(c, OP_SAMPLE, gpu, err);
  return rc < 0 ? rc : pfi_device_sample(c->inner, gpu, s, err);
}

static int fault_now(void *vctx, double *t_s, struct pfi_error *err) {
  return pfi_device_now(((struct fctx *)vctx)->inner, t_s, err);
}

static int fault_wait(void *vctx, double seconds, struct pfi_error *err) {
  return pfi_device_wait(((struct fctx *)vctx)->inner, seconds, err);
}

/* The wrapped session, for callers that need backend-specific calls (for
 * example pfi_emu_attach on an emu inside a fault wrapper). */
struct pfi_device *pfi_fault_inner(struct pfi_device *dev) {
  if (!dev || strcmp(pfi_device_ops_of(dev)->name, "fault") != 0)
    return NULL;
  return ((struct fctx *)pfi_device_ctx(dev))->inner;
}

const struct pfi_device_ops pfi__device_fault = {
    .version = PFI_DEVICE_OPS_VERSION,
    .name = "fault",
    .description = "test wrapper: another backend with failures injected "
                   "after N calls (inner=emu,fail_set_after=N,...)",
    .open = fault_open,
    .close = fault_close,
    .count = fault_count,
    .name_of = fault_name_of,
    .uuid_of = fault_uuid_of,
    .limits = fault_limits,
    .get_cap = fault_get_cap,
    .set_cap = fault_set_cap,
    .enforced_cap = fault_enforced_cap,
    .sample = fault_sample,
    .now = fault_now,
    .wait = fault_wait,
};
