/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The emulated cluster's configuration (cluster.h): defaults, one
 * "key=value" pair, a cluster file or inline pairs. The cluster itself is
 * cluster.c.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/cluster.h"
#include "pfi/emu.h"

void pfi_cluster_config_init(struct pfi_cluster_config *c) {
  memset(c, 0, sizeof *c);
  c->nodes = 125;
  c->gpus_per_node = 8;
  snprintf(c->profile, sizeof c->profile, "h200");
  c->seed = 1;
  c->library_share = 0;
  c->fill = 0.95;
  c->job_hours = 6;
  c->eval_every_s = 1800;
  c->eval_s = 60;
  c->ckpt_every_s = 2400;
  c->ckpt_s = 45;
  c->faults = 1;
  c->protect_share = 0.1;
  c->tiered_share = 0.5;
  c->deadline_frac = 0.9;
}

static int num(const char *v, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  while (*end && isspace((unsigned char)*end))
    end++;
  if (end == v || *end || errno || !isfinite(x) || x < lo || x > hi)
    return -1;
  *out = x;
  return 0;
}

int pfi_cluster_config_set(struct pfi_cluster_config *c, const char *key,
                           const char *v, struct pfi_error *err) {
  double x;
  struct {
    const char *k;
    double lo, hi;
    int integer;
    void *p; /* double* or unsigned* or int* or unsigned long* */
    char kind;
  } tab[] = {
      {"nodes", 1, 100000, 1, &c->nodes, 'u'},
      {"gpus_per_node", 1, 64, 1, &c->gpus_per_node, 'u'},
      {"seed", 0, 4294967295.0, 1, &c->seed, 'l'},
      {"library_share", 0, 1, 0, &c->library_share, 'd'},
      {"fill", 0, 1, 0, &c->fill, 'd'},
      {"job_hours", 0.1, 10000, 0, &c->job_hours, 'd'},
      {"eval_every_s", 60, 1e7, 0, &c->eval_every_s, 'd'},
      {"eval_s", 0, 3600, 0, &c->eval_s, 'd'},
      {"ckpt_every_s", 60, 1e7, 0, &c->ckpt_every_s, 'd'},
      {"ckpt_s", 0, 3600, 0, &c->ckpt_s, 'd'},
      {"faults", 0, 1, 1, &c->faults, 'i'},
      {"protect_share", 0, 1, 0, &c->protect_share, 'd'},
      {"tiered_share", 0, 1, 0, &c->tiered_share, 'd'},
      {"tier_max_event_s", 0, 1e7, 0, &c->tier_max_event_s, 'd'},
      {"tier_notice_s", 0, 1e7, 0, &c->tier_notice_s, 'd'},
      {"deadline_share", 0, 1, 0, &c->deadline_share, 'd'},
      {"deadline_frac", 0, 1, 0, &c->deadline_frac, 'd'},
      {"event_notice_s", 0, 1e7, 0, &c->event_notice_s, 'd'},
      {"announce_s", 0, 3600, 0, &c->announce_s, 'd'},
      {"announce_err_s", 0, 600, 0, &c->announce_err_s, 'd'},
      {"cold_start", 0, 1, 1, &c->cold_start, 'i'},
      {"ckpt_wave_s", 0, 1e7, 0, &c->ckpt_wave_s, 'd'},
  };
  if (strcmp(key, "profile") == 0) {
    if (!pfi_emu_profile_find(v))
      return pfi_error_set(err, PFI_EINVAL,
                           "cluster: profile '%s' is not h200 or h100", v);
    snprintf(c->profile, sizeof c->profile, "%s", v);
    return 0;
  }
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    if (strcmp(key, tab[i].k))
      continue;
    if (num(v, tab[i].lo, tab[i].hi, &x) < 0 ||
        (tab[i].integer && x != floor(x)))
      return pfi_error_set(
          err, PFI_EINVAL, "cluster: %s = '%s' is not a%s number in %g..%g",
          key, v, tab[i].integer ? "n integer" : "", tab[i].lo, tab[i].hi);
    switch (tab[i].kind) {
    case 'u':
      *(unsigned *)tab[i].p = (unsigned)x;
      break;
    case 'l':
      *(unsigned long *)tab[i].p = (unsigned long)x;
      break;
    case 'i':
      *(int *)tab[i].p = (int)x;
      break;
    default:
      *(double *)tab[i].p = x;
    }
    return 0;
  }
  return pfi_error_set(err, PFI_EINVAL, "cluster: unknown key '%s'", key);
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = 0;
  return s;
}

int pfi_cluster_config_read(struct pfi_cluster_config *c, const char *spec,
                            struct pfi_error *err) {
  FILE *f = fopen(spec, "r");
  if (!f) {
    if (!strchr(spec, '='))
      return pfi_error_set(err, PFI_EIO, "%s: cannot open", spec);
    /* Inline pairs. */
    char buf[1024];
    if (strlen(spec) >= sizeof buf)
      return pfi_error_set(err, PFI_EINVAL, "cluster spec too long");
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
      char *eq = strchr(tok, '=');
      if (!eq)
        return pfi_error_set(err, PFI_EINVAL, "cluster: '%s' is not key=value",
                             tok);
      *eq = 0;
      int rc = pfi_cluster_config_set(c, trim(tok), trim(eq + 1), err);
      if (rc < 0)
        return rc;
    }
    return 0;
  }
  char line[512];
  long ln = 0, nkeys = 0;
  int rc = 0;
  while (fgets(line, sizeof line, f)) {
    ln++;
    if (!strchr(line, '\n') && !feof(f)) {
      rc = pfi_error_setloc(err, PFI_EPARSE, spec, ln, 0, "line too long");
      break;
    }
    char *h = strchr(line, '#');
    if (h)
      *h = 0;
    char *s = trim(line);
    if (!*s)
      continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      rc = pfi_error_setloc(err, PFI_EPARSE, spec, ln, 1,
                            "expected 'key = value'");
      break;
    }
    *eq = 0;
    struct pfi_error e2;
    if (pfi_cluster_config_set(c, trim(s), trim(eq + 1), &e2) < 0) {
      rc = pfi_error_setloc(err, PFI_EPARSE, spec, ln, 1, "%s", e2.msg);
      break;
    }
    nkeys++;
  }
  if (rc == 0 && ferror(f))
    rc = pfi_error_set(err, PFI_EIO, "%s: read error", spec);
  /* An empty file (or one of comments) is a mistake, not the default
   * cluster, which is asked for by name. */
  else if (rc == 0 && nkeys == 0)
    rc = pfi_error_setloc(err, PFI_EPARSE, spec, ln ? ln : 1, 1,
                          "no 'key = value' line (an empty cluster file; "
                          "the default cluster is 'default')");
  fclose(f);
  return rc;
}
