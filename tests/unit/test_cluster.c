/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The emulated cluster (cluster.h): the step response of realized power
 * against the closed form of a dead time and a first-order lag with the
 * fitted constants; the same seed giving the same readings; jobs drawn
 * out of sample; the emulator's telemetry fields with noise of their own;
 * cluster files and targets parsed, with errors naming file and line;
 * the trainers' announcements, exact and with an error.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/cluster.h"
#include "testutil.h"

static void one_job(struct pfi_cluster_config *cc) {
  pfi_cluster_config_init(cc);
  cc->nodes = 1;
  cc->gpus_per_node = 8;
  cc->fill = 1;
  cc->faults = 0;
  cc->eval_s = 0;
  cc->ckpt_s = 0;
  cc->job_hours = 1000;
}

static double step_sum(struct pfi_cluster *cl, double cap, double dt) {
  double caps[8];
  struct pfi_cluster_obs o;
  for (int g = 0; g < 8; g++)
    caps[g] = cap;
  assert_int_equal(pfi_cluster_step(cl, caps, dt, &o, NULL), 0);
  return o.power_w;
}

/* Mean over a period of length T of x(t) = S + (L - S) e^{-(t - d)/tau}
 * for t >= d, L before: worked from the integral by hand. */
static double lag_mean(double L, double S, double T, double d, double tau) {
  if (T <= d)
    return L;
  return S + (L - S) * (d + tau * (1 - exp(-(T - d) / tau))) / T;
}

static void test_step_response(void **state) {
  (void)state;
  struct pfi_cluster_config cc;
  struct pfi_cluster *cl;
  struct pfi_error err;
  one_job(&cc);
  assert_int_equal(pfi_cluster_open(&cl, &cc, NULL, 3600, &err), 0);
  const double dt = 0.05;
  double L = 0, S = 0;
  for (int k = 0; k < 60; k++) {
    double p = step_sum(cl, 700, dt);
    if (k >= 50)
      L += p / 10;
  }
  double down = step_sum(cl, 300, dt);
  for (int k = 0; k < 59; k++) {
    double p = step_sum(cl, 300, dt);
    if (k >= 49)
      S += p / 10;
  }
  assert_true(L - S > 1000); /* the cap binds: a real step */
  /* Tolerance 40 W: four standard deviations of a sum of eight readings
   * (0.73 % each) plus those of the two 10-period means. */
  ASSERT_NEAR(
      down,
      lag_mean(L, S, dt, PFI_CLUSTER_DOWN_DELAY_S, PFI_CLUSTER_DOWN_TAU_S), 40);
  /* Increase: dead time 0.090 s spans the first period and 0.040 s of the
   * second. */
  double u1 = step_sum(cl, 700, dt), u2 = step_sum(cl, 700, dt);
  double u3 = step_sum(cl, 700, dt);
  double tau = PFI_CLUSTER_UP_TAU_S, d2 = PFI_CLUSTER_UP_DELAY_S - dt;
  ASSERT_NEAR(u1, S, 40);
  ASSERT_NEAR(u2, lag_mean(S, L, dt, d2, tau), 40);
  double end2 = L + (S - L) * exp(-(dt - d2) / tau);
  ASSERT_NEAR(u3, lag_mean(end2, L, dt, 0, tau), 40);
  pfi_cluster_close(cl);
}

static void test_same_seed(void **state) {
  (void)state;
  struct pfi_cluster_config cc;
  pfi_cluster_config_init(&cc);
  cc.nodes = 4;
  double a[300], b[300];
  for (int run = 0; run < 2; run++) {
    struct pfi_cluster *cl;
    assert_int_equal(pfi_cluster_open(&cl, &cc, NULL, 600, NULL), 0);
    double caps[32];
    for (int k = 0; k < 300; k++) {
      for (int g = 0; g < 32; g++)
        caps[g] = 200 + (k * 7 + g * 13) % 500;
      struct pfi_cluster_obs o;
      assert_int_equal(pfi_cluster_step(cl, caps, 1.0, &o, NULL), 0);
      (run ? b : a)[k] = o.power_w;
    }
    pfi_cluster_close(cl);
  }
  assert_memory_equal(a, b, sizeof a);
}

/* cold_start = 1: every job running at t = 0 starts then (start_s 0), in
 * its start-up (150 s) for the first periods; ckpt_wave_s = 400 (45 s
 * checkpoints every 2400 s): every job reports a pause through the wave
 * (periods ending at 401..445 s, the checkpoint's first 45 s) and trains
 * just before and after it (the evaluations off). */
