/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * PFI models: in-sample fit, leave-one-out and leave-one-cluster-out on a
 * four-row dataset worked by hand (the fractions below are the hand
 * computation), the minimum-norm fit of a rank-deficient design, the
 * features file's expressions and errors, and the model's JSON.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/features.h"
#include "pfi/fmt.h"
#include "pfi/model.h"
#include "testutil.h"

/* x = 0, 1, 2, 3; y = 1, 3, 2, 5. mean(y) = 2.75, SST = 8.75. */
static const double X[] = {0, 1, 2, 3};
static const double Y[] = {1, 3, 2, 5};

static void test_fit_in_sample(void **state) {
  (void)state;
  struct pfi_model m;
  struct pfi_error err;
  const char *names[] = {"x"};
  assert_int_equal(pfi_model_fit(X, 4, 1, Y, names, &m, &err), 0);
  /* Sxy = 5.5, Sxx = 5: slope 1.1, intercept 2.75 - 1.1 * 1.5 = 1.1.
   * Residuals -0.1, 0.8, -1.3, 0.6: SSE = 2.7, s^2 = 1.35,
   * se(slope) = sqrt(1.35 / 5), se(intercept) = sqrt(1.35 (1/4 + 2.25/5)).
   * Tolerance: a few ulps of the SVD solution. */
  ASSERT_NEAR(m.coef[1], 1.1, 1e-12);
  ASSERT_NEAR(m.coef[0], 1.1, 1e-12);
  assert_true(m.has_se);
  ASSERT_NEAR(m.se[1], sqrt(0.27), 1e-12);
  ASSERT_NEAR(m.se[0], sqrt(0.945), 1e-12);
  ASSERT_NEAR(m.r2, 1 - 2.7 / 8.75, 1e-12);
  pfi_model_release(&m);
}

/* Least squares does not depend on a column's units: the hand-worked data
 * with x multiplied by 1e200 (squares overflow) or 1e-200 (squares
 * underflow) give the same fit, slope 1.1 divided by the factor, the same
 * standard error relative to it, and the same out-of-sample predictions.
 * Tolerance: relative 1e-12, a few ulps of the solution. */
static void test_fit_extreme_scale(void **state) {
  (void)state;
  const double f[] = {1e200, 1e-200};
  for (int q = 0; q < 2; q++) {
    double xs[4];
    for (int i = 0; i < 4; i++)
      xs[i] = X[i] * f[q];
    struct pfi_model m;
    struct pfi_error err;
    const char *names[] = {"x"};
    assert_int_equal(pfi_model_fit(xs, 4, 1, Y, names, &m, &err), 0);
    ASSERT_NEAR(m.coef[1] * f[q], 1.1, 1e-12);
    ASSERT_NEAR(m.coef[0], 1.1, 1e-12);
    assert_true(m.has_se);
    ASSERT_NEAR(m.se[1] * f[q], sqrt(0.27), 1e-12);
    ASSERT_NEAR(m.r2, 1 - 2.7 / 8.75, 1e-12);
    pfi_model_release(&m);
    size_t fold[] = {0, 1, 2, 3};
    struct pfi_eval ev;
    double pred[4];
    assert_int_equal(
        pfi_model_eval_folds(xs, 4, 1, Y, fold, 4, &ev, pred, &err), 0);
    assert_true(ev.defined);
    ASSERT_NEAR(pred[0], 4.0 / 3, 1e-12);
    ASSERT_NEAR(pred[1], 13.0 / 7, 1e-12);
    ASSERT_NEAR(ev.r2, 1 - 3910.0 / 441 / 8.75, 1e-12);
  }
}

