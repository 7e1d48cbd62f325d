/* SPDX-License-Identifier: GPL-3.0-or-later */
/* GPU -> node -> facility power and its inversion. See
 * include/pfi/meter.h; the RAPL and DCMI readers are src/device/sensor.c. */
#include "pfi/meter.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"

void pfi_meter_config_init(struct pfi_meter_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->psu_n = 1;
  cfg->psu_load[0] = 1;
  cfg->psu_eff[0] = 1;
  cfg->pue = 1;
}

double pfi_meter_psu_eff(const struct pfi_meter_config *cfg, double load) {
  size_t n = cfg->psu_n;
  if (n == 0)
    return 1;
  if (n == 1 || !(cfg->psu_rated_w > 0) || load <= cfg->psu_load[0])
    return cfg->psu_eff[0];
  if (load >= cfg->psu_load[n - 1])
    return cfg->psu_eff[n - 1];
  size_t k = 1;
  while (k < n - 1 && cfg->psu_load[k] < load)
    k++;
  double x0 = cfg->psu_load[k - 1], x1 = cfg->psu_load[k];
  double y0 = cfg->psu_eff[k - 1], y1 = cfg->psu_eff[k];
  return y0 + (y1 - y0) * (load - x0) / (x1 - x0);
}

double pfi_meter_node_wall_w(const struct pfi_meter_config *cfg, double dc_w) {
  double load = cfg->psu_rated_w > 0 ? dc_w / cfg->psu_rated_w : 1;
  return dc_w / pfi_meter_psu_eff(cfg, load);
}

int pfi_meter_levels(const struct pfi_meter_config *cfg, const double *gpu_w,
                     const double *other_w, size_t n, double *gpu_total,
                     double *node_total, double *facility,
                     struct pfi_error *err) {
  double g = 0, dc = 0, wall = 0;
  for (size_t i = 0; i < n; i++) {
    double o = other_w && !isnan(other_w[i]) ? other_w[i] : cfg->node_other_w;
    if (!isfinite(gpu_w[i]) || gpu_w[i] < 0 || !isfinite(o) || o < 0)
      return pfi_error_set(err, PFI_EINVAL,
                           "node %zu: GPU power %g W, other power %g W: "
                           "expected finite values >= 0",
                           i, gpu_w[i], o);
    g += gpu_w[i];
    dc += gpu_w[i] + o;
    wall += pfi_meter_node_wall_w(cfg, gpu_w[i] + o);
  }
  if (gpu_total)
    *gpu_total = g;
  if (node_total)
    *node_total = dc;
  if (facility)
    *facility = cfg->pue * wall + cfg->facility_other_w;
  return 0;
}

/* Facility (level 2) or node (level 1) power when total GPU power is
 * scaled to `gpu` (shares as now; equal shares when now is all zero). */
static double at_gpu(const struct pfi_meter_config *cfg, const double *gpu_w,
                     const double *other_w, size_t n, double now, int level,
                     double gpu) {
  double dc = 0, wall = 0;
  for (size_t i = 0; i < n; i++) {
    double share = now > 0 ? gpu_w[i] / now : 1.0 / (double)n;
    double o = other_w && !isnan(other_w[i]) ? other_w[i] : cfg->node_other_w;
    double d = gpu * share + o;
    dc += d;
    wall += pfi_meter_node_wall_w(cfg, d);
  }
  return level == PFI_LEVEL_NODE ? dc : cfg->pue * wall + cfg->facility_other_w;
}

