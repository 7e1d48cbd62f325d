/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Section 5 of the report: allocating a power cut across jobs. The
 * allocation simulation of every strategy against the oracle, in and out
 * of sample, for both mixes.
 */
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pfi/alloc.h"
#include "pfi/csv.h"
#include "pfi/curve.h"
#include "pfi/data.h"
#include "pfi/features.h"
#include "pfi/index.h"
#include "pfi/model.h"
#include "pfi/oracle.h"
#include "pfi/report.h"
#include "pfi/sim.h"
#include "pfi/stats.h"

#include "report_int.h"

/* ---- section 5: allocation
 * ---------------------------------------------------------- */

#define sim_cuts pfi_sim_default_cuts
#define N_SIM_CUTS PFI_SIM_DEFAULT_NCUTS

static void sim_progress(size_t done, size_t total, void *arg) {
  struct pfi__report *r = arg;
  if (done == total || done % 100 == 0)
    pfi__report_progress(r, "allocation simulation: workload %zu of %zu", done,
                         total);
}

/* Adds the rows of one simulation to the allocation table. */
static int sim_rows(struct pfi__report *r, struct pfi_rtable *t,
                    const char *mix, const char *est,
                    const struct pfi_sim_result *res, unsigned strategies,
                    double pub30, double *closed30, double *gain30) {
  for (size_t c = 0; c < N_SIM_CUTS; c++)
    for (int s = 0; s < PFI_STRAT__COUNT; s++) {
      if (!(strategies & (1u << s)) || !res->cell[s])
        continue;
      const struct pfi_sim_cell *cell = &res->cell[s][c];
      long row = pfi_rtable_add_row(t);
      if (row < 0)
        return pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
      int pub_row30 =
          strcmp(mix, "production") == 0 && strcmp(est, "in-sample") == 0 &&
          s == PFI_STRAT_PFI_AWARE && fabs(sim_cuts[c] - 0.3) < 1e-9;
      pfi__set_str(t, row, "mix", mix);
      pfi__set_str(t, row, "pfi_estimate", est);
      pfi__set_num(t, row, "cut_pct", 100.0 * sim_cuts[c]);
      pfi__set_str(t, row, "strategy", pfi_strategy_name((enum pfi_strategy)s));
      pfi__set_num(t, row, "gap_tokens_per_s_per_job", cell->gap_mean);
      pfi__set_num(t, row, "gap_ci95_lo", cell->gap_lo);
      pfi__set_num(t, row, "gap_ci95_hi", cell->gap_hi);
      pfi__set_num(t, row, "gap_closed_pct",
                   cell->closed_defined ? cell->closed_pct : NAN);
      pfi__set_num(t, row, "vs_pfi_aware",
                   cell->vs_aware_defined ? cell->vs_aware_mean : NAN);
      pfi__set_num(t, row, "vs_pfi_aware_lo",
                   cell->vs_aware_defined ? cell->vs_aware_lo : NAN);
      pfi__set_num(t, row, "vs_pfi_aware_hi",
                   cell->vs_aware_defined ? cell->vs_aware_hi : NAN);
      pfi__set_num(t, row, "gap_closed_pct_published", pub_row30 ? pub30 : NAN);
      pfi__set_num(t, row, "diff",
                   pub_row30 && cell->closed_defined ? cell->closed_pct - pub30
                                                     : NAN);
      if (pub_row30) {
        *closed30 = cell->closed_defined ? cell->closed_pct : NAN;
        if (res->cell[PFI_STRAT_EQUAL])
          *gain30 = res->cell[PFI_STRAT_EQUAL][c].gap_mean - cell->gap_mean;
      }
    }
  return 0;
}