static void test_loo_by_hand(void **state) {
  (void)state;
  size_t fold[] = {0, 1, 2, 3};
  struct pfi_eval ev;
  struct pfi_error err;
  double pred[4];
  assert_int_equal(pfi_model_eval_folds(X, 4, 1, Y, fold, 4, &ev, pred, &err),
                   0);
  assert_true(ev.defined);
  /* Each held-out row predicted by the line through the other three:
   * 4/3, 13/7, 27/7, 3 (fits y = 4/3 + x, 9/14 + 17x/14, 9/7 + 9x/7,
   * 3/2 + x/2). SSE_out = 1/9 + 64/49 + 169/49 + 4 = 3910/441. */
  ASSERT_NEAR(pred[0], 4.0 / 3, 1e-12);
  ASSERT_NEAR(pred[1], 13.0 / 7, 1e-12);
  ASSERT_NEAR(pred[2], 27.0 / 7, 1e-12);
  ASSERT_NEAR(pred[3], 3.0, 1e-12);
  double sse = 3910.0 / 441;
  ASSERT_NEAR(ev.r2, 1 - sse / 8.75, 1e-12);
  ASSERT_NEAR(ev.rmse, sqrt(sse / 4), 1e-12);
  /* Ranks of y 1 3 2 4, of predictions 1 2 4 3: sum d^2 = 6,
   * rho = 1 - 6 * 6 / (4 * 15) = 0.4. */
  assert_true(ev.rho_defined);
  ASSERT_NEAR(ev.rho, 0.4, 1e-12);
}

static void test_loco_by_hand(void **state) {
  (void)state;
  size_t fold[] = {0, 0, 1, 1};
  struct pfi_eval ev;
  struct pfi_error err;
  double pred[4];
  assert_int_equal(pfi_model_eval_folds(X, 4, 1, Y, fold, 2, &ev, pred, &err),
                   0);
  /* Holding out rows 0-1: the line through (2,2),(3,5) is 3x - 4, predicting
   * -4 and -1. Holding out rows 2-3: through (0,1),(1,3), 2x + 1, predicting
   * 5 and 7. Errors 5, 4, -3, -2: SSE_out = 54. Ranks of the predictions
   * 1 2 3 4 against 1 3 2 4: sum d^2 = 2, rho = 1 - 12/60 = 0.8. */
  ASSERT_NEAR(pred[0], -4.0, 1e-12);
  ASSERT_NEAR(pred[1], -1.0, 1e-12);
  ASSERT_NEAR(pred[2], 5.0, 1e-12);
  ASSERT_NEAR(pred[3], 7.0, 1e-12);
  ASSERT_NEAR(ev.r2, 1 - 54 / 8.75, 1e-12);
  ASSERT_NEAR(ev.rmse, sqrt(13.5), 1e-12);
  ASSERT_NEAR(ev.rho, 0.8, 1e-12);
  /* A fold leaving fewer than 2 training rows is undefined, not a crash. */
  size_t f2[] = {0, 0, 0, 1};
  assert_int_equal(pfi_model_eval_folds(X, 4, 1, Y, f2, 2, &ev, NULL, &err), 0);
  assert_false(ev.defined);
}

/* Two identical columns: the minimum-norm solution splits the slope 1.1
 * evenly (0.55 each) and predicts exactly as the one-column fit. */
static void test_rank_deficient(void **state) {
  (void)state;
  double x2[8];
  for (int i = 0; i < 4; i++)
    x2[2 * i] = x2[2 * i + 1] = X[i];
  struct pfi_model m;
  struct pfi_error err;
  const char *names[] = {"a", "b"};
  assert_int_equal(pfi_model_fit(x2, 4, 2, Y, names, &m, &err), 0);
  assert_false(m.has_se);
  ASSERT_NEAR(m.coef[1], 0.55, 1e-9);
  ASSERT_NEAR(m.coef[2], 0.55, 1e-9);
  ASSERT_NEAR(m.coef[0], 1.1, 1e-9);
  pfi_model_release(&m);
  size_t fold[] = {0, 1, 2, 3};
  double pred[4];
  struct pfi_eval ev;
  assert_int_equal(pfi_model_eval_folds(x2, 4, 2, Y, fold, 4, &ev, pred, &err),
                   0);
  ASSERT_NEAR(pred[1], 13.0 / 7, 1e-9);
}

static const char FEAT[] = "job,arch,task,gpus,dram_copy_product\n"
                           "a,dense,pt,8,0.1\n"
                           "b,moe,ft,16,0.5\n"
                           "c,MoE,pt,32,x\n";