int pfi_meter_gpu_limit(const struct pfi_meter_config *cfg, const double *gpu_w,
                        const double *other_w, size_t n, int level,
                        double limit_w, double *gpu_limit_w,
                        struct pfi_error *err) {
  *gpu_limit_w = 0;
  if (!isfinite(limit_w) || limit_w < 0)
    return pfi_error_set(err, PFI_EINVAL, "limit %g W: not finite and >= 0",
                         limit_w);
  double now;
  int rc = pfi_meter_levels(cfg, gpu_w, other_w, n, &now, NULL, NULL, err);
  if (rc < 0)
    return rc;
  if (level == PFI_LEVEL_GPU) {
    *gpu_limit_w = limit_w;
    return 0;
  }
  if (n == 0)
    return pfi_error_set(err, PFI_EINVAL, "no nodes");
  if (level == PFI_LEVEL_NODE) { /* linear: exact */
    double other = 0;
    for (size_t i = 0; i < n; i++)
      other += other_w && !isnan(other_w[i]) ? other_w[i] : cfg->node_other_w;
    if (other > limit_w)
      return pfi_error_set(err, PFI_EINFEASIBLE,
                           "the node limit %.1f W is below the %.1f W drawn "
                           "with no GPU power at all: short by %.1f W",
                           limit_w, other, other - limit_w);
    *gpu_limit_w = limit_w - other;
    return 0;
  }
  double f0 = at_gpu(cfg, gpu_w, other_w, n, now, level, 0);
  if (f0 > limit_w)
    return pfi_error_set(err, PFI_EINFEASIBLE,
                         "the %s limit %.1f W is below the %.1f W drawn with "
                         "no GPU power at all: short by %.1f W",
                         level == PFI_LEVEL_NODE ? "node" : "meter", limit_w,
                         f0, f0 - limit_w);
  /* Monotone in gpu (efficiency curves of real supplies keep wall power
   * increasing in load): bisection to 1 mW. */
  double lo = 0, hi = now > 1 ? now : 1;
  while (at_gpu(cfg, gpu_w, other_w, n, now, level, hi) <= limit_w && hi < 1e13)
    hi *= 2;
  for (int it = 0; it < 200 && hi - lo > 1e-3; it++) {
    double mid = 0.5 * (lo + hi);
    if (at_gpu(cfg, gpu_w, other_w, n, now, level, mid) <= limit_w)
      lo = mid;
    else
      hi = mid;
  }
  *gpu_limit_w = lo;
  return 0;
}

int pfi_meter_power_at(const struct pfi_meter_config *cfg, const double *gpu_w,
                       const double *other_w, size_t n, int level,
                       double gpu_total_w, double *out_w,
                       struct pfi_error *err) {
  *out_w = NAN;
  if (!isfinite(gpu_total_w) || gpu_total_w < 0)
    return pfi_error_set(err, PFI_EINVAL, "GPU power %g W: not finite and >= 0",
                         gpu_total_w);
  if (level == PFI_LEVEL_GPU) {
    *out_w = gpu_total_w;
    return 0;
  }
  if (n == 0)
    return pfi_error_set(err, PFI_EINVAL, "no nodes");
  double now;
  int rc = pfi_meter_levels(cfg, gpu_w, other_w, n, &now, NULL, NULL, err);
  if (rc < 0)
    return rc;
  *out_w = at_gpu(cfg, gpu_w, other_w, n, now, level, gpu_total_w);
  return 0;
}

double pfi_meter_job_power_w(const struct pfi_meter_config *cfg, double gpu_w,
                             unsigned nodes, int level) {
  if (nodes == 0 || !isfinite(gpu_w) || gpu_w < 0)
    return NAN;
  double per = gpu_w / nodes + cfg->node_other_w;
  if (level == PFI_LEVEL_GPU)
    return gpu_w;
  if (level == PFI_LEVEL_NODE)
    return nodes * per;
  return cfg->pue * nodes * pfi_meter_node_wall_w(cfg, per);
}

/* ---- configuration ----------------------------------------------------- */

static int num(const char *name, long line, long col, const char *s, double lo,
               double hi, double *out, struct pfi_error *err) {
  char *end;
  double v = strtod(s, &end);
  while (*end == ' ' || *end == '\t')
    end++;
  if (end == s || *end || !isfinite(v) || v < lo || v > hi)
    return pfi_error_setloc(err, PFI_EPARSE, name, line, col,
                            "'%.40s' is not a number in [%g, %g]", s, lo, hi);
  *out = v;
  return 0;
}