static int fig_allocation(struct pfi__report *r,
                          const struct pfi_sim_result *res, int nres,
                          const char *const *mixes) {
  struct pfi_panel p[2];
  struct pfi_series s[2][PFI_STRAT__COUNT];
  double x[N_SIM_CUTS], y[2][PFI_STRAT__COUNT][N_SIM_CUTS];
  for (size_t c = 0; c < N_SIM_CUTS; c++)
    x[c] = 100.0 * sim_cuts[c];
  for (int m = 0; m < nres; m++) {
    size_t ns = 0;
    for (int st = 0; st < PFI_STRAT__COUNT; st++) {
      if (st == PFI_STRAT_ORACLE || !res[m].cell[st])
        continue;
      for (size_t c = 0; c < N_SIM_CUTS; c++)
        y[m][st][c] = res[m].cell[st][c].gap_mean;
      s[m][ns++] =
          (struct pfi_series){.title = pfi_strategy_name((enum pfi_strategy)st),
                              .x = x,
                              .y = y[m][st],
                              .n = N_SIM_CUTS,
                              .color = st};
    }
    pfi_panel_init(&p[m]);
    p[m].title = mixes[m];
    p[m].xlabel = "cluster power cut (%)";
    p[m].ylabel = "gap to oracle (tokens/s per job)";
    p[m].series = s[m];
    p[m].nseries = ns;
    p[m].key = 1;
    p[m].key_pos = "top left";
  }
  struct pfi_figure f = {.width = 1000,
                         .height = 400,
                         .rows = 1,
                         .cols = nres,
                         .panels = p,
                         .npanels = (size_t)nres};
  return pfi__report_figure(
      r, &f,
      "Throughput gap to the oracle against the cluster-wide power cut, per "
      "mix and strategy (mean over workloads; PFI estimated in sample by the "
      "DRAM-copy-product model).");
}