static void test_cold_start_wave(void **state) {
  (void)state;
  struct pfi_cluster_config cc;
  pfi_cluster_config_init(&cc);
  cc.nodes = 4;
  cc.fill = 1;
  cc.faults = 0;
  cc.eval_s = 0;
  cc.job_hours = 1000;
  assert_int_equal(pfi_cluster_config_set(&cc, "cold_start", "1", NULL), 0);
  assert_int_equal(pfi_cluster_config_set(&cc, "ckpt_wave_s", "400", NULL), 0);
  struct pfi_cluster *cl;
  assert_int_equal(pfi_cluster_open(&cl, &cc, NULL, 600, NULL), 0);
  size_t n0 = pfi_cluster_njobs_total(cl);
  assert_true(n0 > 0);
  for (size_t i = 0; i < n0; i++)
    ASSERT_NEAR(pfi_cluster_job_at(cl, (int)i)->start_s, 0, 0);
  double caps[32];
  for (int g = 0; g < 32; g++)
    caps[g] = 700;
  for (int k = 1; k <= 460; k++) {
    struct pfi_cluster_obs o;
    assert_int_equal(pfi_cluster_step(cl, caps, 1.0, &o, NULL), 0);
    for (size_t i = 0; i < o.njobs; i++) {
      int want = k <= 150               ? PFI_PHASE_STARTUP
                 : k > 401 && k <= 445  ? PFI_PHASE_PAUSE
                 : k >= 390 && k <= 400 ? PFI_PHASE_TRAINING
                 : k >= 450             ? PFI_PHASE_TRAINING
                                        : -9;
      if (want != -9 && o.phase[i] != want)
        fail_msg("t = %d s: job %d in phase %d, expected %d", k, o.job[i],
                 o.phase[i], want);
    }
  }
  pfi_cluster_close(cl);
  assert_int_not_equal(pfi_cluster_config_set(&cc, "cold_start", "2", NULL), 0);
}

/* Drawn jobs are in no library file: their four calibrated parameters
 * match no library entry. */
static void test_out_of_sample(void **state) {
  (void)state;
  struct pfi_cluster_config cc;
  struct pfi_cluster *cl;
  struct pfi_emu_jobs lib;
  pfi_cluster_config_init(&cc);
  cc.nodes = 16;
  assert_int_equal(pfi_cluster_open(&cl, &cc, NULL, 3600, NULL), 0);
  assert_int_equal(pfi_emu_jobs_load(&lib, NULL, NULL), 0);
  size_t n = pfi_cluster_njobs_total(cl);
  assert_true(n >= 4);
  for (size_t i = 0; i < n; i++) {
    const struct pfi_cluster_job *j = pfi_cluster_job_at(cl, (int)i);
    assert_int_equal(j->library, 0);
    assert_true(isfinite(j->pfi_est) && j->pfi_lo <= j->pfi_est &&
                j->pfi_est <= j->pfi_hi);
    assert_true(j->pmax_w > 0 && j->tmax > 0);
    for (size_t k = 0; k < lib.n; k++)
      assert_false(j->params.mem_share == lib.job[k].mem_share &&
                   j->params.comm_share == lib.job[k].comm_share &&
                   j->params.sm_power_w == lib.job[k].sm_power_w);
  }
  pfi_emu_jobs_release(&lib);
  pfi_cluster_close(cl);
}

static double corr(const double *x, const double *y, int n) {
  double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  for (int i = 0; i < n; i++) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  for (int i = 0; i < n; i++) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / sqrt(sxx * syy);
}

/* The emulator's telemetry: NVLink tx and rx, PCIe tx and rx, and GPU
 * utilization each with noise of their own (no copies, no affine
 * function): over 300 training samples, tx and rx differ in every sample
 * and the sample-to-sample correlations are small (|r| < 0.3; for 300
 * independent samples |r| > 0.3 has probability below 1e-7). */
