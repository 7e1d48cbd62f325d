/* SPDX-License-Identifier: GPL-3.0-or-later */
/* GPU -> node -> facility power, its inversion, and the RAPL and DCMI
 * readers. See include/pfi/meter.h. */
#include "pfi/meter.h"

#include <ctype.h>
#include <dirent.h>
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

/* ---- RAPL -------------------------------------------------------------- */

static int read_small(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t k = fread(buf, 1, n - 1, f);
  fclose(f);
  buf[k] = 0;
  while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == ' '))
    buf[--k] = 0;
  return k > 0 ? 0 : -1;
}

static int cmp_zone(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

int pfi_rapl_open(const char *root, struct pfi_rapl *r, struct pfi_error *err) {
  memset(r, 0, sizeof *r);
  if (!root)
    root = "/sys/class/powercap";
  DIR *d = opendir(root);
  if (!d)
    return 0;
  char names[PFI_RAPL_MAX][64];
  size_t nn = 0;
  struct dirent *e;
  while ((e = readdir(d)) && nn < PFI_RAPL_MAX) {
    if (strncmp(e->d_name, "intel-rapl:", 11) != 0 ||
        strlen(e->d_name) >= sizeof names[0])
      continue;
    snprintf(names[nn++], sizeof names[0], "%.63s", e->d_name);
  }
  closedir(d);
  qsort(names, nn, sizeof names[0], cmp_zone);
  for (size_t i = 0; i < nn; i++) {
    char p[600], v[128];
    snprintf(p, sizeof p, "%.400s/%.60s/energy_uj", root, names[i]);
    if (read_small(p, v, sizeof v) < 0)
      continue; /* unreadable (root-only on recent kernels): not measured */
    size_t k = r->n;
    snprintf(r->zone[k].path, sizeof r->zone[k].path, "%.500s", p);
    snprintf(p, sizeof p, "%.400s/%.60s/name", root, names[i]);
    if (read_small(p, v, sizeof v) < 0)
      snprintf(v, sizeof v, "%.60s", names[i]);
    snprintf(r->zone[k].name, sizeof r->zone[k].name, "%.63s", v);
    snprintf(p, sizeof p, "%.400s/%.60s/max_energy_range_uj", root, names[i]);
    r->zone[k].max_uj = read_small(p, v, sizeof v) == 0 ? strtod(v, NULL) : 0;
    r->zone[k].top = strchr(names[i] + 11, ':') == NULL;
    r->n++;
  }
  (void)err;
  return (int)r->n;
}

int pfi_rapl_read(const struct pfi_rapl *r, double *uj, struct pfi_error *err) {
  for (size_t i = 0; i < r->n; i++) {
    char v[128], *end;
    if (read_small(r->zone[i].path, v, sizeof v) < 0)
      return pfi_error_set(err, PFI_EIO, "cannot read %s", r->zone[i].path);
    uj[i] = strtod(v, &end);
    if (*end || !isfinite(uj[i]) || uj[i] < 0)
      return pfi_error_set(err, PFI_EPARSE, "%s: '%.40s' is not a counter",
                           r->zone[i].path, v);
  }
  return 0;
}

double pfi_rapl_power_w(const struct pfi_rapl *r, const double *uj0,
                        const double *uj1, double dt_s) {
  if (!(dt_s > 0))
    return NAN;
  double sum_uj = 0;
  int pkg = 0;
  for (size_t i = 0; i < r->n; i++) {
    const char *nm = r->zone[i].name;
    int is_pkg = r->zone[i].top && strncmp(nm, "package", 7) == 0;
    int is_dram = strcmp(nm, "dram") == 0;
    if (!is_pkg && !is_dram)
      continue; /* psys contains the packages; core/uncore are inside them */
    double d = uj1[i] - uj0[i];
    if (d < 0 && r->zone[i].max_uj > 0)
      d += r->zone[i].max_uj;
    if (d < 0)
      return NAN;
    sum_uj += d;
    pkg |= is_pkg;
  }
  return pkg ? sum_uj / 1e6 / dt_s : NAN;
}

/* ---- DCMI -------------------------------------------------------------- */

int pfi_dcmi_parse(const char *text, size_t len, double *w,
                   struct pfi_error *err) {
  static const char *keys[] = {"Instantaneous power reading", "Current Power"};
  size_t i = 0;
  long line = 0, bad_line = 0;
  char bad[96] = "", first[96] = "";
  int found = 0;
  double value = 0;
  while (i < len) {
    const char *ln = text + i;
    const char *nl = memchr(ln, '\n', len - i);
    size_t n = nl ? (size_t)(nl - ln) : len - i;
    i += n + (nl != NULL);
    line++;
    char buf[256];
    if (n >= sizeof buf)
      continue;
    memcpy(buf, ln, n);
    buf[n] = 0;
    /* Printable copy (for the message) of the first non-blank line. */
    if (!first[0] && strspn(buf, " \t\r") < n) {
      size_t k = 0;
      for (const char *c = buf + strspn(buf, " \t"); *c && k + 1 < sizeof first;
           c++)
        first[k++] = isprint((unsigned char)*c) ? *c : '?';
      first[k] = 0;
    }
    /* freeipmi prints the state after the reading (a 0 W reading when
     * deactivated), ipmitool too: the state wins wherever it is. */
    if ((strstr(buf, "Power Measurement") && strstr(buf, "Deactivated")) ||
        (strstr(buf, "Power reading state is") && strstr(buf, "deactivated")))
      return pfi_error_set(err, PFI_ENOTSUP,
                           "line %ld: the BMC's DCMI power measurement is "
                           "deactivated",
                           line);
    if (found)
      continue;
    for (size_t k = 0; k < 2; k++) {
      char *p = strstr(buf, keys[k]);
      if (!p)
        continue;
      p = strchr(p, ':');
      if (!p)
        continue;
      char *end;
      double v = strtod(p + 1, &end);
      while (*end == ' ')
        end++;
      if (end != p + 1 && isfinite(v) && v >= 0 && v < 1e6 &&
          strncmp(end, "Watts", 5) == 0) {
        found = 1;
        value = v;
        break;
      }
      if (!bad_line) {
        bad_line = line;
        size_t m = 0;
        for (const char *c = buf + strspn(buf, " \t"); *c && m + 1 < sizeof bad;
             c++)
          bad[m++] = isprint((unsigned char)*c) ? *c : '?';
        bad[m] = 0;
      }
    }
  }
  if (found) {
    *w = value;
    return 0;
  }
  if (bad_line)
    return pfi_error_set(err, PFI_EPARSE,
                         "line %ld: '%s': not a DCMI power reading of N Watts "
                         "(0 <= N < 1e6)",
                         bad_line, bad);
  return pfi_error_set(err, PFI_EPARSE,
                       "no DCMI power reading ('Instantaneous power reading: "
                       "N Watts' or 'Current Power : N Watts') in %ld line(s) "
                       "of output%s%s%s",
                       line, first[0] ? ", the first '" : "", first,
                       first[0] ? "'" : "");
}