int pfi__sec_allocation(struct pfi__report *r, struct pfi__results *prev) {
  pfi_html_puts(&r->body, "<section id=\"allocation\"><h2>5. Allocating a "
                          "power cut across jobs</h2>\n");
  pfi__para(r,
            "Synthetic workloads of jobs drawn with replacement from the H200 "
            "headline groups, each scored at cluster-wide cuts of 0 to 40 % by "
            "every strategy against the exact oracle. PFI-aware uses PFI "
            "estimated by the telemetry model; pfi-curve (ours) turns that "
            "estimate into a whole curve. The out-of-sample rows estimate each "
            "job's PFI with a model that did not see the job (leave-one-out "
            "and leave-one-cluster-out are the same model family).");
  int rc = 0;
  /* The jobs: the core set of the prediction section. */
  const struct pfi__core *cs = &prev->core;
  struct pfi_jobset_inputs ai;
  memset(&ai, 0, sizeof ai);
  pfi_problem_init(&ai.prob);
  double *pfi_loo = NULL, *pfi_loco = NULL, *weight_prod = NULL;
  struct pfi_sim_result res[2], res_loo[2], res_loco[2];
  memset(res, 0, sizeof res);
  memset(res_loo, 0, sizeof res_loo);
  memset(res_loco, 0, sizeof res_loco);
  char loco_label[64];
  struct pfi_clusters cl;
  pfi_clusters_parse(&cl, r->o->clusters);
  snprintf(loco_label, sizeof loco_label, "leave-one-cluster-out (%s)",
           pfi_clusters_name(&cl));
  if (!r->js.have_features) {
    pfi__missing(r, "features.csv is not in the input (the strategies need the "
                    "telemetry of each job).");
    goto done;
  }
  if (!prev->have_core)
    goto done;
  size_t cap = cs->n + 1;
  pfi_loo = calloc(cap, sizeof *pfi_loo);
  pfi_loco = calloc(cap, sizeof *pfi_loco);
  weight_prod = calloc(cap, sizeof *weight_prod);
  if (!pfi_loo || !pfi_loco || !weight_prod) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto done;
  }
  char mixpath[4096];
  int have_prod =
      pfi_data_path("mixes/production.csv", mixpath, sizeof mixpath, NULL) == 0;
  unsigned all = 0;
  for (int s = 0; s < PFI_STRAT__COUNT; s++)
    all |= 1u << s;
  /* The in-sample estimate: the chosen model fitted on all library jobs;
   * the inputs as `pfi simulate` builds them from the same job set. */
  struct pfi_estimate_opts eo;
  pfi_estimate_opts_init(&eo);
  eo.clusters = cl;
  struct pfi_error e;
  if (cs->n < 5 || !pfi_features_has(&r->js.f, pfi_default_model_features)) {
    pfi__missing(r,
                 "the telemetry model (PFI on the DRAM copy product) could not "
                 "be fitted on the headline groups.");
    goto done;
  }
  if (pfi__note_oom(r, pfi_jobset_inputs_build(&cs->js, all, have_prod, &eo,
                                               &ai, &e)) != 0) {
    char msg[PFI_ERROR_MSG_MAX + 128];
    snprintf(msg, sizeof msg,
             "the allocation inputs could not be built from the headline "
             "groups: %s",
             e.msg);
    pfi__missing(r, msg);
    goto done;
  }
  /* Out of sample: each job's PFI estimated by a model that did not see
   * it (leave-one-out) or its cluster (leave-one-cluster-out). */
  eo.holdout = PFI_HOLDOUT_JOB;
  int have_loo =
      pfi__note_oom(r, pfi_jobset_estimate(&cs->js, &eo, pfi_loo, &e)) == 0;
  eo.holdout = PFI_HOLDOUT_CLUSTER;
  int have_loco =
      pfi__note_oom(r, pfi_jobset_estimate(&cs->js, &eo, pfi_loco, &e)) == 0;
  if (r->nomem)
    goto done;
  size_t fallbacks = 0;
  if (have_prod &&
      pfi__note_oom(r, pfi_mix_weights(mixpath, ai.is_ft, ai.gpus, cs->n,
                                       weight_prod, &fallbacks, NULL)) != 0)
    have_prod = 0;
  static const char *const mixes[2] = {"random", "production"};
  int nmix = have_prod ? 2 : 1;
  unsigned est_only = (1u << PFI_STRAT_ORACLE) | (1u << PFI_STRAT_EQUAL) |
                      (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE);
  for (int mi = 0; mi < nmix; mi++) {
    struct pfi_sim_config cfg = {
        .workloads = r->o->sim_workloads ? r->o->sim_workloads
                                         : PFI_SIM_DEFAULT_WORKLOADS,
        .size = r->o->sim_jobs ? r->o->sim_jobs : PFI_SIM_DEFAULT_SIZE,
        .cuts = sim_cuts,
        .ncuts = N_SIM_CUTS,
        .strategies = all,
        .seed = r->o->seed,
        .sample_weight = mi == 1 ? weight_prod : NULL,
        .progress = sim_progress,
        .progress_arg = r};
    struct pfi_alloc_inputs in = ai.in;
    pfi__report_progress(r, "allocation simulation: %s mix", mixes[mi]);
    rc = pfi_sim_run(&ai.prob, &in, &cfg, &res[mi], r->err);
    /* Out of sample: each job's PFI estimated by a model that did not see
     * the job (leave-one-out) or its architecture-task cluster (LOCO).
     * Only the strategies that read the estimate change. */
    cfg.strategies = est_only;
    if (rc == 0 && have_loo) {
      in.pfi = pfi_loo;
      pfi__report_progress(
          r, "allocation simulation: %s mix, leave-one-out estimates",
          mixes[mi]);
      rc = pfi_sim_run(&ai.prob, &in, &cfg, &res_loo[mi], r->err);
    }
    if (rc == 0 && have_loco) {
      in.pfi = pfi_loco;
      pfi__report_progress(
          r, "allocation simulation: %s mix, leave-one-cluster-out estimates",
          mixes[mi]);
      rc = pfi_sim_run(&ai.prob, &in, &cfg, &res_loco[mi], r->err);
    }
    if (rc == PFI_ENOMEM)
      goto done;
    if (rc) {
      /* The oracle or a strategy could not solve a sampled workload: the
       * page and the progress output say so, and the rest of the report
       * stands; no partial numbers are shown. */
      char msg[PFI_ERROR_MSG_MAX + 128];
      snprintf(msg, sizeof msg,
               "the allocation simulation (%s mix) failed: "
               "%s",
               mixes[mi], r->err->msg);
      pfi__report_progress(r, "warning: %s", msg);
      pfi__missing(r, msg);
      pfi_error_clear(r->err);
      rc = 0;
      goto done;
    }
  }
  if ((rc = fig_allocation(r, res, nmix, mixes)) != 0)
    goto done;
  static const char *const cols[] = {"mix",
                                     "pfi_estimate",
                                     "cut_pct",
                                     "strategy",
                                     "gap_tokens_per_s_per_job",
                                     "gap_ci95_lo",
                                     "gap_ci95_hi",
                                     "gap_closed_pct",
                                     "vs_pfi_aware",
                                     "vs_pfi_aware_lo",
                                     "vs_pfi_aware_hi",
                                     "gap_closed_pct_published",
                                     "diff"};
  char title[512], cdesc[96];
  snprintf(title, sizeof title,
           "Allocation simulation, objective throughput (the paper's: raw "
           "tokens/s summed across jobs): gap to the oracle (tokens/s per "
           "job, 95 %% interval), share of the equal-weight gap closed, and "
           "the "
           "difference to pfi-aware (positive: better); leave-one-cluster-out "
           "clusters %s; published: the paper's 63 %% at a 30 %% cut, "
           "production mix",
           pfi_clusters_describe(&cl, cdesc, sizeof cdesc));
  struct pfi_rtable *t = pfi__report_table(r, "allocation", title, 13, cols);
  if (!t) {
    rc = pfi_error_set(r->err, PFI_ENOMEM, "out of memory");
    goto done;
  }
  pfi__set_dec(t, "cut_pct", 0);
  pfi__set_dec(t, "gap_tokens_per_s_per_job", 1);
  pfi__set_dec(t, "gap_ci95_lo", 1);
  pfi__set_dec(t, "gap_ci95_hi", 1);
  pfi__set_dec(t, "gap_closed_pct", 1);
  pfi__set_dec(t, "vs_pfi_aware", 1);
  pfi__set_dec(t, "vs_pfi_aware_lo", 1);
  pfi__set_dec(t, "vs_pfi_aware_hi", 1);
  pfi__set_dec(t, "gap_closed_pct_published", 1);
  pfi__set_dec(t, "diff", 1);
  double closed30 = NAN, gain30 = NAN, d1 = NAN, d2 = NAN;
  /* The paper's 63 % beside ours only on its population. */
  double pub30 = cs->paper ? r->pub_gap30 : NAN;
  for (int mi = 0; mi < nmix && !rc; mi++) {
    rc = sim_rows(r, t, mixes[mi], "in-sample", &res[mi], all, pub30, &closed30,
                  &gain30);
    if (!rc)
      rc = sim_rows(r, t, mixes[mi], "leave-one-out", &res_loo[mi],
                    (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE),
                    pub30, &d1, &d2);
    if (!rc)
      rc = sim_rows(r, t, mixes[mi], loco_label, &res_loco[mi],
                    (1u << PFI_STRAT_PFI_AWARE) | (1u << PFI_STRAT_PFI_CURVE),
                    pub30, &d1, &d2);
  }
  if (!have_loo || !have_loco)
    pfi__missing(r,
                 "out-of-sample rows: the chosen model could not be evaluated "
                 "leaving one job or one cluster out (see the prediction "
                 "section), so those rows are absent.");
  if (rc)
    goto done;
  if (!have_prod)
    pfi__missing(r, "data/mixes/production.csv was not found or did not apply, "
                    "so only the random mix was simulated.");
  pfi__show_table(r, t);
  pfi__headline(r,
                "production mix, 30 % cut: share of the equal-to-oracle gap "
                "closed by PFI-aware (%)",
                closed30, cs->paper ? r->pub_gap30 : NAN, 1);
  pfi__headline(r,
                "production mix, 30 % cut: PFI-aware over equal weight "
                "(tokens/s per job)",
                gain30, cs->paper ? r->pub_tok30 : NAN, 0);
done:
  for (int i = 0; i < 2; i++) {
    pfi_sim_result_release(&res[i]);
    pfi_sim_result_release(&res_loo[i]);
    pfi_sim_result_release(&res_loco[i]);
  }
  pfi_jobset_inputs_release(&ai);
  free(pfi_loo);
  free(pfi_loco);
  free(weight_prod);
  pfi_html_puts(&r->body, "</section>\n");
  return rc;
}