static void test_telemetry_fields(void **state) {
  (void)state;
  struct pfi_emu_jobs lib;
  assert_int_equal(pfi_emu_jobs_load(&lib, NULL, NULL), 0);
  struct pfi_emu_run *run = malloc(sizeof *run);
  double caps[PFI_EMU_MAX_GPUS];
  for (int r = 0; r < PFI_EMU_MAX_GPUS; r++)
    caps[r] = 700;
  assert_int_equal(pfi_emu_run_init(run, &lib.job[0], caps, 1, NULL), 0);
  double ntx[300], nrx[300], ptx[300], prx[300], util[300];
  for (int i = 0; i < 300; i++) {
    struct pfi_sample s;
    pfi_emu_run_sample(run, 0, 300.0 + i, &s, NULL, NULL);
    ntx[i] = s.v[PFI_FIELD_NVLINK_TX];
    nrx[i] = s.v[PFI_FIELD_NVLINK_RX];
    ptx[i] = s.v[PFI_FIELD_PCIE_TX];
    prx[i] = s.v[PFI_FIELD_PCIE_RX];
    util[i] = s.v[PFI_FIELD_GPU_UTIL];
    assert_true(ntx[i] != nrx[i]);
    assert_true(ptx[i] != prx[i]);
  }
  assert_true(fabs(corr(ntx, nrx, 300)) < 0.3);
  assert_true(fabs(corr(ptx, prx, 300)) < 0.3);
  assert_true(fabs(corr(util, prx, 300)) < 0.3);
  free(run);
  pfi_emu_jobs_release(&lib);
}

static void test_parse(void **state) {
  (void)state;
  struct pfi_cluster_config cc;
  struct pfi_error err;
  pfi_cluster_config_init(&cc);
  assert_int_equal(
      pfi_cluster_config_read(&cc, "nodes=4, gpus_per_node=8", &err), 0);
  assert_int_equal(cc.nodes, 4);
  assert_int_equal(pfi_cluster_config_read(&cc, "nodes=0", &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "nodes"));
  char path[] = "/tmp/pfi-cluster-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("# a cluster\nnodes = 2\n\nprofile = h100\nbogus = 1\n", f);
  fclose(f);
  assert_int_equal(pfi_cluster_config_read(&cc, path, &err), PFI_EPARSE);
  assert_int_equal(err.line, 5);
  assert_non_null(strstr(err.msg, "bogus"));
  /* Targets: a share with a ramp (linear, by hand), a power, a timeline. */
  struct pfi_event ev;
  assert_int_equal(pfi_event_parse(&ev, "75%", 100, 60, 600, &err), 0);
  assert_true(isnan(pfi_event_target(&ev, 99, 1000)));
  ASSERT_NEAR(pfi_event_target(&ev, 130, 1000), 875, 1e-9);
  ASSERT_NEAR(pfi_event_target(&ev, 200, 1000), 750, 1e-9);
  assert_true(isnan(pfi_event_target(&ev, 760, 1000)));
  pfi_event_release(&ev);
  assert_int_equal(pfi_event_parse(&ev, "300kW", 0, 0, 10, &err), 0);
  ASSERT_NEAR(pfi_event_target(&ev, 5, 1e6), 300000, 1e-9);
  pfi_event_release(&ev);
  f = fopen(path, "w");
  fputs("# start ramp hold target\n30 10 100 80%\n", f);
  fclose(f);
  assert_int_equal(pfi_event_parse(&ev, path, 0, 0, 1, &err), 0);
  ASSERT_NEAR(pfi_event_target(&ev, 35, 1000), 900, 1e-9);
  ASSERT_NEAR(pfi_event_end(&ev), 140, 1e-9);
  pfi_event_release(&ev);
  f = fopen(path, "w");
  fputs("30 10 100\n", f);
  fclose(f);
  assert_int_equal(pfi_event_parse(&ev, path, 0, 0, 1, &err), PFI_EPARSE);
  assert_int_equal(err.line, 1);
  assert_int_equal(pfi_event_parse(&ev, "3.5", 0, 0, 1, &err), PFI_EINVAL);
  /* The fuzzer's "8...881 1 1" (100 digits): sscanf cut the number into two
   * fields (start 8.9e62, ramp 8.9e36), the ramp and hold vanished below
   * the start's rounding and the target was NaN mid-event. A field that
   * long is refused, and so is a timeline longer than ten years. */
  f = fopen(path, "w");
  for (int i = 0; i < 99; i++)
    fputc('8', f);
  fputs("1 1 1\n", f);
  fclose(f);
  assert_int_equal(pfi_event_parse(&ev, path, 0, 0, 1, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "longer than 62"));
  f = fopen(path, "w");
  fputs("1e62 1e36 1 75%\n", f);
  fclose(f);
  assert_int_equal(pfi_event_parse(&ev, path, 0, 0, 1, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "ten years"));
  assert_int_equal(pfi_event_parse(&ev, "75%", 1e62, 1, 1, &err), PFI_EINVAL);
  /* A power trace: timestamps with seconds and a zone are read to the
   * minute (14:40:30 is 30 s after 14:40:00); a date run into its time
   * ("2025-05-0414:45") is a located error, not a crash. */
  char spec[64];
  snprintf(spec, sizeof spec, "trace:%s", path);
  f = fopen(path, "w");
  fputs("timestamp,total\n2025-05-04 14:40:00-07:00,1000\n"
        "2025-05-04 14:40:30-07:00,500\n",
        f);
  fclose(f);
  assert_int_equal(pfi_event_parse(&ev, spec, 0, 0, 1, &err), 0);
  assert_int_equal(ev.n, 2);
  ASSERT_NEAR(ev.t_s[1], 30, 1e-9);
  pfi_event_release(&ev);
  f = fopen(path, "w");
  fputs("timestamp,total\n2025-05-04 14:40:00,1000\n2025-05-0414:45:00,900\n",
        f);
  fclose(f);
  assert_int_equal(pfi_event_parse(&ev, spec, 0, 0, 1, &err), PFI_EPARSE);
  assert_int_equal(err.line, 3);
  assert_int_equal(err.column, 1);
  unlink(path);
}