static void test_features(void **state) {
  (void)state;
  struct pfi_features f;
  struct pfi_error err;
  assert_int_equal(pfi_features_load_mem(&f, "f.csv", FEAT, strlen(FEAT), &err),
                   0);
  ASSERT_EQ_INT(pfi_features_row(&f, "b"), 1);
  ASSERT_EQ_INT(pfi_features_row(&f, "zz"), -1);
  double v;
  assert_int_equal(pfi_features_value(&f, 1, "arch=moe", &v, &err), 0);
  ASSERT_NEAR(v, 1, 0);
  assert_int_equal(pfi_features_value(&f, 2, "arch=moe", &v, &err), 0);
  ASSERT_NEAR(v, 1, 0); /* case-insensitive */
  assert_int_equal(pfi_features_value(&f, 0, "task=ft", &v, &err), 0);
  ASSERT_NEAR(v, 0, 0);
  assert_int_equal(pfi_features_value(&f, 2, "log2(gpus)", &v, &err), 0);
  ASSERT_NEAR(v, 5, 0);
  assert_int_equal(pfi_features_value(&f, 2, "dram_copy_product", &v, &err),
                   PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 4);
  ASSERT_EQ_INT(err.column, 13); /* "c,MoE,pt,32," is 12 bytes */
  assert_int_equal(pfi_features_value(&f, 0, "tensor_active", &v, &err),
                   PFI_ENOTFOUND);
  assert_non_null(strstr(err.msg, "tensor_active"));
  assert_string_equal(pfi_features_cluster(&f, 0, &err), "dense");
  assert_string_equal(pfi_features_cluster(&f, 1, &err), "moe-ft");
  assert_string_equal(pfi_features_cluster(&f, 2, &err), "moe-pt");
  assert_string_equal(pfi_features_archtask(&f, 0, &err), "dense-pt");
  assert_string_equal(pfi_features_archtask(&f, 1, &err), "moe-ft");
  pfi_features_release(&f);
  static const char dup[] = "job,x\na,1\nb,2\na,3\n";
  assert_int_equal(pfi_features_load_mem(&f, "d.csv", dup, strlen(dup), &err),
                   PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 4);
  assert_non_null(strstr(err.msg, "duplicate job 'a'"));
  static const char nojob[] = "name,x\na,1\n";
  assert_int_equal(
      pfi_features_load_mem(&f, "n.csv", nojob, strlen(nojob), &err),
      PFI_EPARSE);
}

/* Predictions for a features file: the fit of X, Y is y = 1.1 + 1.1 x
 * (Sxy 5.5, Sxx 5: slope 1.1; intercept 2.75 - 1.1 * 1.5 = 1.1). */
static void test_predict_features(void **state) {
  (void)state;
  struct pfi_model m;
  struct pfi_features f;
  struct pfi_error err;
  const char *names[] = {"x"};
  assert_int_equal(pfi_model_fit(X, 4, 1, Y, names, &m, &err), 0);
  static const char ok[] = "job,x\na,10\nb,-2\n";
  assert_int_equal(pfi_features_load_mem(&f, "p.csv", ok, strlen(ok), &err), 0);
  double pred[3];
  assert_int_equal(pfi_model_predict_features(&m, &f, pred, &err), 0);
  ASSERT_NEAR(pred[0], 12.1, 1e-12); /* 1.1 + 11 */
  ASSERT_NEAR(pred[1], -1.1, 1e-12); /* 1.1 - 2.2 */
  pfi_features_release(&f);
  /* 1.1 * 1.7e308 overflows: an error at the job's line, never inf. */
  static const char big[] = "job,x\na,1\nc,1.7e308\n";
  assert_int_equal(pfi_features_load_mem(&f, "b.csv", big, strlen(big), &err),
                   0);
  assert_int_equal(pfi_model_predict_features(&m, &f, pred, &err), PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 3);
  assert_non_null(strstr(err.msg, "job c"));
  pfi_features_release(&f);
  /* A column the model needs is missing: bad input, not "not found". */
  static const char nox[] = "job,y\na,1\n";
  assert_int_equal(pfi_features_load_mem(&f, "n.csv", nox, strlen(nox), &err),
                   0);
  assert_int_equal(pfi_model_predict_features(&m, &f, pred, &err), PFI_EPARSE);
  ASSERT_EQ_INT(err.code, PFI_EPARSE);
  pfi_features_release(&f);
  pfi_model_release(&m);
}

