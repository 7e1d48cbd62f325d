/* SPDX-License-Identifier: GPL-3.0-or-later */
/* One cap per job, for a job spanning nodes (docs/control.md "One cap per
 * job"): a synchronous job steps at its slowest GPU's pace, so every GPU of
 * the job gets the same cap at each decision. A plant of 6 GPUs of 200-700
 * W: job "mn" on GPUs 0,1 (node A) and 2,3 (node B), job "solo" on 4,5.
 * Each GPU's own pace is its draw at its cap (0.99 of it, at most 500 W
 * uncapped); job mn runs at the slowest of its four, the others wait and
 * draw their pace plus a fifth of what they could draw above it (the time
 * spent waiting at the barrier); its throughput is 2000 (1 - (1 - x)^2.5)
 * tokens/s, x its pace over 500 W; solo's 1000 (1 - (1 - x)^3.5). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/control.h"
#include "testutil.h"

#define NG 6
#define U 500.0 /* a GPU's uncapped draw, W */

struct mplant {
  double cap[NG];
  int silent_b; /* 1: node B's GPUs (2, 3) send nothing */
  struct pfi_ctl *ctl;
  struct pfi_ctl_gpu_obs go[NG];
  struct pfi_ctl_job_obs jo[2];
  struct pfi_ctl_output out;
};

static double own(const struct mplant *p, int g) {
  double d = 0.99 * p->cap[g];
  return d < U ? d : U;
}

static double pace_mn(const struct mplant *p) {
  double m = INFINITY;
  for (int g = 0; g < 4; g++)
    if (own(p, g) < m)
      m = own(p, g);
  return m;
}

static double draw(const struct mplant *p, int g) {
  if (g >= 4)
    return own(p, g);
  double pace = pace_mn(p);
  return pace + 0.2 * (own(p, g) - pace);
}

static void mopen(struct mplant *p, double cap_b) {
  struct pfi_error err;
  double mn[NG], mx[NG];
  memset(p, 0, sizeof *p);
  for (int g = 0; g < NG; g++) {
    mn[g] = 200;
    mx[g] = 700;
    p->cap[g] = g == 2 || g == 3 ? cap_b : 700;
  }
  assert_int_equal(pfi_ctl_open(&p->ctl, NULL, NG, mn, mx, &err), 0);
  size_t g_mn[4] = {0, 1, 2, 3}, g_solo[2] = {4, 5};
  struct pfi_ctl_job a = {.id = "mn", .ngpus = 4, .gpu = g_mn, .pfi = NAN,
                          .pfi_lo = NAN, .pfi_hi = NAN, .max_loss = 1.0,
                          .pmax_w = NAN, .tmax = NAN};
  struct pfi_ctl_job b = a;
  b.id = "solo";
  b.ngpus = 2;
  b.gpu = g_solo;
  assert_int_equal(pfi_ctl_job_add(p->ctl, &a, &err), 0);
  assert_int_equal(pfi_ctl_job_add(p->ctl, &b, &err), 1);
}

/* One period: the plant's readings at the caps in force, then the
 * controller's caps put in force. Returns the realized draw. */
static double mstep(struct mplant *p, double t, int event, double target) {
  struct pfi_error err;
  double total = 0;
  for (int g = 0; g < NG; g++) {
    p->go[g].valid = !(p->silent_b && (g == 2 || g == 3));
    p->go[g].power_w = draw(p, g);
    p->go[g].cap_w = p->cap[g];
    total += draw(p, g);
  }
  double x = pace_mn(p) / U, y = (own(p, 4) + own(p, 5)) / (2 * U);
  p->jo[0] = (struct pfi_ctl_job_obs){.valid = 1, .phase = PFI_PHASE_TRAINING,
                                      .tokens_per_s = 2000 * (1 - pow(1 - x, 2.5))};
  p->jo[1] = (struct pfi_ctl_job_obs){.valid = 1, .phase = PFI_PHASE_TRAINING,
                                      .tokens_per_s = 1000 * (1 - pow(1 - y, 3.5))};
  struct pfi_ctl_input in = {.t_s = t, .event = event, .event_id = "ev",
                             .target_w = target, .gpu = p->go, .job = p->jo,
                             .baseline_w = NAN, .event_start_s = NAN,
                             .event_end_s = NAN};
  if (pfi_ctl_step(p->ctl, &in, &p->out, &err) != 0)
    fail_msg("step at %g: %s", t, err.msg);
  for (int g = 0; g < NG; g++)
    p->cap[g] = p->out.cap_w[g];
  return total;
}

/* The caps the controller gave job mn's four GPUs are one (1e-9 W). */
static void assert_one_cap(const struct mplant *p, double t) {
  for (int g = 1; g < 4; g++)
    if (fabs(p->out.cap_w[g] - p->out.cap_w[0]) > 1e-9)
      fail_msg("t %g: mn's GPUs at %g %g %g %g W", t, p->out.cap_w[0],
               p->out.cap_w[1], p->out.cap_w[2], p->out.cap_w[3]);
}

