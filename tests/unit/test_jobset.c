/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The job set (jobset.h): curves joined with features, provenance by one
 * rule, true PFI, GPU counts, the clusters of leave-one-cluster-out, PFI
 * estimates in and out of sample against a least-squares line computed
 * here by its closed form, and the paper's population.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/csv.h"
#include "pfi/jobset.h"
#include "testutil.h"

static char dir[64];

static const char *put(const char *name, const char *text) {
  static char path[4][128];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, 128, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return p;
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/pfi-jobset-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Four jobs, one capped point each at half the uncapped power: the ratio
 * PFI is 0.5 / (fraction of throughput lost), so tokens 50, 83.5, 75, 90
 * give PFI 1, 0.5/0.165, 2, 5. Features x = 0, 1, 2, 3. */
static const char curves[] = "job,cap_w,power_w,tokens_per_s,gpus,source\n"
                             "a,200,500,50,8,emulated\n"
                             "a,700,1000,100,8,emulated\n"
                             "b,200,500,83.5,8,emulated\n"
                             "b,700,1000,100,8,emulated\n"
                             "c,200,500,75,16,emulated\n"
                             "c,700,1000,100,16,emulated\n"
                             "d,200,500,90,,emulated\n"
                             "d,700,1000,100,,emulated\n";
static const char features[] = "job,arch,task,x,source\n"
                               "a,dense,pt,0,emulated\n"
                               "b,dense,ft,1,emulated\n"
                               "c,moe,ft,2,emulated\n"
                               "d,moe,ft,3,emulated\n";

static void test_load_join(void **state) {
  (void)state;
  struct pfi_jobset js;
  struct pfi_error err;
  const char *fc = put("c.csv", curves);
  const char *ff = put("f.csv", "job,arch,task,x\nb,dense,pt,1\na,moe,ft,0\n");
  assert_int_equal(pfi_jobset_load(&js, fc, NULL, ff, &err), 0);
  ASSERT_EQ_INT(js.cs.n, 4);
  ASSERT_EQ_INT(js.nmissing, 2);
  ASSERT_EQ_INT(js.frow[0], 1);
  ASSERT_EQ_INT(js.frow[1], 0);
  ASSERT_EQ_INT(js.frow[2], -1);
  /* 0.5 / 0.5, 0.5 / 0.165, 0.5 / 0.25, 0.5 / 0.1; rounding only. */
  ASSERT_NEAR(js.true_pfi[0], 1.0, 1e-12);
  ASSERT_NEAR(js.true_pfi[1], 0.5 / 0.165, 1e-12);
  ASSERT_NEAR(js.true_pfi[2], 2.0, 1e-12);
  ASSERT_NEAR(js.true_pfi[3], 5.0, 1e-12);
  /* The curves say emulated, the features say nothing: emulated. */
  assert_string_equal(pfi_jobset_provenance(&js), "emulated");
  assert_true(js.any_emulated);
  assert_int_equal(pfi_jobset_require_features(&js, "x", &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "2 of 4 jobs"));
  assert_non_null(strstr(err.msg, "c, d"));
  pfi_jobset_release(&js);
}

static void test_provenance(void **state) {
  (void)state;
  static const struct {
    const char *csv;
    enum pfi_provenance p;
    int em;
  } cases[] = {
      {"job,source\na,emulated\nb,emulated-h100\n", PFI_PROV_EMULATED, 1},
      {"job,source\na,measured\nb,Measured\n", PFI_PROV_MEASURED, 0},
      {"job,provenance\na,published\n", PFI_PROV_PUBLISHED, 0},
      {"job,source\na,emulated\nb,measured\n", PFI_PROV_MIXED, 1},
      {"job,source\na,measured\nb,\n", PFI_PROV_MIXED, 0},
      {"job,source\na,synthetic\n", PFI_PROV_UNSTATED, 0},
      {"job,x\na,1\n", PFI_PROV_UNSTATED, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct pfi_table t;
    struct pfi_error err;
    assert_int_equal(pfi_table_load_mem(&t, "t.csv", cases[i].csv,
                                        strlen(cases[i].csv), &err),
                     0);
    int em = -1;
    ASSERT_EQ_INT(pfi_table_provenance(&t, &em), cases[i].p);
    ASSERT_EQ_INT(em, cases[i].em);
    pfi_table_release(&t);
  }
  assert_string_equal(pfi_provenance_name(PFI_PROV_UNSTATED), "unstated");
}

static void test_gpus(void **state) {
  (void)state;
  struct pfi_jobset js;
  struct pfi_error err;
  const char *fc = put("c.csv", curves);
  /* No gpus column in the features: the curves' count, none for d. */
  assert_int_equal(pfi_jobset_load(&js, fc, NULL, put("f.csv", features), &err),
                   0);
  int g = 0;
  assert_int_equal(pfi_jobset_gpus(&js, 2, &g, &err), 0);
  ASSERT_EQ_INT(g, 16);
  assert_int_equal(pfi_jobset_gpus(&js, 3, &g, &err), PFI_ENOTFOUND);
  assert_non_null(strstr(err.msg, "job d"));
  pfi_jobset_release(&js);
  /* A gpus column wins, and is validated: whole, 1..1e9. */
  assert_int_equal(
      pfi_jobset_load(&js, fc, NULL,
                      put("f.csv", "job,gpus\na,4\nb,2.5\nc,0\nd,2e9\n"), &err),
      0);
  assert_int_equal(pfi_jobset_gpus(&js, 0, &g, &err), 0);
  ASSERT_EQ_INT(g, 4);
  for (size_t i = 1; i < 4; i++) {
    assert_int_equal(pfi_jobset_gpus(&js, i, &g, &err), PFI_EPARSE);
    assert_non_null(strstr(err.msg, "whole number from 1 to 1e9"));
    ASSERT_EQ_INT(err.line, (long)i + 2);
  }
  pfi_jobset_release(&js);
}

static void test_clusters(void **state) {
  (void)state;
  struct pfi_clusters c;
  pfi_clusters_parse(&c, NULL);
  assert_string_equal(pfi_clusters_name(&c), "archtask");
  pfi_clusters_parse(&c, "pooled");
  assert_string_equal(pfi_clusters_name(&c), "pooled");
  pfi_clusters_parse(&c, "site");
  ASSERT_EQ_INT(c.kind, PFI_CLUSTERS_COLUMN);
  struct pfi_jobset js;
  struct pfi_error err;
  assert_int_equal(pfi_jobset_load(&js, put("c.csv", curves), NULL,
                                   put("f.csv", features), &err),
                   0);
  static const char *const at[] = {"dense-pt", "dense-ft", "moe-ft", "moe-ft"};
  static const char *const po[] = {"dense", "dense", "moe-ft", "moe-ft"};
  struct pfi_clusters a, p;
  pfi_clusters_init(&a);
  pfi_clusters_parse(&p, "pooled");
  for (size_t i = 0; i < 4; i++) {
    assert_string_equal(pfi_clusters_of(&a, &js.f, (size_t)js.frow[i], &err),
                        at[i]);
    assert_string_equal(pfi_clusters_of(&p, &js.f, (size_t)js.frow[i], &err),
                        po[i]);
  }
  struct pfi_fitrows fr;
  assert_int_equal(pfi_fitrows_build(&js, NULL, NULL, &a, &fr, &err), 0);
  ASSERT_EQ_INT(fr.n, 4);
  ASSERT_EQ_INT(fr.nfolds, 3);
  ASSERT_EQ_INT(fr.fold_n[2], 2);
  pfi_fitrows_release(&fr);
  assert_int_equal(pfi_fitrows_build(&js, NULL, NULL, &p, &fr, &err), 0);
  ASSERT_EQ_INT(fr.nfolds, 2);
  pfi_fitrows_release(&fr);
  /* A named column that is absent is an error, not an undefined LOCO. */
  assert_int_equal(pfi_fitrows_build(&js, NULL, NULL, &c, &fr, &err),
                   PFI_EPARSE);
  pfi_fitrows_release(&fr);
  pfi_jobset_release(&js);
}

/* The least-squares line through (x[i], y[i]) for i not in `out`, at x0:
 * the closed form slope Sxy / Sxx (a reference independent of the SVD). */
static double line_at(const double *x, const double *y, size_t n,
                      const int *out, double x0) {
  double mx = 0, my = 0, m = 0, sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; i++)
    if (!out[i]) {
      mx += x[i];
      my += y[i];
      m++;
    }
  mx /= m;
  my /= m;
  for (size_t i = 0; i < n; i++)
    if (!out[i]) {
      sxy += (x[i] - mx) * (y[i] - my);
      sxx += (x[i] - mx) * (x[i] - mx);
    }
  return my + sxy / sxx * (x0 - mx);
}

static void test_estimates(void **state) {
  (void)state;
  struct pfi_jobset js;
  struct pfi_error err;
  assert_int_equal(pfi_jobset_load(&js, put("c.csv", curves), NULL,
                                   put("f.csv", features), &err),
                   0);
  const double x[4] = {0, 1, 2, 3};
  const double *y = js.true_pfi;
  const char *cl[4] = {"dense-pt", "dense-ft", "moe-ft", "moe-ft"};
  struct pfi_estimate_opts o;
  pfi_estimate_opts_init(&o);
  o.features = "x";
  double est[4];
  /* Tolerance: rounding of the SVD solution against the closed form. */
  for (int h = 0; h < 3; h++) {
    o.holdout = (enum pfi_holdout)h;
    assert_int_equal(pfi_jobset_estimate(&js, &o, est, &err), 0);
    for (size_t i = 0; i < 4; i++) {
      int out[4] = {0};
      for (size_t j = 0; j < 4; j++)
        out[j] = h == 1 ? j == i : h == 2 ? strcmp(cl[j], cl[i]) == 0 : 0;
      ASSERT_NEAR(est[i], line_at(x, y, 4, out, x[i]), 1e-12);
    }
  }
  /* Fitted on a, b, c only: d is predicted by their line. */
  unsigned char on[4] = {1, 1, 1, 0};
  o.holdout = PFI_HOLDOUT_NONE;
  o.fit_on = on;
  assert_int_equal(pfi_jobset_estimate(&js, &o, est, &err), 0);
  int out[4] = {0, 0, 0, 1};
  ASSERT_NEAR(est[3], line_at(x, y, 4, out, 3), 1e-12);
  /* True PFI. */
  pfi_estimate_opts_init(&o);
  o.true_pfi = 1;
  assert_int_equal(pfi_jobset_estimate(&js, &o, est, &err), 0);
  ASSERT_NEAR(est[3], 5.0, 1e-12);
  /* The allocation inputs: moe-ft-weighted flags and the mix's counts. */
  struct pfi_jobset_inputs ai;
  assert_int_equal(pfi_jobset_inputs_build(&js, 1u << PFI_STRAT_MOE_FT_WEIGHTED,
                                           0, NULL, &ai, &err),
                   0);
  ASSERT_EQ_INT(ai.moe_ft[0] + ai.moe_ft[1] * 2 + ai.moe_ft[2] * 4 +
                    ai.moe_ft[3] * 8,
                12);
  assert_null(ai.pfi);
  pfi_jobset_inputs_release(&ai);
  /* d has no GPU count: a mix cannot weigh it. */
  assert_int_equal(pfi_jobset_inputs_build(&js, 0, 1, NULL, &ai, &err),
                   PFI_ENOTFOUND);
  pfi_jobset_inputs_release(&ai);
  pfi_jobset_release(&js);
}

static void test_population(void **state) {
  (void)state;
  char path[4096];
  struct pfi_error err;
  assert_int_equal(pfi_data_default("paper/h200_headline_groups.csv", path,
                                    sizeof path) != NULL,
                   1);
  struct pfi_table t;
  assert_int_equal(pfi_table_load(&t, path, &err), 0);
  int gc = pfi_table_find(&t, "group");
  const char *ids[40];
  size_t n = 0;
  for (size_t r = 0; r < t.nrows; r++)
    ids[n++] = pfi_table_cell(&t, r, (size_t)gc);
  ASSERT_EQ_INT(n, 25);
  struct pfi_population p;
  assert_int_equal(pfi_population_of(ids, 25, &p, &err), 0);
  assert_true(p.paper);
  assert_int_equal(pfi_population_of(ids, 24, &p, &err), 0);
  assert_false(p.paper);
  ASSERT_EQ_INT(p.headline, 24);
  ids[25] = "dense-ft-mistral24b-x8"; /* a held-out group */
  assert_int_equal(pfi_population_of(ids, 26, &p, &err), 0);
  assert_false(p.paper);
  ASSERT_EQ_INT(p.other, 1);
  char buf[160];
  assert_string_equal(pfi_population_describe(&p, buf, sizeof buf),
                      "26 jobs, 1 of them not among the paper's 25 H200 "
                      "headline groups");
  ids[24] = ids[0]; /* 25 ids, one twice */
  assert_int_equal(pfi_population_of(ids, 25, &p, &err), 0);
  assert_false(p.paper);
  pfi_table_release(&t);
}

/* The job set's PFI under the data's own noise, as pfi index takes it.
 * Simulated sweeps of known noise: four jobs drawing far under every cap
 * (no cap binds them), each measured at two caps whose log power differs
 * by 0.04 and log throughput by 0.06: the pooled scatter of log values is
 * sqrt(4 x 2 x 0.02^2 / 4) = 0.02 sqrt 2 of power and 0.03 sqrt 2 of
 * throughput, 4 degrees of freedom. Job j loses 5 % of throughput for
 * 32.14 % of power: within twice the noise of its loss (0.95 x sqrt 2 x
 * 0.0424 = 0.057), so undefined at the data's noise; PFI 0.3214 / 0.05 =
 * 6.43 at the paper's 0.05 %. Job k loses 40 % for 46.43 %: PFI 1.1607 at
 * either. The same file labelled emulated takes the paper's noise. */
static void test_noise(void **state) {
  (void)state;
  char buf[2048];
  int w = snprintf(buf, sizeof buf, "job,cap_w,power_w,tokens_per_s\n");
  for (int u = 0; u < 4; u++)
    w += snprintf(buf + w, sizeof buf - (size_t)w,
                  "u%d,300,100,50\nu%d,400,%.17g,%.17g\n", u, u,
                  100 * exp(0.04), 50 * exp(0.06));
  snprintf(buf + w, sizeof buf - (size_t)w,
           "j,200,190,95\nj,300,280,100\nk,200,150,60\nk,300,280,100\n");
  struct pfi_jobset js;
  struct pfi_error err;
  assert_int_equal(pfi_jobset_load(&js, put("n.csv", buf), NULL, NULL, &err),
                   0);
  ASSERT_EQ_INT(js.noise.source, PFI_NOISE_UNBOUND);
  ASSERT_EQ_INT(js.noise.dof, 4);
  ASSERT_NEAR(js.noise.rel_sd_power, 0.02 * sqrt(2.0), 1e-12);
  ASSERT_NEAR(js.noise.rel_sd_tokens, 0.03 * sqrt(2.0), 1e-12);
  ASSERT_EQ_INT(js.pfi_ok[4], 0);
  ASSERT_EQ_INT(js.pfi_why[4], PFI_UNDEF_NO_LOSS);
  ASSERT_EQ_INT(js.pfi_ok[5], 1);
  ASSERT_NEAR(js.true_pfi[5], (1 - 150.0 / 280) / 0.4, 1e-12);
  char note[400];
  ASSERT_EQ_INT(pfi_jobset_undefined_note(&js, note, sizeof note), 5);
  if (!strstr(note, "; noise 2.83 % of power, 4.24 % of throughput (points "
                    "the cap cannot bind, 4 degrees of freedom)"))
    fail_msg("note without the noise: %s", note);
  /* A subset keeps the set's noise. */
  unsigned char keep[6] = {0, 0, 0, 0, 1, 1};
  struct pfi_jobset sub;
  assert_int_equal(pfi_jobset_subset(&js, keep, &sub, &err), 0);
  ASSERT_NEAR(sub.noise.rel_sd_tokens, js.noise.rel_sd_tokens, 0);
  pfi_jobset_release(&sub);
  /* --noise P,T: percentages from 0 to 100. */
  struct pfi_noise g;
  assert_int_equal(pfi_noise_parse("2,3.5", &g, &err), 0);
  ASSERT_EQ_INT(g.source, PFI_NOISE_GIVEN);
  ASSERT_NEAR(g.rel_sd_power, 0.02, 1e-15);
  ASSERT_NEAR(g.rel_sd_tokens, 0.035, 1e-15);
  static const char *const bad[] = {"nan,1", "1",  "1,2,3", "101,1", "-1,2",
                                    "1,inf", ",1", "1,",    ""};
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
    if (pfi_noise_parse(bad[b], &g, &err) != PFI_EINVAL)
      fail_msg("--noise '%s' accepted", bad[b]);
  /* --noise: the paper's noise, given. */
  struct pfi_noise paper;
  pfi_noise_paper(&paper);
  assert_int_equal(pfi_jobset_set_noise(&js, &paper, &err), 0);
  ASSERT_EQ_INT(js.pfi_ok[4], 1);
  ASSERT_NEAR(js.true_pfi[4], (1 - 190.0 / 280) / 0.05, 1e-9);
  ASSERT_NEAR(js.true_pfi[5], (1 - 150.0 / 280) / 0.4, 1e-12);
  pfi_jobset_release(&js);
  /* Emulated: the emulator's noise is the paper's. */
  char *e = strstr(buf, "\n");
  assert_non_null(e);
  char ebuf[2300];
  w = snprintf(ebuf, sizeof ebuf, "job,cap_w,power_w,tokens_per_s,source\n");
  for (const char *q = e + 1; *q;) {
    const char *nl = strchr(q, '\n');
    w += snprintf(ebuf + w, sizeof ebuf - (size_t)w, "%.*s,emulated\n",
                  (int)(nl - q), q);
    q = nl + 1;
  }
  assert_int_equal(pfi_jobset_load(&js, put("ne.csv", ebuf), NULL, NULL, &err),
                   0);
  ASSERT_EQ_INT(js.noise.source, PFI_NOISE_PAPER);
  ASSERT_EQ_INT(js.pfi_ok[4], 1);
  ASSERT_NEAR(js.true_pfi[4], (1 - 190.0 / 280) / 0.05, 1e-9);
  pfi_jobset_release(&js);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_join), cmocka_unit_test(test_provenance),
      cmocka_unit_test(test_gpus),      cmocka_unit_test(test_clusters),
      cmocka_unit_test(test_estimates), cmocka_unit_test(test_population),
      cmocka_unit_test(test_noise),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
