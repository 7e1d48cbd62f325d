/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Durations: one parser, one set of bounds (see pfi/duration.h). */
#include "pfi/duration.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  double lo, hi;           /* seconds */
  const char *lo_s, *hi_s; /* as the message writes them */
} bounds[PFI_DUR__COUNT] = {
    [PFI_DUR_INTERVAL] = {"interval", 0.1, 600, "0.1s", "10m"},
    [PFI_DUR_DURATION] = {"duration", 1, 86400, "1s", "24h"},
    [PFI_DUR_COOLDOWN] = {"cooldown", 0, 3600, "0s", "1h"},
    [PFI_DUR_GRACE] = {"grace", 0.1, 600, "0.1s", "10m"},
    [PFI_DUR_ANY] = {"duration", 0, HUGE_VAL, "0s", "any"},
};

static int valid_kind(enum pfi_duration_kind k) {
  return (unsigned)k < PFI_DUR__COUNT;
}

double pfi_duration_min(enum pfi_duration_kind kind) {
  return valid_kind(kind) ? bounds[kind].lo : NAN;
}

double pfi_duration_max(enum pfi_duration_kind kind) {
  return valid_kind(kind) ? bounds[kind].hi : NAN;
}

const char *pfi_duration_name(enum pfi_duration_kind kind) {
  return valid_kind(kind) ? bounds[kind].name : "?";
}

/* A relative slack of 1e-12 lets "100ms" (0.1 computed as 100 * 1e-3)
 * meet a bound of 0.1 s. */
static int in_bounds(enum pfi_duration_kind kind, double v) {
  return v >= bounds[kind].lo * (1 - 1e-12) &&
         v <= bounds[kind].hi * (1 + 1e-12);
}

int pfi_parse_duration(const char *s, enum pfi_duration_kind kind,
                       double *seconds, struct pfi_error *err) {
  if (!valid_kind(kind))
    return pfi_error_set(err, PFI_EINVAL, "unknown kind of duration");
  if (!s || !*s)
    return pfi_error_set(err, PFI_EINVAL, "empty duration");
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !isfinite(v) || v < 0 || s[0] == ' ' || s[0] == '\t')
    return pfi_error_set(
        err, PFI_EINVAL,
        "'%s': expected a duration like 250ms, 5s, 30m or 1h (%s..%s)", s,
        bounds[kind].lo_s, bounds[kind].hi_s);
  /* A run length is usually minutes (the defaults read "30m"): a bare
   * number, which elsewhere is seconds, would make "--duration 30" a
   * 30-second run where 30 minutes was meant. It needs its unit. */
  if (*end == '\0' && kind == PFI_DUR_DURATION)
    return pfi_error_set(err, PFI_EINVAL,
                         "'%s': a run length needs its unit: %ss or %sm "
                         "(%s..%s)",
                         s, s, s, bounds[kind].lo_s, bounds[kind].hi_s);
  double mul;
  if (*end == '\0' || strcmp(end, "s") == 0)
    mul = 1;
  else if (strcmp(end, "ms") == 0)
    mul = 1e-3;
  else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
    mul = 60;
  else if (strcmp(end, "h") == 0)
    mul = 3600;
  else
    return pfi_error_set(err, PFI_EINVAL,
                         "'%s': unknown unit '%s' (use ms, s, m or h)", s, end);
  v *= mul;
  /* "1e307min" overflows to infinity: outside every range. */
  if (!isfinite(v) || !in_bounds(kind, v))
    return pfi_error_set(err, PFI_EINVAL, "'%s' is outside %s..%s", s,
                         bounds[kind].lo_s, bounds[kind].hi_s);
  *seconds = v;
  return 0;
}

int pfi_duration_check(enum pfi_duration_kind kind, double seconds,
                       const char *what, struct pfi_error *err) {
  if (!valid_kind(kind))
    return pfi_error_set(err, PFI_EINVAL, "unknown kind of duration");
  if (!isfinite(seconds) || !in_bounds(kind, seconds))
    return pfi_error_set(err, PFI_EINVAL, "%s: %g s is outside %s..%s",
                         what ? what : bounds[kind].name, seconds,
                         bounds[kind].lo_s, bounds[kind].hi_s);
  return 0;
}
