/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi grid capacity`, `pfi grid curves` and `pfi grid meter`: flexible
 * capacity under the tiers and power at the meter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cmd_grid.h"
#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/flexcap.h"
#include "pfi/meter.h"
#include "pfi/monotone.h"
#include "pfi/objective.h"
#include "pfi/timeline.h"

int pfi__grid_capacity(const struct opts *o) {
  if (!o->curves || !o->tiers || (!o->contract && !o->tier))
    return pfi__grid_usage(
        "capacity: --curves, --tiers and --contract or --tier are "
        "required%s",
        "");
  static const double dflt[] = {900, 3600, 7200, 14400};
  const double *dur = o->ndur ? o->durations : dflt;
  size_t nd = o->ndur ? o->ndur : 4;
  struct pfi_flex_jobs cj;
  struct pfi_error err;
  pfi_error_clear(&err);
  /* GPU power unless --level says otherwise (the meter default is the
   * OpenADR commands'). */
  int level = o->level_given ? o->level : PFI_LEVEL_GPU;
  if (level != PFI_LEVEL_GPU && !o->config)
    return pfi__grid_usage("capacity: --level %s needs --config (the meter "
                           "chain)",
                           pfi__grid_level_name(level));
  struct pfi_meter_config cfg;
  pfi_meter_config_init(&cfg);
  struct obj_opt ob = o->ob; /* the weights read are this copy's */
  int rc = pfi_flex_jobs_load_fit(&cj, o->curves, o->map, o->tiers, o->contract,
                                  o->tier, (enum pfi_curve_fit)o->curve_fit,
                                  &err),
      status = 0, gpus_known = 0;
  char odesc[256];
  json_t *arr = json_array();
  const char **names = calloc(cj.n + 1, sizeof *names);
  for (size_t i = 0; rc >= 0 && names && i < cj.n; i++)
    names[i] = cj.jobs[i].job;
  if (rc >= 0 && !names)
    rc = pfi_error_set(&err, PFI_ENOMEM, "out of memory");
  if (rc >= 0)
    rc = obj_opt_load(&ob, names, cj.n, &err);
  free(names);
  if (rc >= 0) {
    int *g = calloc(cj.n + 1, sizeof *g);
    for (size_t i = 0; g && i < cj.n; i++)
      g[i] = cj.jobs[i].gpus;
    rc = g ? pfi_objective_gpus(g, cj.n, NULL, &gpus_known, &err)
           : pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    free(g);
  }
  pfi_objective_describe(&ob.obj, gpus_known, odesc, sizeof odesc);
  if (rc >= 0 && level != PFI_LEVEL_GPU)
    rc = pfi_meter_config_load(o->config, &cfg, &err);
  if (rc >= 0)
    rc = pfi_flex_jobs_at_level(&cj, &cfg, level, o->gpn ? (unsigned)o->gpn : 8,
                                &err);
  if (rc < 0) {
    status = pfi__grid_fail(&err);
    goto out;
  }
  if (o->fmt == PFI_FMT_CSV)
    puts("duration_s,jobs_eligible,loss_pct,shed_w,shed_lo_w,shed_hi_w");
  else if (o->fmt == PFI_FMT_TABLE)
    printf("%-10s  %4s  shed W%s at <= 1 / 2 / 5 / 10 / 20 %% throughput "
           "loss\n",
           "event", "jobs",
           level == PFI_LEVEL_METER  ? " at the meter"
           : level == PFI_LEVEL_NODE ? " of the nodes"
                                     : "");
  for (size_t d = 0; d < nd; d++) {
    struct pfi_flexcap fc;
    if ((rc = pfi_flexcap_compute_objective(cj.jobs, cj.n, dur[d], o->notice,
                                            400, &ob.obj, &fc, &err)) < 0) {
      status = pfi__grid_fail(&err);
      goto out;
    }
    json_t *q = json_array();
    for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
      double pct = 100 * pfi_capacity_quotes[k];
      if (o->fmt == PFI_FMT_CSV)
        printf("%.0f,%zu,%g,%.3f,%.3f,%.3f\n", dur[d], fc.eligible, pct,
               fc.quote_w[k], fc.quote_lo_w[k], fc.quote_hi_w[k]);
      json_array_append_new(q, json_pack("{s:f,s:f,s:f,s:f}", "loss_pct", pct,
                                         "shed_w", fc.quote_w[k], "shed_lo_w",
                                         fc.quote_lo_w[k], "shed_hi_w",
                                         fc.quote_hi_w[k]));
    }
    if (o->fmt == PFI_FMT_TABLE) {
      printf("%-10.0f  %4zu ", dur[d], fc.eligible);
      for (size_t k = 0; k < PFI_CAPACITY_NQUOTE; k++)
        if (fc.has_interval)
          printf(" %.0f [%.0f, %.0f]", fc.quote_w[k], fc.quote_lo_w[k],
                 fc.quote_hi_w[k]);
        else
          printf(" %10.1f", fc.quote_w[k]);
      putchar('\n');
    }
    json_array_append_new(
        arr, json_pack("{s:f,s:i,s:f,s:f,s:b,s:s,s:s,s:s,s:o}", "duration_s",
                       dur[d], "jobs_eligible", (int)fc.eligible, "uncapped_w",
                       fc.uncapped_w, "floor_w", fc.floor_w, "interval",
                       fc.has_interval, "level", pfi__grid_level_name(level),
                       "objective", pfi_objective_name(ob.obj.kind), "curve",
                       pfi_curve_fit_name(cj.curve_fit), "quotes", q));
  }
  if (o->fmt == PFI_FMT_TABLE)
    printf("(event length in s; %zu job(s); %s; %s; %s curves)\n", cj.n,
           cj.has_sd ? "ranges over the curves' 95 % intervals"
                     : "no standard errors in the curves: no ranges",
           odesc, pfi_curve_fit_name(cj.curve_fit));
  if (o->fmt == PFI_FMT_JSON) {
    status = pfi_cli_print_json(arr);
    arr = NULL;
  }
out:
  json_decref(arr);
  obj_opt_release(&ob);
  pfi_flex_jobs_release(&cj);
  return status;
}

int pfi__grid_curves(const struct opts *o) {
  if (!o->curves || !o->config || o->level == PFI_LEVEL_GPU)
    return pfi__grid_usage(
        "curves: --curves, --config and --level node|meter are "
        "required%s",
        "");
  struct pfi_meter_config cfg;
  struct pfi_curveset cs;
  pfi_curveset_init(&cs);
  struct pfi_error err;
  pfi_error_clear(&err);
  if (pfi_meter_config_load(o->config, &cfg, &err) < 0 ||
      pfi_curveset_read(&cs, o->curves, o->map, &err) < 0) {
    pfi_curveset_release(&cs);
    return pfi__grid_fail(&err);
  }
  unsigned long gpn = o->gpn ? o->gpn : 8;
  printf("job,cap_w,power_w,tokens_per_s,gpu_power_w\n");
  for (size_t i = 0; i < cs.n; i++) {
    const struct pfi_curve *c = &cs.c[i];
    unsigned gpus = c->gpus > 0 ? (unsigned)c->gpus : 1;
    unsigned nodes = (unsigned)((gpus + gpn - 1) / gpn);
    for (size_t k = 0; k < c->n; k++) {
      double pw =
          pfi_meter_job_power_w(&cfg, c->pts[k].power_w, nodes, o->level);
      pfi_cli_put_csv_field(stdout, c->job);
      printf(",%.17g,%.17g,%.17g,%.17g\n", c->pts[k].cap_w, pw,
             c->pts[k].tokens_per_s, c->pts[k].power_w);
    }
  }
  pfi_curveset_release(&cs);
  return ferror(stdout) ? PFI_EXIT_FAIL : 0;
}

/* "W,W,..." -> array (caller frees). On an error *out is NULL: a value out
 * of range frees the list here, so the caller's free() is a no-op. */
static int numlist(const char *s, double **out, size_t *n) {
  struct pfi_error err;
  if (pfi_cli_parse_numlist(s, out, n, &err) < 0)
    return -1;
  for (size_t i = 0; i < *n; i++)
    if (!isfinite((*out)[i]) || (*out)[i] < 0 || (*out)[i] > 1e9) {
      free(*out);
      *out = NULL;
      *n = 0;
      return -1;
    }
  return 0;
}

int pfi__grid_meter(const struct opts *o) {
  if (o->interval > 600) {
    char b[32];
    snprintf(b, sizeof b, "%g s", o->interval);
    return pfi__grid_usage("meter: --interval: at most 600 s, got %s", b);
  }
  struct pfi_meter_config cfg;
  struct pfi_error err;
  pfi_error_clear(&err);
  if (o->config) {
    if (pfi_meter_config_load(o->config, &cfg, &err) < 0)
      return pfi__grid_fail(&err);
  } else
    pfi_meter_config_init(&cfg);
  struct pfi_rapl r;
  pfi_rapl_open(o->powercap, &r, &err);
  double rapl_w = NAN;
  if (r.n > 0) {
    double e0[PFI_RAPL_MAX], e1[PFI_RAPL_MAX];
    double dt = o->interval > 0 ? o->interval : 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (pfi_rapl_read(&r, e0, &err) == 0) {
      struct timespec ts = {(time_t)dt, (long)((dt - floor(dt)) * 1e9)};
      nanosleep(&ts, NULL);
      clock_gettime(CLOCK_MONOTONIC, &b);
      if (pfi_rapl_read(&r, e1, &err) == 0)
        rapl_w = pfi_rapl_power_w(&r, e0, e1,
                                  (double)(b.tv_sec - a.tv_sec) +
                                      (double)(b.tv_nsec - a.tv_nsec) / 1e9);
    }
  }
  /* The BMC's reading of the whole node, when asked for. */
  double bmc_w = NAN;
  struct pfi_bmc bmc;
  pfi_bmc_open(NULL, &bmc, NULL);
  if (o->bmc) {
    if (pfi_bmc_open(o->bmc, &bmc, &err) < 0)
      return pfi__grid_usage("--bmc: %s", err.msg);
    if (pfi_bmc_read(&bmc, &bmc_w, &err) < 0) {
      if (err.code != PFI_ENOTSUP)
        err.code = PFI_EIO; /* the BMC could not be read: exit 1 */
      return pfi__grid_fail(&err);
    }
  }
  json_t *j = json_object();
  json_t *zones = json_array();
  for (size_t i = 0; i < r.n; i++)
    json_array_append_new(zones, json_pack("{s:s,s:s}", "name", r.zone[i].name,
                                           "counter", r.zone[i].path));
  json_object_set_new(j, "rapl_zones", zones);
  json_object_set_new(j, "rapl_package_dram_w",
                      isfinite(rapl_w) ? json_real(rapl_w) : json_null());
  if (o->bmc) {
    json_object_set_new(j, "bmc_tool",
                        json_string(pfi_bmc_tool_name(bmc.tool)));
    json_object_set_new(j, "bmc_node_w", json_real(bmc_w));
  }
  int status = 0;
  double *g = NULL, *ot = NULL;
  size_t ng = 0, no = 0;
  if (o->gpuw) {
    if (numlist(o->gpuw, &g, &ng) < 0 ||
        (o->otherw && (numlist(o->otherw, &ot, &no) < 0 || no != ng))) {
      json_decref(j);
      free(g);
      free(ot);
      return pfi__grid_usage(
          "--gpu-w / --other-w: expected one power >= 0 per node "
          "(the same count in both), got '%s'",
          o->gpuw);
    }
    double gt, nt, fac;
    if (pfi_meter_levels(&cfg, g, ot, ng, &gt, &nt, &fac, &err) < 0) {
      status = pfi__grid_fail(&err);
      goto out;
    }
    json_object_set_new(j, "nodes", json_integer((json_int_t)ng));
    json_object_set_new(j, "gpu_w", json_real(gt));
    json_object_set_new(j, "node_w", json_real(nt));
    json_object_set_new(j, "meter_w", json_real(fac));
    if (o->limit > 0) {
      double gl;
      int rc =
          pfi_meter_gpu_limit(&cfg, g, ot, ng, o->level, o->limit, &gl, &err);
      if (rc < 0 && rc != PFI_EINFEASIBLE) {
        status = pfi__grid_fail(&err);
        goto out;
      }
      json_object_set_new(j, "limit_w", json_real(o->limit));
      json_object_set_new(j, "limit_level",
                          json_string(pfi__grid_level_name(o->level)));
      json_object_set_new(j, "gpu_limit_w", json_real(gl));
      json_object_set_new(j, "feasible", json_boolean(rc == 0));
      if (rc < 0)
        json_object_set_new(j, "why", json_string(err.msg));
    }
  }
  if (o->fmt == PFI_FMT_JSON) {
    status = pfi_cli_print_json(j);
    j = NULL;
  } else {
    if (r.n == 0)
      printf("RAPL: no readable powercap zone on this machine (%s); node "
             "power beyond the GPUs is the configured node_other_w = %.1f W\n",
             o->powercap ? o->powercap : "/sys/class/powercap",
             cfg.node_other_w);
    else if (!isfinite(rapl_w))
      printf("RAPL: %zu zone(s), no package zone read: package + DRAM power "
             "not measured\n",
             r.n);
    else
      printf("RAPL: %zu zone(s); package + DRAM power %.1f W\n", r.n, rapl_w);
    if (o->bmc)
      printf("BMC (DCMI through %s): the whole node %.1f W\n",
             pfi_bmc_tool_name(bmc.tool), bmc_w);
    json_t *v;
    if ((v = json_object_get(j, "gpu_w")))
      printf("nodes %zu: GPU %.1f W, node %.1f W, meter %.1f W (PUE %.3g)\n",
             ng, json_real_value(v),
             json_real_value(json_object_get(j, "node_w")),
             json_real_value(json_object_get(j, "meter_w")), cfg.pue);
    if ((v = json_object_get(j, "gpu_limit_w")))
      printf("a %s limit of %.1f W leaves the GPUs %.1f W%s%s\n",
             pfi__grid_level_name(o->level), o->limit, json_real_value(v),
             json_is_true(json_object_get(j, "feasible")) ? ""
                                                          : ": infeasible, ",
             json_is_true(json_object_get(j, "feasible"))
                 ? ""
                 : json_string_value(json_object_get(j, "why")));
  }
out:
  json_decref(j);
  free(g);
  free(ot);
  return status;
}