static void test_model_json(void **state) {
  (void)state;
  struct pfi_model m, m2;
  struct pfi_error err;
  const char *names[] = {"x"};
  assert_int_equal(pfi_model_fit(X, 4, 1, Y, names, &m, &err), 0);
  char path[] = "/tmp/pfi-test-model-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(pfi_model_save(&m, path, &err), 0);
  assert_int_equal(pfi_model_load(&m2, path, &err), 0);
  unlink(path);
  ASSERT_EQ_INT(m2.k, 1);
  assert_string_equal(m2.features[0], "x");
  double row = 2.5;
  /* 17 significant digits round-trip a double exactly. */
  ASSERT_NEAR(pfi_model_predict(&m2, &row), pfi_model_predict(&m, &row), 0);
  pfi_model_release(&m);
  pfi_model_release(&m2);
  static const char bad1[] = "{\"kind\": \"pfi-linear-model\", \"features\": "
                             "[\"x\"], \"intercept\": 1, \"coefficients\": "
                             "[{\"feature\": \"x\"}]}";
  assert_int_equal(pfi_model_load_mem(&m2, "m.json", bad1, strlen(bad1), &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "estimate"));
  static const char bad2[] = "{\"kind\": ";
  assert_int_equal(pfi_model_load_mem(&m2, "m.json", bad2, strlen(bad2), &err),
                   PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 1);
}

/* Validation against the hand-worked line: predictions 1.1 + 1.1 x of
 * y = 1, 3, 2, 5 leave residuals -0.1, 0.8, -1.3, 0.6 (SSE 2.7, SST
 * 8.75); the ranks of y (1, 3, 2, 4) against (1, 2, 3, 4) give
 * rho = 1 - 6 * 2 / (4 * 15) = 0.8. Tolerance: rounding. */
static void test_validate(void **state) {
  (void)state;
  const double pred[4] = {1.1, 2.2, 3.3, 4.4};
  struct pfi_validation v;
  struct pfi_error err;
  assert_int_equal(pfi_model_validate(Y, pred, 4, &v, &err), 0);
  assert_true(v.r2_defined);
  ASSERT_NEAR(v.r2, 1 - 2.7 / 8.75, 1e-12);
  ASSERT_NEAR(v.rmse, sqrt(2.7 / 4), 1e-12);
  assert_true(v.rho_defined);
  ASSERT_NEAR(v.rho, 0.8, 1e-12);
  const double same[2] = {2, 2};
  assert_int_equal(pfi_model_validate(same, pred, 2, &v, &err), 0);
  assert_false(v.r2_defined);
  assert_false(v.rho_defined);
  assert_int_equal(pfi_model_validate(Y, pred, 1, &v, &err), PFI_EINVAL);
  /* The same line scaled by 1e307: SSE and SST (about 1e614) overflow,
   * R^2 does not change and the RMSE scales (relative tolerance). */
  double ys[4], ps[4];
  for (int i = 0; i < 4; i++) {
    ys[i] = Y[i] * 1e307;
    ps[i] = pred[i] * 1e307;
  }
  assert_int_equal(pfi_model_validate(ys, ps, 4, &v, &err), 0);
  ASSERT_NEAR(v.r2, 1 - 2.7 / 8.75, 1e-12);
  ASSERT_NEAR(v.rmse / 1e307, sqrt(2.7 / 4), 1e-12);
  ASSERT_NEAR(v.rho, 0.8, 1e-12);
  /* An estimate of 1e308 against y near 1: SSE/SST is about 1e616, beyond
   * the range: an error naming row 2, the one to blame. */
  const double far[4] = {1.1, 1e308, 3.3, 4.4};
  assert_int_equal(pfi_model_validate(Y, far, 4, &v, &err), PFI_EPARSE);
  assert_int_equal((int)v.worst, 1);
  assert_non_null(strstr(err.msg, "row 2"));
}

/* pfi_fmt_fixed: printf's fixed point below 1e15, %g beyond. */
static void test_fmt_fixed(void **state) {
  (void)state;
  char b[PFI_FMT_MAX];
  pfi_fmt_fixed(b, 1.23456, 3);
  assert_string_equal(b, "1.235");
  pfi_fmt_fixed(b, 999999999999999.0, 1);
  assert_string_equal(b, "999999999999999.0");
  pfi_fmt_fixed(b, 1e308, 3);
  assert_string_equal(b, "1e+308");
  pfi_fmt_fixed(b, -9.5e307, 1);
  assert_string_equal(b, "-9.5e+307");
  pfi_fmt_fixed(b, -DBL_MAX, 9);
  assert_true(strlen(b) < PFI_FMT_MAX);
}

