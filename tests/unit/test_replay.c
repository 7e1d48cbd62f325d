/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Replay: timestamps against values computed independently (GNU date), the
 * target reader's errors at file:line:column, the automatic baseline, and
 * a two-job, three-step replay worked by hand.
 */
#include <stdlib.h>
#include <string.h>

#include "pfi/replay.h"
#include "testutil.h"

static void test_time_forms(void **state) {
  (void)state;
  struct pfi_error err;
  enum pfi_time_kind k;
  double t;
  size_t bad;
  /* `date -u -d "2025-05-04 21:40:00" +%s` = 1746394800: the file's
   * 14:40 at UTC-7. */
  assert_int_equal(
      pfi_time_parse("2025-05-04 14:40:00-07:00", &k, &t, &bad, &err), 0);
  assert_int_equal(k, PFI_TIME_DATETIME);
  ASSERT_NEAR(t, 1746394800.0, 0);
  /* The same instant written in UTC and with a compact offset. */
  assert_int_equal(pfi_time_parse("2025-05-04T21:40Z", &k, &t, &bad, &err), 0);
  ASSERT_NEAR(t, 1746394800.0, 0);
  assert_int_equal(
      pfi_time_parse(" 2025-05-05 03:10+0530 ", &k, &t, &bad, &err), 0);
  ASSERT_NEAR(t, 1746394800.0, 0);
  /* `date -u -d "2000-02-29 06:30:15.5" +%s.%N` = 951805815.5 (a leap
   * day). */
  assert_int_equal(pfi_time_parse("2000-02-29 06:30:15.5", &k, &t, &bad, &err),
                   0);
  ASSERT_NEAR(t, 951805815.5, 1e-6);
  assert_int_equal(pfi_time_parse("14:00", &k, &t, &bad, &err), 0);
  assert_int_equal(k, PFI_TIME_CLOCK);
  ASSERT_NEAR(t, 14 * 3600.0, 0);
  assert_int_equal(pfi_time_parse("0:05:30", &k, &t, &bad, &err), 0);
  ASSERT_NEAR(t, 330.0, 0);
  assert_int_equal(pfi_time_parse("90.25", &k, &t, &bad, &err), 0);
  assert_int_equal(k, PFI_TIME_SECONDS);
  ASSERT_NEAR(t, 90.25, 0);
}

static void test_time_errors(void **state) {
  (void)state;
  struct pfi_error err;
  enum pfi_time_kind k;
  double t;
  size_t bad;
  /* Each with the 0-based offset of the offending byte. */
  static const struct {
    const char *s;
    size_t at;
  } cases[] = {
      {"2025-02-29 00:00", 8},       /* not a leap year */
      {"2025-13-01 00:00", 5},       /* month */
      {"2025-05-04 24:00", 11},      /* hour */
      {"2025-05-04 14:60", 14},      /* minutes */
      {"2025-05-04", 10},            /* no time of day */
      {"2025-05-04 14:40:00-7", 21}, /* offset needs two digits */
      {"14:00x", 5},                 /* trailing garbage */
      {"1.", 2},                     /* no digits after '.' */
      {"-5", 0},                     /* negative seconds */
      {"", 0},
      {"1234567890123456", 15}, /* too many digits */
      {"14:5", 4},              /* minutes need two digits: the missing one */
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    bad = 999;
    if (pfi_time_parse(cases[c].s, &k, &t, &bad, &err) != PFI_EPARSE)
      fail_msg("'%s' parsed", cases[c].s);
    if (bad != cases[c].at)
      fail_msg("'%s': bad byte at %zu, expected %zu", cases[c].s, bad,
               cases[c].at);
  }
}

static void expect_load_error(const char *csv, long line, long col,
                              const char *needle) {
  struct pfi_target tg;
  struct pfi_error err;
  pfi_error_clear(&err);
  int rc =
      pfi_target_load_mem(&tg, "t.csv", csv, strlen(csv), NULL, NULL, &err);
  if (rc != PFI_EPARSE)
    fail_msg("'%s': rc %d, expected PFI_EPARSE", csv, rc);
  if (err.line != line || err.column != col)
    fail_msg("'%s': at %ld:%ld, expected %ld:%ld (%s)", csv, err.line,
             err.column, line, col, err.msg);
  if (!strstr(err.msg, needle))
    fail_msg("'%s': message '%s' lacks '%s'", csv, err.msg, needle);
}

static void test_target_errors(void **state) {
  (void)state;
  expect_load_error("timestamp,total\n14:00,5\n14:61,4\n", 3, 4, "minutes");
  expect_load_error("when,total\n14:00,5\n", 1, 0, "no time column");
  expect_load_error("time,watts\n14:00,5\n", 1, 0, "no power column");
  expect_load_error("time,total\n14:00,5\n14:01,-4\n", 3, 7, "negative");
  expect_load_error("time,total\n14:00,5\n14:00,4\n", 3, 1, "increasing");
  expect_load_error("time,total\n14:00,5\n60,4\n", 3, 1, "same form");
  expect_load_error("time,total\n14:00,5\n", 2, 0, "at least 2");
  expect_load_error("time,total\n", 1, 0, "at least 2");
  expect_load_error("time,total\n14:00,5\n14:01,abc\n", 3, 7, "power");
}

