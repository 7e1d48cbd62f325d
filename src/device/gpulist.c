/* SPDX-License-Identifier: GPL-3.0-or-later */
/* GPU index lists ("all", "0,2", "0-3") as commands give them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

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

int pfi__parse_gpu_list(const char *s, unsigned count, unsigned **out,
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
