/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The node's power sensors: RAPL energy counters through Linux powercap,
 * and the parser of the BMC's DCMI reading (bmc.c runs the tool). See
 * include/pfi/sensor.h. */
#include "pfi/sensor.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