/* The event's first period. Two nodes whose jobs evaluate 150 s of every
 * 400 s (at 85 % activity): on seed 3 the cluster at the event's start
 * (t = 300 s) draws more than 5 % above the median of the 300 pre-event
 * periods (the baseline, the ramp's first target). The baseline must be known
 * at the end of the last pre-event period and the event passed to the
 * controller in that period, so that the caps in force during the event's first
 * period are already cut: that period's power at most the target + 1 % (it ran
 * uncapped when the baseline came one period late). The baseline is
 * checked against the median of the callback's pre-event readings. */
struct first_ctx {
  double pre[300];
  size_t npre;
  double p_first, t_first;
};

static int first_cb(void *ctx, double t_s, double target_w, double realized_w,
                    const struct pfi_ctl_output *out, struct pfi_error *err) {
  (void)out;
  (void)err;
  struct first_ctx *f = ctx;
  if (t_s <= 300 + 1e-9 && f->npre < 300)
    f->pre[f->npre++] = realized_w;
  if (fabs(t_s - 301) < 1e-9) {
    f->p_first = realized_w;
    f->t_first = target_w;
  }
  return 0;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void test_event_first_period(void **state) {
  (void)state;
  struct pfi_cluster_config cc;
  struct pfi_event ev;
  struct pfi_run_result res;
  struct pfi_error err;
  one_job(&cc);
  cc.nodes = 2;
  cc.eval_every_s = 400;
  cc.eval_s = 150;
  cc.seed = 3;
  assert_int_equal(pfi_event_parse(&ev, "75%", 300, 60, 600, &err), 0);
  struct first_ctx f = {.npre = 0};
  assert_int_equal(pfi_run_closed_loop(&cc, NULL, NULL, &ev, 60,
                                       PFI_RUN_CONTROLLER, first_cb, &f, &res,
                                       &err),
                   0);
  assert_int_equal(f.npre, 300);
  double p_start = f.pre[299]; /* the period ending at the event's start */
  qsort(f.pre, 300, sizeof *f.pre, cmp_dbl);
  double med = 0.5 * (f.pre[149] + f.pre[150]);
  ASSERT_NEAR(res.baseline_w, med, 1e-9 * med);
  /* The case under test: at the start the cluster is above the first
   * target by more than the band. */
  assert_true(p_start > 1.05 * med);
  ASSERT_NEAR(f.t_first, med, 1e-9 * med);
  if (!(f.p_first <= 1.01 * f.t_first))
    fail_msg("first event period at %g W, target %g W", f.p_first, f.t_first);
  pfi_event_release(&ev);
}

/* Announcements (announce_s 10): each job's announced pause start,
 * t_s + pause_in, against the period its trainer first reports the pause
 * in, (t - 1, t]. Exact (announce_err_s 0): within that period. Off by up
 * to E = 3 s (announce_err_s 3): within E of it, one start per pause
 * through its countdown (one draw per pause), some more than 0.5 s off
 * (the errors are drawn, not zero), the same for the same seed. Returns
 * the number of pauses checked; *spread the largest |error| seen. */
#define ANN_MAXJ 64
static int announce_run(double err_s, double *starts, int nstarts,
                        double *spread) {
  struct pfi_cluster_config cc;
  one_job(&cc);
  cc.eval_every_s = 300;
  cc.eval_s = 30;
  cc.announce_s = 10;
  cc.announce_err_s = err_s;
  cc.seed = 5;
  struct pfi_cluster *cl;
  assert_int_equal(pfi_cluster_open(&cl, &cc, NULL, 3000, NULL), 0);
  double caps[8], ann[ANN_MAXJ];
  int prev[ANN_MAXJ], n = 0;
  for (int k = 0; k < ANN_MAXJ; k++) {
    ann[k] = NAN;
    prev[k] = -1;
  }
  for (int g = 0; g < 8; g++)
    caps[g] = 700;
  *spread = 0;
  for (int k = 0; k < 2400; k++) {
    struct pfi_cluster_obs o;
    assert_int_equal(pfi_cluster_step(cl, caps, 1.0, &o, NULL), 0);
    for (size_t r = 0; r < o.njobs; r++) {
      int id = o.job[r];
      assert_true(id >= 0 && id < ANN_MAXJ);
      if (o.phase[r] == PFI_PHASE_PAUSE && prev[id] == PFI_PHASE_TRAINING) {
        /* Its pause begins within (t - 1, t]. */
        if (!isfinite(ann[id]))
          fail_msg("job %d: a pause at %g not announced", id, o.t_s);
        double mid = o.t_s - 0.5, e = ann[id] - mid;
        if (!(fabs(e) <= 0.5 + err_s + 1e-9))
          fail_msg("job %d: announced %g, began in (%g, %g]", id, ann[id],
                   o.t_s - 1, o.t_s);
        if (fabs(e) > *spread)
          *spread = fabs(e);
        if (n < nstarts)
          starts[n] = ann[id];
        n++;
        ann[id] = NAN;
      }
      if (isfinite(o.pause_in[r])) {
        double at = o.t_s + o.pause_in[r];
        /* One start through the countdown (an estimate under 0 s is
         * announced as 0: from then on, the period's end). */
        if (isfinite(ann[id]) && o.pause_in[r] > 0 &&
            fabs(at - ann[id]) > 1e-6)
          fail_msg("job %d: announced start moved from %g to %g", id,
                   ann[id], at);
        if (!isfinite(ann[id]) || o.pause_in[r] > 0)
          ann[id] = at;
        assert_true(o.pause_len[r] == 30);
      }
      prev[id] = o.phase[r];
    }
  }
  pfi_cluster_close(cl);
  return n;
}

static void test_announce(void **state) {
  (void)state;
  double a[64], b[64], c[64], sp0, sp1, sp2;
  int n0 = announce_run(0, a, 64, &sp0);
  assert_true(n0 >= 5);
  int n1 = announce_run(3, b, 64, &sp1);
  int n2 = announce_run(3, c, 64, &sp2);
  assert_int_equal(n1, n0);
  assert_int_equal(n2, n1);
  assert_true(sp1 > 1.0); /* drawn: some start well off the true one */
  assert_memory_equal(b, c, (size_t)(n1 < 64 ? n1 : 64) * sizeof *b);
}

/* The oracle held to the tiers: with no tiered job it is the oracle
 * itself, token for token; with every job tiered (8 nodes, a 25 % cut
 * that the tiers leave feasible) it does strictly less. (Where the tiers
 * are not feasible it holds every job at its tier, above the target, as
 * the controller does.) */
static void test_oracle_tiers(void **state) {
  (void)state;
  struct pfi_event ev;
  struct pfi_error err;
  assert_int_equal(pfi_event_parse(&ev, "75%", 300, 60, 300, &err), 0);
  double tok[2], tokt[2];
  for (int k = 0; k < 2; k++) {
    struct pfi_cluster_config cc;
    struct pfi_run_result res;
    one_job(&cc);
    cc.nodes = 8;
    cc.tiered_share = k;
    assert_int_equal(pfi_run_closed_loop(&cc, NULL, NULL, &ev, 60,
                                         PFI_RUN_CONTROLLER, NULL, NULL, &res,
                                         &err),
                     0);
    tok[k] = res.tokens_oracle;
    tokt[k] = res.tokens_oracle_tiers;
    assert_true(tok[k] > 0);
  }
  assert_true(tokt[0] == tok[0]);
  assert_true(tokt[1] < tok[1]);
  pfi_event_release(&ev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_step_response),
      cmocka_unit_test(test_same_seed),
      cmocka_unit_test(test_cold_start_wave),
      cmocka_unit_test(test_out_of_sample),
      cmocka_unit_test(test_telemetry_fields),
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_event_first_period),
      cmocka_unit_test(test_oracle_tiers),
      cmocka_unit_test(test_announce),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
