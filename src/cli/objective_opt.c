/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "objective_opt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/alloc.h"
#include "pfi/capacity.h"
#include "pfi/curve.h"
#include "pfi/jobset.h"
#include "pfi/monotone.h"

void obj_opt_init(struct obj_opt *o) {
  memset(o, 0, sizeof *o);
  pfi_objective_init(&o->obj);
}

void obj_opt_release(struct obj_opt *o) {
  free(o->w);
  o->w = NULL;
  o->obj.weight = NULL;
}

int obj_opt_cb(const struct pfi_opt *row, const char *v, char *why,
               size_t n) {
  struct obj_opt *o = row->var;
  if (strcmp(row->lng, "weights") == 0) {
    o->weights = v;
    return 0;
  }
  if (strcmp(row->lng, "min-share") == 0) {
    struct pfi_error err;
    double x;
    if (pfi_cut_parse(v, &x, &err) < 0) {
      snprintf(why, n,
               "'%s' is not a share from 0 to below 100%% (0.5 or 50%%)", v);
      return -1;
    }
    o->obj.min_share = x;
    return 0;
  }
  int norm = strcmp(row->lng, "normalize") == 0;
  int k = norm ? PFI_OBJ_JOBS : pfi_objective_parse(v);
  if (k < 0) {
    snprintf(why, n, "unknown objective '%s' (work, throughput or jobs)", v);
    return -1;
  }
  if (o->kind_given && (int)o->obj.kind != k) {
    snprintf(why, n,
             "%s%s%scontradicts --objective %s (--normalize is --objective "
             "jobs)",
             norm ? "" : "'", norm ? "" : v, norm ? "" : "' ",
             pfi_objective_name(o->obj.kind));
    return -1;
  }
  o->obj.kind = (enum pfi_objective_kind)k;
  o->kind_given = 1;
  return 0;
}

int obj_opt_load(struct obj_opt *o, const char *const *jobs, size_t n,
                 struct pfi_error *err) {
  if (!o->weights)
    return 0;
  free(o->w);
  o->w = calloc(n + 1, sizeof *o->w);
  if (!o->w)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  int rc = pfi_objective_weights_read(o->weights, jobs, n, o->w, err);
  if (rc < 0)
    return rc;
  o->obj.weight = o->w;
  return 0;
}

int obj_opt_problem_js(struct obj_opt *o, const struct pfi_jobset *d,
                       const struct pfi_problem *raw, struct pfi_problem *out,
                       int *gpus_known, struct pfi_error *err) {
  const char **names = calloc(d->cs.n + 1, sizeof *names);
  if (!names)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < d->cs.n; i++)
    names[i] = d->cs.c[i].job;
  int rc = obj_opt_load(o, names, d->cs.n, err);
  free(names);
  if (rc == 0)
    rc = pfi_jobset_objective_problem(d, &o->obj, raw, out, gpus_known, err);
  return rc;
}

int obj_opt_problem_cs(struct obj_opt *o, const struct pfi_curveset *cs,
                       struct pfi_problem *out, int *gpus_known,
                       struct pfi_error *err) {
  const char **names = calloc(cs->n + 1, sizeof *names);
  if (!names)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < cs->n; i++)
    names[i] = cs->c[i].job;
  int rc = obj_opt_load(o, names, cs->n, err);
  free(names);
  if (rc == 0)
    rc = pfi_capacity_problem_objective(cs, &o->obj, out, gpus_known, err);
  return rc;
}

const struct pfi_opt_word obj_opt_curve_fits[] = {
    {"monotone", PFI_CURVE_MONOTONE}, {"raw", PFI_CURVE_RAW}, {NULL, 0}};