/* Node B's GPUs held at 450 W by their operator, node A's at 700 W: the
 * job runs at B's pace (445.5 W a GPU), A's GPUs draw 456.4 W (445.5 +
 * 0.2 x 54.5) while waiting. Node B falls silent, and an event starts
 * (its target above the fleet's draw): the job is held (a GPU unheard),
 * yet from the event's first period all four GPUs are at one cap, 450 W:
 * A's come down to B's, a cut at no cost to the job (its pace and
 * throughput unchanged) that frees the 2 x 10.9 W A's GPUs drew above the
 * pace. B heard again, they stay together. After the event every GPU is
 * back at its own limit (A 700, B 450). Before, A's GPUs stayed at 700 W
 * for as long as the job was held: its caps were equalized only by a
 * decision of the allocation, which a held job does not get. */
static void test_equal_at_start(void **state) {
  (void)state;
  struct mplant p;
  mopen(&p, 450);
  double before = 0;
  for (int t = 1; t <= 60; t++)
    before = mstep(&p, t, 0, NAN);
  double tput0 = p.jo[0].tokens_per_s;
  p.silent_b = 1;
  for (int t = 61; t <= 120; t++) {
    if (t == 80)
      p.silent_b = 0;
    mstep(&p, t, 1, 1.2 * before);
    assert_one_cap(&p, t);
    if (p.out.cap_w[0] > 450 + 1e-9)
      fail_msg("t %d: mn at %g W, above its slowest GPU's 450 W", t,
               p.out.cap_w[0]);
  }
  double during = mstep(&p, 121, 1, 1.2 * before);
  assert_one_cap(&p, 121);
  assert_true(fabs(p.jo[0].tokens_per_s - tput0) < 1e-9 * tput0);
  /* A's two GPUs no longer wait above the pace: 2 x 0.2 x (500 - 445.5). */
  assert_true(fabs((before - during) - 2 * 0.2 * (U - 445.5)) < 1e-6);
  int t = 122;
  for (; t < 122 + 1000; t++) {
    mstep(&p, t, 0, NAN);
    if (!p.out.recovering)
      break;
    assert_one_cap(&p, t);
  }
  assert_false(p.out.recovering);
  const double want[NG] = {700, 700, 450, 450, 700, 700};
  for (int g = 0; g < NG; g++)
    if (fabs(p.cap[g] - want[g]) > 1e-9)
      fail_msg("after the event GPU %d at %g W, expected %g W", g, p.cap[g],
               want[g]);
  pfi_ctl_close(p.ctl);
}

/* An event at 80 % of the fleet's draw: job mn is cut, its four GPUs at
 * one cap at every period. Node B goes silent and the target falls to 65
 * %: mn is held where it is on both nodes (node A too: cutting A alone
 * would leave the job at B's pace, A's GPUs waiting, and raising A would
 * do nothing), solo takes the cut; B back, mn moves again, its GPUs
 * together, to under where it was held. After the event the recovery
 * raises mn's four GPUs together, back to 700 W. */
static void test_hold_silent(void **state) {
  (void)state;
  struct mplant p;
  mopen(&p, 700);
  double base = 0;
  for (int t = 1; t <= 60; t++)
    base = mstep(&p, t, 0, NAN);
  int t = 61;
  for (; t <= 120; t++) {
    mstep(&p, t, 1, 0.8 * base);
    assert_one_cap(&p, t);
  }
  double held = p.cap[0];
  assert_true(held < 700 - 5);
  double solo0 = p.cap[4];
  p.silent_b = 1;
  for (; t <= 140; t++) {
    mstep(&p, t, 1, 0.65 * base);
    for (int g = 0; g < 4; g++)
      if (fabs(p.out.cap_w[g] - held) > 1e-9)
        fail_msg("t %d, node B silent: mn's GPU %d at %g W, held at %g W", t,
                 g, p.out.cap_w[g], held);
  }
  assert_true(p.cap[4] < solo0 - 5); /* solo took the cut */
  p.silent_b = 0;
  for (; t <= 200; t++) {
    mstep(&p, t, 1, 0.65 * base);
    assert_one_cap(&p, t);
  }
  assert_true(p.cap[0] < held - 5);
  for (; t < 1200; t++) {
    mstep(&p, t, 0, NAN);
    if (!p.out.recovering)
      break;
    assert_one_cap(&p, t);
  }
  assert_false(p.out.recovering);
  for (int g = 0; g < NG; g++)
    assert_true(fabs(p.cap[g] - 700) < 1e-9);
  pfi_ctl_close(p.ctl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal_at_start),
      cmocka_unit_test(test_hold_silent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
