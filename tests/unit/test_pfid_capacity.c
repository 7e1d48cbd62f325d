/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's live flexible capacity (src/fleet/pfid_capacity.c) on a fleet
 * built by hand: two nodes of 2 GPUs, job A (1000 W, 100 tokens/s, Flex
 * 10, whose tier allows events up to 3600 s) and job B (1000 W, 300
 * tokens/s, no tier), every GPU's lowest cap 200 W. Values worked by hand
 * as in unit.test_grid's test_flex_live: on straight-line curves (PFI 1)
 * the cheapest watts go first, A's 0.1 tokens/s per W up to its floor of
 * 900 W, then B's 0.3 per W. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "../../src/fleet/pfid_int.h"
#include "pfi/control.h"
#include "pfi/flexcap.h"

static void node(struct pfid_node *n, const char *name, const char *job,
                 double tput, double max_loss) {
  memset(n, 0, sizeof *n);
  snprintf(n->name, sizeof n->name, "%s", name);
  n->have_tel = 1;
  n->tel.n = 2;
  for (unsigned g = 0; g < 2; g++) {
    snprintf(n->tel.gpu[g].job, sizeof n->tel.gpu[g].job, "%s", job);
    n->tel.gpu[g].power_w = 500;
    n->tel.gpu[g].min_mw = 200000;
    n->tel.gpu[g].max_mw = 700000;
    n->tel.gpu[g].enforced_mw = 700000;
  }
  n->tel.n_jobs = 1;
  snprintf(n->tel.job[0].id, sizeof n->tel.job[0].id, "%s", job);
  n->tel.job[0].tokens_per_s = tput;
  n->tel.job[0].max_loss = max_loss;
}

static struct pfi_pfid *fleet(void) {
  struct pfi_pfid *d = calloc(1, sizeof *d);
  assert_non_null(d);
  d->node = calloc(2, sizeof *d->node);
  assert_non_null(d->node);
  d->n_nodes = d->cap_nodes = 2;
  node(&d->node[0], "n1", "A", 100, 0.10);
  node(&d->node[1], "n2", "B", 300, -1);
  d->cap_tier = calloc(1, sizeof *d->cap_tier);
  assert_non_null(d->cap_tier);
  d->n_cap_tier = 1;
  snprintf(d->cap_tier[0].name, sizeof d->cap_tier[0].name, "flex10");
  d->cap_tier[0].max_loss = 0.10;
  d->cap_tier[0].max_event_s = 3600;
  /* Estimates, sorted by job: A PFI 1 (its interval 1..1), B PFI 1 with
   * the interval's high end 2. */
  d->est = calloc(2, sizeof *d->est);
  assert_non_null(d->est);
  d->n_est = 2;
  d->est[0] = (struct pfi_flex_estimate){"A", 1.0, 1.0, 1.0};
  d->est[1] = (struct pfi_flex_estimate){"B", 1.0, 1.0, 2.0};
  return d;
}

static void fleet_free(struct pfi_pfid *d) {
  pfi_ctl_close(d->ctl);
  pfid_capacity_close(d);
  free(d->node);
  free(d);
}

static const double want_all[PFI_CAPACITY_NQUOTE] = {
    40, 80, 100 + 10 / 0.3, 100 + 30 / 0.3, 100 + 70 / 0.3};

static void check(const struct pfid_capacity *c) {
  assert_int_equal(c->njobs, 2);
  assert_int_equal(c->estimated, 2);
  ASSERT_NEAR(c->all.uncapped_w, 2000, 1e-6);
  /* Any event up to A's tier's 3600 s: both jobs may be cut. */
  ASSERT_NEAR(c->all.duration_s, 3600, 0);
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    ASSERT_NEAR(c->all.quote_w[k], want_all[k], 0.01 * want_all[k]);
    ASSERT_NEAR(c->all.quote_lo_w[k], want_all[k], 0.01 * want_all[k]);
    /* B's high end (PFI 2) keeps more throughput per watt cut. */
    assert_true(c->all.quote_hi_w[k] > c->all.quote_w[k] + 1);
  }
  /* Longer events: A held at 1000 W, B alone: q x 400 / 0.3 W, for any
   * length. */
  assert_int_equal(c->ndur, 1);
  assert_true(isinf(c->dur[0].duration_s));
  assert_int_equal(c->dur[0].eligible, 1);
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    double w = pfi_capacity_quotes[k] * 400 / 0.3;
    ASSERT_NEAR(c->dur[0].quote_w[k], w, 0.01 * w);
  }
  /* Tiers: A's (its floor 900 W, 3600 s) and none (B, floor 400 W). */
  assert_int_equal(c->ntiers, 2);
  ASSERT_NEAR(c->tier[0].max_loss, 0.10, 0);
  ASSERT_NEAR(c->tier[0].floor_w, 900, 1e-6);
  ASSERT_NEAR(c->tier[0].max_event_s, 3600, 0);
  ASSERT_NEAR(c->tier[1].max_loss, 1, 0);
  ASSERT_NEAR(c->tier[1].floor_w, 400, 1e-6);
}