/* The prediction interval on the hand-worked line (1.1 + 1.1 x, s^2 =
 * 1.35, n = 4, df = 2, mean x 1.5, Sxx = 5), at x0 = 4: yhat = 5.5; the
 * variance of a new value s^2 (1 + 1/n + (x0 - 1.5)^2 / Sxx) = 1.35 * 2.5
 * = 3.375, t(0.975, 2) = 4.302652729911275 (tables), half-width
 * 4.302652729911275 * sqrt(3.375) = 7.9044777965067805. Saved and
 * loaded, the same; a file without the covariance gives the residual-only
 * t s sqrt(1 + 1/n) = 4.302652729911275 * sqrt(1.6875) =
 * 5.589309851648443 and says so (1); one without sigma has none. */
static void test_prediction_interval(void **state) {
  (void)state;
  struct pfi_model m, m2;
  struct pfi_error err;
  const char *names[] = {"x"};
  assert_int_equal(pfi_model_fit(X, 4, 1, Y, names, &m, &err), 0);
  double x0 = 4, y, lo, hi;
  assert_int_equal(pfi_model_predict_interval(&m, &x0, &y, &lo, &hi, &err), 0);
  ASSERT_NEAR(y, 5.5, 1e-12);
  ASSERT_NEAR(hi - y, 7.9044777965067805, 1e-9);
  ASSERT_NEAR(y - lo, 7.9044777965067805, 1e-9);
  char path[] = "/tmp/pfi-test-model-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(pfi_model_save(&m, path, &err), 0);
  assert_int_equal(pfi_model_load(&m2, path, &err), 0);
  unlink(path);
  double y2, lo2, hi2;
  assert_int_equal(pfi_model_predict_interval(&m2, &x0, &y2, &lo2, &hi2, &err),
                   0);
  ASSERT_NEAR(lo2, lo, 1e-12);
  ASSERT_NEAR(hi2, hi, 1e-12);
  pfi_model_release(&m2);
  pfi_model_release(&m);
  static const char nocov[] =
      "{\"kind\": \"pfi-linear-model\", \"features\": [\"x\"], "
      "\"intercept\": 1.1, \"coefficients\": [{\"feature\": \"x\", "
      "\"estimate\": 1.1}], \"n\": 4, \"sigma\": 1.161895003862225, "
      "\"df_resid\": 2}";
  assert_int_equal(
      pfi_model_load_mem(&m2, "m.json", nocov, strlen(nocov), &err), 0);
  assert_int_equal(pfi_model_predict_interval(&m2, &x0, &y, &lo, &hi, &err), 1);
  ASSERT_NEAR(hi - y, 5.589309851648443, 1e-9);
  pfi_model_release(&m2);
  static const char nosigma[] =
      "{\"kind\": \"pfi-linear-model\", \"features\": [\"x\"], "
      "\"intercept\": 1.1, \"coefficients\": [{\"feature\": \"x\", "
      "\"estimate\": 1.1}], \"n\": 4}";
  assert_int_equal(
      pfi_model_load_mem(&m2, "m.json", nosigma, strlen(nosigma), &err), 0);
  assert_int_equal(pfi_model_predict_interval(&m2, &x0, &y, &lo, &hi, &err),
                   PFI_EINVAL);
  pfi_model_release(&m2);
  static const char badcov[] =
      "{\"kind\": \"pfi-linear-model\", \"features\": [\"x\"], "
      "\"intercept\": 1.1, \"coefficients\": [{\"feature\": \"x\", "
      "\"estimate\": 1.1}], \"n\": 4, \"sigma\": 1, \"df_resid\": 2, "
      "\"covariance\": [[1, 0]]}";
  assert_int_equal(
      pfi_model_load_mem(&m2, "m.json", badcov, strlen(badcov), &err),
      PFI_EPARSE);
  assert_non_null(strstr(err.msg, "covariance"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prediction_interval),
      cmocka_unit_test(test_fit_in_sample),
      cmocka_unit_test(test_validate),
      cmocka_unit_test(test_fmt_fixed),
      cmocka_unit_test(test_fit_extreme_scale),
      cmocka_unit_test(test_loo_by_hand),
      cmocka_unit_test(test_loco_by_hand),
      cmocka_unit_test(test_rank_deficient),
      cmocka_unit_test(test_features),
      cmocka_unit_test(test_model_json),
      cmocka_unit_test(test_predict_features),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