/*
 * Jobs: A (100 W, 100), (200 W, 150): slope 0.5; B (100, 100), (150, 140),
 * (200, 160): slopes 0.8, 0.4. Uncapped 400 W and 310 tokens/s, floors
 * 200 W. Baseline 1000 W; samples at t = 0, 60, 180 s of 1000, 800, 400 W:
 * cuts 0, 0.2, 0.6; budgets 400, 320, 160 W; durations 60, 120, 120 s.
 *  step 0: both uncapped, 310.
 *  step 1: oracle fills B's 0.8 segment (50 W) then 70 W of A's:
 *          A 170 W (135), B 150 W (140): 275. Equal: 160 W each:
 *          130 + 144 = 274.
 *  step 2: 160 W < 200 W of floors: infeasible by 40 W, both at their
 *          floors: 200 tokens/s, 200 W.
 * retained: oracle (60*310 + 120*275 + 120*200) / (300*310) = 75600/93000;
 * equal 75480/93000. Event steps (cut >= 5 %): 1 and 2, 240 s:
 * oracle 57000/74400, equal 56880/74400; mean cut 0.4.
 * Per job in the event, oracle: A (120*135 + 120*100)/(240*150) = 0.78333,
 * B (120*140 + 120*100)/(240*160) = 0.75; equal: A 27600/36000,
 * B (120*144 + 120*100)/38400. Energy 60*400 + 120*320 + 120*200 =
 * 86400 J for both.
 */
static void test_replay_by_hand(void **state) {
  (void)state;
  struct pfi_error err;
  struct pfi_problem p;
  pfi_problem_init(&p);
  double xa[] = {100, 200}, ya[] = {100, 150};
  double xb[] = {100, 150, 200}, yb[] = {100, 140, 160};
  assert_int_equal(pfi_problem_add(&p, xa, ya, 2, 100, 200, &err), 0);
  assert_int_equal(pfi_problem_add(&p, xb, yb, 3, 100, 200, &err), 0);
  const char *csv = "t,power_w\n0,1000\n60,800\n180,400\n";
  struct pfi_target tg;
  assert_int_equal(
      pfi_target_load_mem(&tg, "t.csv", csv, strlen(csv), NULL, NULL, &err), 0);
  assert_int_equal(tg.n, 3);
  /* All three samples lie in the first 15 minutes: median 800. */
  ASSERT_NEAR(pfi_target_baseline_auto(&tg), 800, 0);
  ASSERT_NEAR(pfi_target_dt(&tg, 2), 120, 0);

  struct pfi_replay o, e;
  assert_int_equal(pfi_replay_run(&p, PFI_STRAT_ORACLE, NULL, &tg, 1000,
                                  PFI_REPLAY_EVENT_MIN_CUT, &o, &err),
                   0);
  assert_int_equal(pfi_replay_run(&p, PFI_STRAT_EQUAL, NULL, &tg, 1000,
                                  PFI_REPLAY_EVENT_MIN_CUT, &e, &err),
                   0);
  /* Sums of a few products of small integers: exact to rounding; 1e-9
   * leaves room for the oracle's stated 1e-9 relative tolerance. */
  const double tol = 1e-9;
  ASSERT_NEAR(o.cut[1], 0.2, tol);
  ASSERT_NEAR(o.budget_w[1], 320, tol);
  ASSERT_NEAR(o.job_power_w[1 * 2 + 0], 170, 1e-6);
  ASSERT_NEAR(o.job_power_w[1 * 2 + 1], 150, 1e-6);
  ASSERT_NEAR(o.tokens_per_s[1], 275, 1e-6);
  ASSERT_NEAR(e.tokens_per_s[1], 274, 1e-6);
  ASSERT_NEAR(o.normalized[0], 1, tol);
  ASSERT_EQ_INT(o.feasible[2], 0);
  ASSERT_NEAR(o.short_w[2], 40, tol);
  ASSERT_NEAR(o.power_w[2], 200, tol);
  ASSERT_EQ_INT(o.infeasible_steps, 1);
  ASSERT_NEAR(o.infeasible_max_w, 40, tol);
  ASSERT_NEAR(o.retained, 75600.0 / 93000, 1e-8);
  ASSERT_NEAR(e.retained, 75480.0 / 93000, 1e-8);
  ASSERT_NEAR(o.retained_event, 57000.0 / 74400, 1e-8);
  ASSERT_NEAR(e.retained_event, 56880.0 / 74400, 1e-8);
  ASSERT_EQ_INT(o.event_steps, 2);
  ASSERT_NEAR(o.mean_cut, 0.4, tol);
  ASSERT_NEAR(o.max_cut, 0.6, tol);
  ASSERT_NEAR(o.energy_j, 86400, 1e-6);
  ASSERT_NEAR(e.energy_j, 86400, 1e-6);
  ASSERT_NEAR(o.job_retained_event[0], 28200.0 / 36000, 1e-8);
  ASSERT_NEAR(o.job_retained_event[1], 0.75, 1e-8);
  ASSERT_NEAR(e.job_retained_event[0], 27600.0 / 36000, 1e-8);
  ASSERT_NEAR(e.job_retained_event[1], 29280.0 / 38400, 1e-8);
  /* A (60*200 + 120*170 + 120*100) / 300 = 148 W on average. */
  ASSERT_NEAR(o.job_mean_power_w[0], 148, 1e-6);

  /* Bad arguments. */
  struct pfi_replay r;
  assert_int_equal(
      pfi_replay_run(&p, PFI_STRAT_ORACLE, NULL, &tg, 0, 0.05, &r, &err),
      PFI_EINVAL);
  assert_int_equal(
      pfi_replay_run(&p, PFI_STRAT_ORACLE, NULL, &tg, 1000, 0, &r, &err),
      PFI_EINVAL);
  assert_int_equal(
      pfi_replay_run(&p, PFI_STRAT_PFI_AWARE, NULL, &tg, 1000, 0.05, &r, &err),
      PFI_EINVAL);
  pfi_replay_release(&o);
  pfi_replay_release(&e);
  pfi_target_release(&tg);
  pfi_problem_release(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_time_forms),
      cmocka_unit_test(test_time_errors),
      cmocka_unit_test(test_target_errors),
      cmocka_unit_test(test_replay_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