/* Without the control module: the curves are the estimates' models. */
static void test_estimates(void **state) {
  (void)state;
  struct pfi_pfid *d = fleet();
  struct pfid_capacity c;
  struct pfi_error err;
  assert_int_equal(pfid_capacity(d, &c, &err), 0);
  assert_int_equal(c.believed, 0);
  check(&c);
  /* Without an estimate, B's curve is the prior (PFI 1.5) and its low
   * end PFI 1: the low quotes are the straight lines', the central ones
   * no lower. */
  d->n_est = 0;
  assert_int_equal(pfid_capacity(d, &c, &err), 0);
  assert_int_equal(c.estimated, 0);
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    ASSERT_NEAR(c.all.quote_lo_w[k], want_all[k], 0.01 * want_all[k]);
    assert_true(c.all.quote_w[k] >= c.all.quote_lo_w[k] - 1e-9);
  }
  /* Without a tier file: no bound on any event. */
  d->n_cap_tier = 0;
  assert_int_equal(pfid_capacity(d, &c, &err), 0);
  assert_true(isinf(c.all.duration_s));
  assert_int_equal(c.ndur, 0);
  fleet_free(d);
}

/* With the control module: each job's curve is its belief (its uncapped
 * point learned from uncapped periods, its prior the PFI 1 it was given:
 * the same straight lines), and the capacity is the same. pfid's estimate
 * of B is changed to PFI 1.5 after the module was given PFI 1: the
 * central quotes must stay the straight lines' (the belief, not the
 * estimate's model, is the central curve). */
static void test_belief(void **state) {
  (void)state;
  struct pfi_pfid *d = fleet();
  double lo[4] = {200, 200, 200, 200}, hi[4] = {700, 700, 700, 700};
  struct pfi_error err;
  assert_int_equal(pfi_ctl_open(&d->ctl, NULL, 4, lo, hi, &err), 0);
  size_t ga[2] = {0, 1}, gb[2] = {2, 3};
  struct pfi_ctl_job ja = {"A", NULL, 2,   ga,  1.0, 1.0, 1.0, 0.10,
                           0,   0,    NAN, NAN, 0,   0,   0};
  struct pfi_ctl_job jb = {"B", NULL, 2,   gb,  1.0, 1.0, 2.0, 1.0,
                           0,   0,    NAN, NAN, 0,   0,   0};
  int sa = pfi_ctl_job_add(d->ctl, &ja, &err);
  int sb = pfi_ctl_job_add(d->ctl, &jb, &err);
  assert_true(sa >= 0 && sb >= 0);
  struct pfi_ctl_gpu_obs go[4];
  for (int g = 0; g < 4; g++)
    go[g] = (struct pfi_ctl_gpu_obs){1, 500, 700};
  struct pfi_ctl_job_obs jo[8];
  memset(jo, 0, sizeof jo);
  jo[sa] = (struct pfi_ctl_job_obs){.valid = 1, .tokens_per_s = 100, .phase = -1};
  jo[sb] = (struct pfi_ctl_job_obs){.valid = 1, .tokens_per_s = 300, .phase = -1};
  for (int t = 1; t <= 20; t++) {
    struct pfi_ctl_input in = {t, 0, NULL, 0, go, jo, 0, 0, 0, 0, NULL, NULL};
    struct pfi_ctl_output out;
    assert_int_equal(pfi_ctl_step(d->ctl, &in, &out, &err), 0);
  }
  struct pfi_ctl_belief b;
  assert_int_equal(pfi_ctl_job_belief(d->ctl, sb, &b, &err), 0);
  ASSERT_NEAR(b.pmax_w, 1000, 1e-6);
  ASSERT_NEAR(b.tmax, 300, 1e-6);
  d->est[1].pfi = 1.5;
  struct pfid_capacity c;
  assert_int_equal(pfid_capacity(d, &c, &err), 0);
  assert_int_equal(c.believed, 2);
  check(&c);
  fleet_free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_estimates),
      cmocka_unit_test(test_belief),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
