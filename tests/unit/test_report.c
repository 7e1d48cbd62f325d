/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The report's building blocks: escaping, tables, SVG inlining, figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "pfi/report.h"

static void test_escape(void **state) {
  (void)state;
  struct pfi_html b;
  pfi_html_init(&b);
  pfi_html_puts(&b, "<p>");
  pfi_html_text(&b, "a<b & \"c\" 'd'>\x01\x7f\tz");
  pfi_html_puts(&b, "</p>");
  /* Expected text written out by hand from the escaping rules. */
  assert_string_equal(b.s, "<p>a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;\tz"
                           "</p>");
  pfi_html_textf(&b, "%d<%s", 3, "x");
  assert_string_equal(b.s + strlen(b.s) - 6, "3&lt;x");
  char *s = pfi_html_detach(&b);
  assert_non_null(s);
  free(s);
  assert_null(b.s);
  s = pfi_html_detach(&b);
  assert_string_equal(s, "");
  free(s);
}

static char *slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return NULL;
  char *buf = calloc(1, 1 << 16);
  size_t n = fread(buf, 1, (1 << 16) - 1, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static void test_table(void **state) {
  (void)state;
  const char *cols[] = {"group", "pfi", "pfi_published", "diff", "n"};
  struct pfi_rtable t;
  assert_int_equal(pfi_rtable_init(&t, "demo", "Demo table", 5, cols), 0);
  pfi_rtable_decimals(&t, 4, 0);
  pfi_rtable_decimals(&t, 1, 2);
  long r = pfi_rtable_add_row(&t);
  assert_int_equal(r, 0);
  pfi_rtable_set_str(&t, 0, 0, "a,\"b\"");
  pfi_rtable_set_num(&t, 0, 1, 1.2345);
  pfi_rtable_set_num(&t, 0, 2, NAN);     /* non-finite becomes NULL */
  pfi_rtable_set_num(&t, 0, 3, -0.0001); /* rounds to zero, not "-0.000" */
  pfi_rtable_set_num(&t, 0, 4, 25);
  r = pfi_rtable_add_row(&t);
  pfi_rtable_set_str(&t, 1, 0, "<x>");
  /* Not UTF-8 (a Latin-1 e-acute, then a truncated sequence): each bad byte
   * becomes U+FFFD in JSON; the CSV keeps the bytes. */
  pfi_rtable_set_str(&t, 1, 3, "caf\xe9 \xe2\x82");
  pfi_rtable_set_num(&t, 1, 1, 2.0049);
  assert_int_equal(pfi_rtable_col(&t, "diff"), 3);
  assert_int_equal(pfi_rtable_col(&t, "nope"), -1);

  char dir[] = "/tmp/pfi-test-report-XXXXXX";
  assert_non_null(mkdtemp(dir));
  struct pfi_error err;
  assert_int_equal(pfi_rtable_write(&t, dir, &err), 0);
  char path[512];
  snprintf(path, sizeof path, "%s/demo.csv", dir);
  char *csv = slurp(path);
  assert_non_null(csv);
  /* 2.0049 rounds to 2.00 at two decimals. */
  assert_string_equal(csv, "group,pfi,pfi_published,diff,n\n"
                           "\"a,\"\"b\"\"\",1.23,,0.000,25\n"
                           "<x>,2.00,,caf\xe9 \xe2\x82,\n");
  free(csv);
  unlink(path);
  snprintf(path, sizeof path, "%s/demo.json", dir);
  char *json = slurp(path);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"group\": \"a,\\\"b\\\"\""));
  assert_non_null(strstr(json, "\"pfi\": 1.23,"));
  assert_non_null(strstr(json, "\"pfi_published\": null"));
  assert_non_null(strstr(json, "\"n\": 25"));
  assert_non_null(
      strstr(json, "\"diff\": \"caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\""));
  free(json);
  unlink(path);
  rmdir(dir);

  /* A cell's own decimals override the column's: 1500 with 0 decimals. */
  r = pfi_rtable_add_row(&t);
  pfi_rtable_set_num_dec(&t, 2, 1, 1499.6, 0);
  char fb[64];
  assert_string_equal(pfi_rtable_format(&t, 2, 1, fb, sizeof fb), "1500");
  pfi_rtable_set_num(&t, 2, 1, 1499.6); /* back to the column's 2 */
  assert_string_equal(pfi_rtable_format(&t, 2, 1, fb, sizeof fb), "1499.60");
  /* From a billion on, scientific notation with 4 significant digits:
   * -4940464674914.18 would be 16 digits in fixed notation, and 1e300 with
   * 2 decimals would not fit the 64-byte buffer at all. */
  pfi_rtable_set_num(&t, 2, 1, -4940464674914.18);
  assert_string_equal(pfi_rtable_format(&t, 2, 1, fb, sizeof fb), "-4.940e+12");
  pfi_rtable_set_num(&t, 2, 1, 1e300);
  assert_string_equal(pfi_rtable_format(&t, 2, 1, fb, sizeof fb), "1.000e+300");
  pfi_rtable_set_num(&t, 2, 1, 999999999.0); /* just below: fixed */
  assert_string_equal(pfi_rtable_format(&t, 2, 1, fb, sizeof fb), "999999999.00");
  pfi_rtable_set_num(&t, 2, 1, 1499.6);

  struct pfi_html b;
  pfi_html_init(&b);
  assert_int_equal(pfi_rtable_html(&t, &b), 0);
  assert_non_null(strstr(b.s, "<td>&lt;x&gt;</td>"));
  assert_non_null(strstr(b.s, "<th class=\"pub\">pfi_published</th>"));
  assert_non_null(strstr(b.s, "<td class=\"pub\">&ndash;</td>"));
  pfi_html_release(&b);

  /* A hidden column stays in the files but not on the page. */
  t.hidden_col = 0;
  pfi_html_init(&b);
  assert_int_equal(pfi_rtable_html(&t, &b), 0);
  assert_null(strstr(b.s, "<th>group</th>"));
  assert_null(strstr(b.s, "&lt;x&gt;"));
  assert_non_null(strstr(b.s, "<th>pfi</th>"));
  pfi_html_release(&b);
  pfi_rtable_release(&t);
}