int pfi_meter_config_load_mem(const char *name, const char *data, size_t len,
                              struct pfi_meter_config *cfg,
                              struct pfi_error *err) {
  pfi_meter_config_init(cfg);
  long line = 0;
  size_t i = 0;
  char buf[1024];
  while (i < len) {
    line++;
    const char *ln = data + i;
    const char *nl = memchr(ln, '\n', len - i);
    size_t n = nl ? (size_t)(nl - ln) : len - i;
    i += n + (nl != NULL);
    if (memchr(ln, 0, n))
      return pfi_error_setloc(err, PFI_EPARSE, name, line,
                              (long)((const char *)memchr(ln, 0, n) - ln) + 1,
                              "NUL byte");
    if (n >= sizeof buf)
      return pfi_error_setloc(err, PFI_EPARSE, name, line, 1,
                              "line longer than %zu bytes", sizeof buf - 1);
    memcpy(buf, ln, n);
    buf[n] = 0;
    if (n && buf[n - 1] == '\r')
      buf[--n] = 0;
    char *hash = strchr(buf, '#');
    if (hash)
      *hash = 0;
    char *k = buf;
    while (isspace((unsigned char)*k))
      k++;
    if (!*k)
      continue;
    char *eq = strchr(k, '=');
    if (!eq)
      return pfi_error_setloc(err, PFI_EPARSE, name, line, (long)(k - buf) + 1,
                              "expected 'key = value'");
    char *ke = eq;
    while (ke > k && isspace((unsigned char)ke[-1]))
      ke--;
    *ke = 0;
    char *v = eq + 1;
    while (isspace((unsigned char)*v))
      v++;
    char *ve = v + strlen(v);
    while (ve > v && isspace((unsigned char)ve[-1]))
      *--ve = 0;
    long vcol = (long)(v - buf) + 1;
    int rc = 0;
    if (strcmp(k, "node_other_w") == 0)
      rc = num(name, line, vcol, v, 0, 1e7, &cfg->node_other_w, err);
    else if (strcmp(k, "psu_rated_w") == 0)
      rc = num(name, line, vcol, v, 0, 1e7, &cfg->psu_rated_w, err);
    else if (strcmp(k, "pue") == 0)
      rc = num(name, line, vcol, v, 1, 10, &cfg->pue, err);
    else if (strcmp(k, "facility_other_w") == 0)
      rc = num(name, line, vcol, v, 0, 1e10, &cfg->facility_other_w, err);
    else if (strcmp(k, "psu_curve") == 0) {
      size_t np = 0;
      char *p = v;
      while (*p) {
        if (np == PFI_PSU_POINTS_MAX)
          return pfi_error_setloc(
              err, PFI_EPARSE, name, line, (long)(p - buf) + 1,
              "psu_curve: more than %d points", PFI_PSU_POINTS_MAX);
        char *c = strchr(p, ',');
        if (c)
          *c = 0;
        char *colon = strchr(p, ':');
        long pcol = (long)(p - buf) + 1;
        if (!colon)
          return pfi_error_setloc(err, PFI_EPARSE, name, line, pcol,
                                  "psu_curve: expected LOAD:EFFICIENCY");
        *colon = 0;
        double ld, ef;
        if ((rc = num(name, line, pcol, p, 1e-6, 10, &ld, err)) < 0 ||
            (rc = num(name, line, (long)(colon + 1 - buf) + 1, colon + 1, 1e-3,
                      1, &ef, err)) < 0)
          return rc;
        if (np > 0 && !(ld > cfg->psu_load[np - 1]))
          return pfi_error_setloc(err, PFI_EPARSE, name, line, pcol,
                                  "psu_curve: loads must increase");
        cfg->psu_load[np] = ld;
        cfg->psu_eff[np] = ef;
        np++;
        if (!c)
          break;
        p = c + 1;
      }
      if (np == 0)
        return pfi_error_setloc(err, PFI_EPARSE, name, line, vcol,
                                "psu_curve: no points");
      cfg->psu_n = np;
    } else
      return pfi_error_setloc(err, PFI_EPARSE, name, line, (long)(k - buf) + 1,
                              "unknown key '%.40s' (node_other_w, "
                              "psu_rated_w, psu_curve, pue, facility_other_w)",
                              k);
    if (rc < 0)
      return rc;
  }
  return 0;
}

int pfi_meter_config_load(const char *path, struct pfi_meter_config *cfg,
                          struct pfi_error *err) {
  char *buf;
  size_t len;
  int rc = pfi_read_file(path, &buf, &len, err);
  if (rc < 0)
    return rc;
  rc = pfi_meter_config_load_mem(path, buf, len, cfg, err);
  free(buf);
  return rc;
}
