/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli_device.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pfi__cli_open_device(const char *cmd, const char *backend,
                         const char *params, struct pfi_device **dev,
                         const char **chosen, struct pfi_error *err) {
  int rc;
  *dev = NULL;
  if (backend) {
    rc = pfi_device_open(dev, backend, params, err);
    if (rc == PFI_ENOTFOUND && !pfi_device_backend(backend)) {
      char names[256] = "";
      size_t w = 0;
      for (size_t i = 0; pfi_device_backends[i] && w < sizeof names; i++)
        w += (size_t)snprintf(names + w, sizeof names - w, "%s%s",
                              i ? ", " : "", pfi_device_backends[i]->name);
      return pfi_error_set(err, PFI_EINVAL,
                           "--backend: unknown backend '%s' (expected one of "
                           "%s)",
                           backend, names);
    }
    if (rc < 0)
      return rc;
    *chosen = pfi_device_ops_of(*dev)->name;
    return 0;
  }
  /* No backend named: real GPUs when there are any. */
  struct pfi_error nerr;
  unsigned n = 0;
  pfi_error_clear(&nerr);
  rc = pfi_device_open(dev, "nvml", NULL, &nerr);
  if (rc == 0)
    rc = pfi_device_count(*dev, &n, &nerr);
  if (rc == 0 && n > 0) {
    fprintf(stderr, "pfi %s: using the nvml backend (%u GPU%s)\n", cmd, n,
            n == 1 ? "" : "s");
    *chosen = "nvml";
    return 0;
  }
  pfi_device_close(*dev);
  *dev = NULL;
  if (rc == 0)
    snprintf(nerr.msg, sizeof nerr.msg, "nvml: no NVIDIA GPU found");
  fprintf(stderr, "pfi %s: using the emu backend (emulated GPUs): %s\n", cmd,
          nerr.msg);
  rc = pfi_device_open(dev, "emu", NULL, err);
  if (rc < 0)
    return rc;
  *chosen = "emu";
  return 0;
}

/* Parses a whole decimal index. */
static int parse_index(const char *s, size_t len, unsigned long *out) {
  char buf[24];
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (buf[i] < '0' || buf[i] > '9')
      return -1;
  errno = 0;
  unsigned long v = strtoul(buf, NULL, 10);
  if (errno)
    return -1;
  *out = v;
  return 0;
}

int pfi__cli_parse_gpus(const char *s, unsigned count, unsigned **out,
                        size_t *n, struct pfi_error *err) {
  int rc = 0;
  unsigned *v = NULL;
  size_t k = 0;
  unsigned char *seen = NULL;
  *out = NULL;
  *n = 0;
  if (!s || !*s)
    return pfi_error_set(err, PFI_EINVAL, "--gpus: empty GPU list");
  if (count == 0)
    return pfi_error_set(err, PFI_ERANGE, "--gpus: the backend has no GPUs");
  seen = calloc(count, 1);
  v = calloc(count, sizeof *v);
  if (!seen || !v) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  if (strcmp(s, "all") == 0) {
    for (unsigned i = 0; i < count; i++)
      v[k++] = i;
    goto done;
  }
  for (const char *p = s; p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const char *dash = memchr(p, '-', len);
    unsigned long lo, hi;
    if (dash ? parse_index(p, (size_t)(dash - p), &lo) < 0 ||
                   parse_index(dash + 1, len - (size_t)(dash - p) - 1, &hi) < 0
             : parse_index(p, len, &lo) < 0) {
      rc = pfi_error_set(err, PFI_EINVAL,
                         "--gpus: '%.*s' is not a GPU index or range (expected "
                         "e.g. 0,2 or 0-3 or all)",
                         (int)len, p);
      goto out;
    }
    if (!dash)
      hi = lo;
    if (lo > hi) {
      rc = pfi_error_set(err, PFI_EINVAL, "--gpus: empty range '%.*s'",
                         (int)len, p);
      goto out;
    }
    if (hi >= count) {
      rc = pfi_error_set(err, PFI_ERANGE,
                         "--gpus: GPU %lu does not exist (the backend has %u "
                         "GPU%s: 0-%u)",
                         hi, count, count == 1 ? "" : "s", count - 1);
      goto out;
    }
    for (unsigned long i = lo; i <= hi; i++) {
      if (seen[i]) {
        rc = pfi_error_set(err, PFI_EINVAL, "--gpus: GPU %lu listed twice", i);
        goto out;
      }
      seen[i] = 1;
      v[k++] = (unsigned)i;
    }
    p = end ? end + 1 : NULL;
  }
done:
  *out = v;
  *n = k;
  v = NULL;
out:
  free(v);
  free(seen);
  return rc;
}