static void test_svg_inline(void **state) {
  (void)state;
  const char *in = "<?xml version=\"1.0\"?>\n<svg width=\"10\">"
                   "<path id='gpPt0' d='M0'/><use xlink:href='#gpPt0'/>"
                   "<g id=\"plot_1\" clip-path=\"url(#clip1)\"/>"
                   "<rect grid='1'/></svg>\n";
  char *out = pfi_svg_inline(in, strlen(in), "f3-");
  assert_non_null(out);
  assert_string_equal(out, "<svg width=\"10\"><path id='f3-gpPt0' d='M0'/>"
                           "<use xlink:href='#f3-gpPt0'/>"
                           "<g id=\"f3-plot_1\" clip-path=\"url(#f3-clip1)\"/>"
                           "<rect grid='1'/></svg>\n");
  free(out);
  assert_null(pfi_svg_inline("no drawing", 10, "x"));
}

static void test_script_quotes(void **state) {
  (void)state;
  double x[] = {1, 2, NAN, 3}, y[] = {4, 5, 6, INFINITY};
  struct pfi_series s = {.title = "it's", .x = x, .y = y, .n = 4};
  struct pfi_panel p;
  pfi_panel_init(&p);
  p.title = "a\nb";
  p.series = &s;
  p.nseries = 1;
  struct pfi_figure f = {.width = 300,
                         .height = 200,
                         .rows = 1,
                         .cols = 1,
                         .panels = &p,
                         .npanels = 1};
  struct pfi_html b;
  pfi_html_init(&b);
  struct pfi_error err;
  assert_int_equal(pfi_figure_script(&f, &b, &err), 0);
  /* The two finite points only; the quote doubled; newline made a space. */
  assert_non_null(strstr(b.s, "$d0_0 << EOD\n1 4\n2 5\nEOD\n"));
  assert_non_null(strstr(b.s, "title 'it''s'"));
  assert_non_null(strstr(b.s, "set title 'a b'"));
  pfi_html_release(&b);
  f.rows = 0;
  pfi_html_init(&b);
  assert_int_equal(pfi_figure_script(&f, &b, &err), PFI_EINVAL);
  pfi_html_release(&b);
}

static int have_gnuplot(void) {
  return system("gnuplot --version >/dev/null 2>&1") == 0;
}

static void test_figure_svg(void **state) {
  (void)state;
  if (!have_gnuplot()) {
    skip();
    return;
  }
  double x[] = {200, 300, 400}, y[] = {1, 2, 2.5};
  struct pfi_series s = {
      .title = "a_b <c>", .x = x, .y = y, .n = 3, .color = 2};
  struct pfi_panel p[2];
  pfi_panel_init(&p[0]);
  pfi_panel_init(&p[1]);
  p[0].series = &s;
  p[0].nseries = 1;
  p[0].key = 1;
  p[1].nseries = 0; /* an empty panel says "no data" */
  struct pfi_figure f = {.width = 500,
                         .height = 300,
                         .rows = 1,
                         .cols = 2,
                         .panels = p,
                         .npanels = 2};
  char *svg = NULL;
  struct pfi_error err;
  int rc = pfi_figure_svg(&f, "fig7-", &svg, &err);
  if (rc)
    fail_msg("pfi_figure_svg: %s", err.msg);
  assert_memory_equal(svg, "<svg", 4);
  assert_null(strstr(svg, "<?xml"));
  assert_non_null(strstr(svg, "id='fig7-gpPt0'"));
  assert_null(strstr(svg, "id='gpPt0'"));
  assert_non_null(strstr(svg, "fig7-gnuplot_plot_1"));
  assert_non_null(strstr(svg, "no data"));
  /* gnuplot escapes the legend text itself. */
  assert_null(strstr(svg, "<c>"));
  free(svg);

  setenv("PFI_GNUPLOT", "/nonexistent/gnuplot", 1);
  rc = pfi_figure_svg(&f, "x", &svg, &err);
  unsetenv("PFI_GNUPLOT");
  assert_int_equal(rc, PFI_ECHILD);
  assert_non_null(strstr(err.msg, "gnuplot-nox"));
  assert_null(svg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape),     cmocka_unit_test(test_table),
      cmocka_unit_test(test_svg_inline), cmocka_unit_test(test_script_quotes),
      cmocka_unit_test(test_figure_svg),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
