/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Allocation failure in the report: the result tables and the whole
 * analysis of a campaign. cmake/report.cmake links this program with
 * --wrap for the C and GSL allocators (as cmake/oom.cmake does for
 * test_oom), so every allocation made by libpfi's static objects can be
 * made to fail. For each entry point the call runs with the Nth allocation
 * failing, N = 1, 2, 3, ..., until a run completes without reaching it; at
 * each N the call must return PFI_ENOMEM with the error struct saying so,
 * never a success (a table or page built without the memory it asked for)
 * and never another code. Leaks on those paths are caught by LeakSanitizer
 * in the AddressSanitizer build. The completing run is checked against
 * values known in closed form (tests/cli/data/report/README.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_vector.h>
#include <jansson.h>

#include "testutil.h"

#include "pfi/error.h"
#include "pfi/report.h"

static long oom_target;
static long oom_count;
static int oom_armed;
static int oom_hit;

static void oom_on(void) {
  oom_count = 0;
  oom_hit = 0;
  oom_armed = 1;
}

static void oom_off(void) { oom_armed = 0; }

static int oom_fail_now(void) {
  if (!oom_armed || ++oom_count != oom_target)
    return 0;
  oom_hit = 1;
  return 1;
}

#include "oom_wrap.h"

typedef int (*oom_case)(struct pfi_error *err);

/* Every allocation up to `dense`, then every `step`-th: the whole report
 * makes about 9,000 allocations, and failing each in turn would take
 * longer than the test suite's budget (every one of them was checked once,
 * in 14 s, when this test was written). */
static void oom_run(const char *what, oom_case fn, long dense, long step) {
#ifndef PFI_OOM_WRAP
  (void)what;
  (void)fn;
  (void)dense;
  (void)step;
  skip();
#else
  for (long n = 1; n < 200000; n += n < dense ? 1 : step) {
    struct pfi_error err;
    pfi_error_clear(&err);
    oom_target = n;
    int rc = fn(&err);
    oom_off();
    if (!oom_hit) {
      if (n == 1)
        fail_msg("%s: made no allocation through the hook", what);
      if (rc < 0)
        fail_msg("%s: failed (%s: %s) with no allocation failing", what,
                 pfi_err_name(rc), err.msg);
      print_message("%s: about %ld allocations, failures handled\n", what,
                    n - 1);
      return;
    }
    if (rc >= 0)
      fail_msg("%s: returned %d although allocation %ld failed", what, rc, n);
    if (rc != PFI_ENOMEM || err.code != PFI_ENOMEM)
      fail_msg("%s: allocation %ld failed: returned %s, err %s \"%s\", "
               "expected PFI_ENOMEM",
               what, n, pfi_err_name(rc), pfi_err_name(err.code), err.msg);
  }
  fail_msg("%s: did not finish within 200000 allocations", what);
#endif
}

static char outdir[64];

static char *slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return NULL;
  char *buf = calloc(1, 1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

/* A table built, rendered and written with allocations failing. */
static int case_rtable(struct pfi_error *err) {
  static const char *const cols[] = {"group", "pfi", "source"};
  struct pfi_rtable t;
  struct pfi_html b;
  pfi_html_init(&b);
  oom_on();
  int rc = pfi_rtable_init(&t, "t", "A table", 3, cols);
  if (rc) {
    oom_off();
    return pfi_error_set(err, rc, "out of memory");
  }
  for (int i = 0; i < 20; i++) {
    long row = pfi_rtable_add_row(&t);
    if (row >= 0) {
      pfi_rtable_set_str(&t, (size_t)row, 0, "g<1>");
      pfi_rtable_set_num(&t, (size_t)row, 1, 1.0 + i / 100.0);
      pfi_rtable_set_str(&t, (size_t)row, 2, "emulated");
    }
  }
  rc = pfi_rtable_write(&t, outdir, err);
  if (rc == 0 && pfi_rtable_html(&t, &b) != 0)
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
  oom_off();
  if (rc == 0) {
    char path[128];
    snprintf(path, sizeof path, "%s/t.csv", outdir);
    char *csv = slurp(path);
    assert_non_null(csv);
    assert_memory_equal(csv, "group,pfi,source\ng<1>,1.000,emulated\n", 37);
    assert_non_null(strstr(csv, "g<1>,1.190,emulated\n"));
    free(csv);
    assert_non_null(strstr(b.s, "<td>g&lt;1&gt;</td>"));
  }
  pfi_html_release(&b);
  pfi_rtable_release(&t);
  return rc;
}

/* The whole analysis of the synthetic campaign, tables only (no gnuplot
 * child), a small simulation. */
static int case_report(struct pfi_error *err) {
  struct pfi_report_opts o;
  pfi_report_opts_init(&o);
  o.no_figures = 1;
  o.ci_draws = 20;
  o.sim_workloads = 2;
  o.sim_jobs = 3;
  oom_on();
  int rc = pfi_report_build("tests/cli/data/report", outdir, &o, err);
  oom_off();
  if (rc == 0) {
    char path[128];
    snprintf(path, sizeof path, "%s/kruskal.csv", outdir);
    char *csv = slurp(path);
    assert_non_null(csv);
    /* H = 7.2 and p = exp(-3.6) by hand (see test_report.sh). */
    assert_non_null(strstr(csv, "Kruskal-Wallis,9,7.200,2,0.02732,"));
    free(csv);
    snprintf(path, sizeof path, "%s/report.html", outdir);
    char *html = slurp(path);
    assert_non_null(html);
    assert_non_null(strstr(html, "</html>"));
    free(html);
  }
  return rc;
}

/* A figure whose SVG is far larger than a pipe holds (64 KiB): with the
 * Nth allocation failing while gnuplot's output is read, the call must
 * return PFI_ENOMEM, and must return at all: gnuplot, still writing, is
 * not to be left blocked on a pipe nobody reads while it is waited for. */
#define FIG_POINTS 6000
static double fig_x[FIG_POINTS], fig_y[FIG_POINTS];

static int case_figure(struct pfi_error *err) {
  for (size_t i = 0; i < FIG_POINTS; i++) {
    fig_x[i] = (double)i;
    fig_y[i] = (double)(i % 97);
  }
  struct pfi_series sr = {.x = fig_x, .y = fig_y, .n = FIG_POINTS,
                          .style = PFI_STYLE_POINTS, .color = 1};
  struct pfi_panel p;
  pfi_panel_init(&p);
  p.series = &sr;
  p.nseries = 1;
  struct pfi_figure f = {
      .width = 400, .height = 300, .rows = 1, .cols = 1, .panels = &p,
      .npanels = 1};
  char *svg = NULL;
  oom_on();
  int rc = pfi_figure_svg(&f, "f-", &svg, err);
  oom_off();
  if (rc == 0) {
    assert_non_null(svg);
    /* Large enough that gnuplot blocks on a full pipe if it is not read. */
    assert_true(strlen(svg) > 4 * 65536);
  }
  free(svg);
  return rc;
}

static void test_figure(void **state) {
  (void)state;
#ifdef PFI_OOM_WRAP
  if (system("gnuplot --version >/dev/null 2>&1") != 0) {
    skip();
    return;
  }
  /* The allocations of one complete call, then each of the last ones
   * failing in turn (the count is that of one run): the reads of gnuplot's output and the inlining of the
   * SVG come last (the script's allocations before them are the same code
   * as in the tables and need no gnuplot run each). */
  struct pfi_error err;
  pfi_error_clear(&err);
  oom_target = -1;
  assert_int_equal(case_figure(&err), 0);
  long total = oom_count;
  for (long n = total > 24 ? total - 24 : 1; n <= total; n++) {
    pfi_error_clear(&err);
    oom_target = n;
    int rc = case_figure(&err);
    /* How gnuplot's output arrives in reads (and so how often the buffer
     * grows) varies from run to run: a run may need fewer allocations than
     * the counted one, and then it must simply succeed. */
    if (!oom_hit) {
      if (rc != 0)
        fail_msg("figure: failed (%s: %s) with no allocation failing",
                 pfi_err_name(rc), err.msg);
      continue;
    }
    if (rc != PFI_ENOMEM || err.code != PFI_ENOMEM)
      fail_msg("figure: allocation %ld failed: returned %s, err %s \"%s\"", n,
               pfi_err_name(rc), pfi_err_name(err.code), err.msg);
  }
#else
  skip();
#endif
}

static void test_rtable(void **state) {
  (void)state;
  oom_run("rtable", case_rtable, 200000, 1);
}

static void test_report(void **state) {
  (void)state;
  oom_run("report", case_report, 800, 17);
}

int main(void) {
  gsl_set_error_handler_off();
  snprintf(outdir, sizeof outdir, "/tmp/pfi-test-report-oom-XXXXXX");
  if (!mkdtemp(outdir))
    return 1;
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_rtable),
                                     cmocka_unit_test(test_report),
                                     cmocka_unit_test(test_figure)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", outdir);
  if (system(cmd) != 0)
    rc = rc ? rc : 1;
  return rc;
}
