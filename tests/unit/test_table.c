/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The result-table printer (pfi/restab.h): each format on a small table
 * whose name holds a comma, a quote, a line break and a tab, with a NaN and
 * a 1e308; the expected text is written out by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/error.h"
#include "pfi/restab.h"
#include "testutil.h"

static const struct pfi_restab_col cols[] = {
    {.name = "job", .kind = PFI_RESTAB_TEXT},
    /* terminal: one decimal; CSV, HTML: %g */
    {.name = "cap_w",
     .unit = "W",
     .kind = PFI_RESTAB_NUM,
     .style = 'f',
     .prec = 1,
     .csv_style = 'g',
     .csv_prec = 6},
    {.name = "pfi", .kind = PFI_RESTAB_NUM, .style = 'g', .prec = 4},
    {.name = "runs", .kind = PFI_RESTAB_INT},
};

static void fill(struct pfi_restab *t) {
  assert_int_equal(pfi_restab_init(t, cols, 4), 0);
  assert_int_equal(pfi_restab_title(t, "(emulated data)"), 0);
  assert_int_equal(pfi_restab_row(t), 0);
  pfi_restab_text(t, 0, "a,b \"q\"\nc\td");
  pfi_restab_num(t, 1, 300);
  pfi_restab_num(t, 2, NAN);
  pfi_restab_int(t, 3, 3);
  assert_int_equal(pfi_restab_row(t), 0);
  pfi_restab_text(t, 0, "plain");
  pfi_restab_num(t, 1, 1e308);
  pfi_restab_num(t, 2, 1.5);
  pfi_restab_int(t, 3, 12);
  assert_int_equal(pfi_restab_note(t, "%s: undefined", "-"), 0);
}

static void check(enum pfi_restab_format f, const char *want) {
  struct pfi_restab t;
  fill(&t);
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_non_null(fp);
  assert_int_equal(pfi_restab_print(&t, f, fp), 0);
  fclose(fp);
  pfi_restab_release(&t);
  if (strcmp(buf, want) != 0)
    fail_msg("format %d:\n--- got\n%s--- want\n%s", (int)f, buf, want);
  free(buf);
}

static void terminal(void **state) {
  (void)state;
  /* Widths: job 11 (the name; tab and line break as '?'), cap_w 9 (its
   * header with the unit), pfi 3, runs 4; two spaces between columns;
   * 1e308 in fixed point would be 309 digits: %g beyond 1e15. */
  check(PFI_RESTAB_TERM, "(emulated data)\n"
                         "job          cap_w (W)  pfi  runs\n"
                         "a,b \"q\"?c?d      300.0    -     3\n"
                         "plain           1e+308  1.5    12\n"
                         "\n"
                         "-: undefined\n");
}

static void csv(void **state) {
  (void)state;
  check(PFI_RESTAB_CSV, "job,cap_w,pfi,runs\n"
                        "\"a,b \"\"q\"\"\nc\td\",300,-,3\n"
                        "plain,1e+308,1.5,12\n");
}

static void json(void **state) {
  (void)state;
  check(PFI_RESTAB_JSON, "[\n"
                         "  {\n"
                         "    \"job\": \"a,b \\\"q\\\"\\nc\\td\",\n"
                         "    \"cap_w\": 300.0,\n"
                         "    \"pfi\": null,\n"
                         "    \"runs\": 3\n"
                         "  },\n"
                         "  {\n"
                         "    \"job\": \"plain\",\n"
                         "    \"cap_w\": 1e308,\n"
                         "    \"pfi\": 1.5,\n"
                         "    \"runs\": 12\n"
                         "  }\n"
                         "]\n");
}

static void html(void **state) {
  (void)state;
  check(PFI_RESTAB_HTML,
        "<p class=\"tabcap\">(emulated data)</p>\n"
        "<table class=\"res\">\n"
        "<thead><tr><th>job</th><th>cap_w (W)</th><th>pfi</th><th>runs</th>"
        "</tr></thead>\n"
        "<tbody>\n"
        "<tr><td>a,b &quot;q&quot;\nc\td</td><td class=\"num\">300</td>"
        "<td class=\"num\">&ndash;</td><td class=\"num\">3</td></tr>\n"
        "<tr><td>plain</td><td class=\"num\">1e+308</td>"
        "<td class=\"num\">1.5</td><td class=\"num\">12</td></tr>\n"
        "</tbody></table>\n"
        "<p class=\"note\">-: undefined</p>\n");
}

/* Format masks, a fixed width that a cell overflows, a capped width, CSV's
 * empty null, right-aligned text and the separator. */
static void layout(void **state) {
  (void)state;
  static const struct pfi_restab_col c2[] = {
      {.name = "name", .kind = PFI_RESTAB_TEXT, .max_width = 6},
      {.name = "v",
       .label = "value",
       .kind = PFI_RESTAB_NUM,
       .style = 'f',
       .prec = 2,
       .width = 4,
       .fixed = 1,
       .sep = 1},
      {.name = "only_csv",
       .kind = PFI_RESTAB_INT,
       .formats = PFI_RESTAB_IN_CSV},
      {.name = "tag", .kind = PFI_RESTAB_TEXT, .align = PFI_RESTAB_RIGHT},
  };
  struct pfi_restab t;
  assert_int_equal(pfi_restab_init(&t, c2, 4), 0);
  t.csv_null = "";
  pfi_restab_row(&t);
  pfi_restab_text(&t, 0, "longer-than-six");
  pfi_restab_num(&t, 1, 12345.678);
  pfi_restab_int(&t, 2, 7);
  pfi_restab_row(&t);
  pfi_restab_text(&t, 0, "ab");
  pfi_restab_num(&t, 1, INFINITY);
  pfi_restab_textf(&t, 3, "%d%%", 5);
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_int_equal(pfi_restab_print(&t, PFI_RESTAB_TERM, fp), 0);
  fclose(fp);
  assert_string_equal(buf, "name   value  tag\n"
                           "longer-than-six 12345.68    -\n"
                           "ab        -   5%\n");
  free(buf);
  fp = open_memstream(&buf, &n);
  assert_int_equal(pfi_restab_print(&t, PFI_RESTAB_CSV, fp), 0);
  fclose(fp);
  assert_string_equal(buf, "name,v,only_csv,tag\n"
                           "longer-than-six,12345.68,7,\n"
                           "ab,,,5%\n");
  free(buf);
  pfi_restab_release(&t);
}

/* A blank cell (a total row's column without a total) prints nothing in the
 * terminal, CSV and HTML, where a missing value prints the null text; JSON
 * has null for both. */
static void blank(void **state) {
  (void)state;
  static const struct pfi_restab_col c3[] = {
      {.name = "job", .kind = PFI_RESTAB_TEXT, .width = 5, .fixed = 1},
      {.name = "cap_w",
       .kind = PFI_RESTAB_NUM,
       .style = 'f',
       .prec = 1,
       .width = 6,
       .fixed = 1,
       .sep = 1},
      {.name = "note", .kind = PFI_RESTAB_TEXT, .sep = 1},
  };
  struct pfi_restab t;
  assert_int_equal(pfi_restab_init(&t, c3, 3), 0);
  pfi_restab_row(&t);
  pfi_restab_text(&t, 0, "a");
  pfi_restab_num(&t, 1, NAN);
  pfi_restab_text(&t, 2, "x");
  pfi_restab_row(&t);
  pfi_restab_text(&t, 0, "total");
  pfi_restab_text(&t, 2, "replaced");
  pfi_restab_blank(&t, 1);
  pfi_restab_blank(&t, 2);
  static const char *want[] = {
      [PFI_RESTAB_TERM] = "job    cap_w note\n"
                          "a          - x\n"
                          "total        \n",
      [PFI_RESTAB_CSV] = "job,cap_w,note\n"
                         "a,-,x\n"
                         "total,,\n",
      [PFI_RESTAB_JSON] = "[\n"
                          "  {\n"
                          "    \"job\": \"a\",\n"
                          "    \"cap_w\": null,\n"
                          "    \"note\": \"x\"\n"
                          "  },\n"
                          "  {\n"
                          "    \"job\": \"total\",\n"
                          "    \"cap_w\": null,\n"
                          "    \"note\": null\n"
                          "  }\n"
                          "]\n",
      [PFI_RESTAB_HTML] =
          "<table class=\"res\">\n"
          "<thead><tr><th>job</th><th>cap_w</th><th>note</th></tr></thead>\n"
          "<tbody>\n"
          "<tr><td>a</td><td class=\"num\">&ndash;</td><td>x</td></tr>\n"
          "<tr><td>total</td><td class=\"num\"></td><td></td></tr>\n"
          "</tbody></table>\n",
  };
  for (int f = PFI_RESTAB_TERM; f <= PFI_RESTAB_HTML; f++) {
    char *buf = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&buf, &n);
    assert_int_equal(pfi_restab_print(&t, (enum pfi_restab_format)f, fp), 0);
    fclose(fp);
    if (strcmp(buf, want[f]) != 0)
      fail_msg("format %d:\n--- got\n%s--- want\n%s", f, buf, want[f]);
    free(buf);
  }
  pfi_restab_release(&t);
}

/* A column quoted in CSV: every cell in quotes (quotes doubled), the null
 * text too, a blank cell empty, the header bare; the terminal unchanged. */
static void quoted(void **state) {
  (void)state;
  static const struct pfi_restab_col c4[] = {
      {.name = "time", .kind = PFI_RESTAB_TEXT, .csv_quote = 1},
      {.name = "n", .kind = PFI_RESTAB_INT},
  };
  struct pfi_restab t;
  assert_int_equal(pfi_restab_init(&t, c4, 2), 0);
  pfi_restab_row(&t);
  pfi_restab_text(&t, 0, "14:00");
  pfi_restab_int(&t, 1, 1);
  pfi_restab_row(&t);
  pfi_restab_text(&t, 0, "say \"x\", y");
  pfi_restab_int(&t, 1, 2);
  pfi_restab_row(&t);
  pfi_restab_int(&t, 1, 3);
  pfi_restab_row(&t);
  pfi_restab_blank(&t, 0);
  pfi_restab_int(&t, 1, 4);
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_int_equal(pfi_restab_print(&t, PFI_RESTAB_CSV, fp), 0);
  fclose(fp);
  assert_string_equal(buf, "time,n\n"
                           "\"14:00\",1\n"
                           "\"say \"\"x\"\", y\",2\n"
                           "\"-\",3\n"
                           ",4\n");
  free(buf);
  fp = open_memstream(&buf, &n);
  assert_int_equal(pfi_restab_print(&t, PFI_RESTAB_TERM, fp), 0);
  fclose(fp);
  assert_string_equal(buf, "time        n\n"
                           "14:00       1\n"
                           "say \"x\", y  2\n"
                           "-           3\n"
                           "            4\n");
  free(buf);
  pfi_restab_release(&t);
}

/* An integer column shown as a boolean in JSON, as its number elsewhere. */
static void boolean(void **state) {
  (void)state;
  static const struct pfi_restab_col c5[] = {
      {.name = "gpu", .kind = PFI_RESTAB_INT},
      {.name = "emulated", .kind = PFI_RESTAB_INT, .json_bool = 1},
  };
  struct pfi_restab t;
  assert_int_equal(pfi_restab_init(&t, c5, 2), 0);
  pfi_restab_row(&t);
  pfi_restab_int(&t, 0, 0);
  pfi_restab_int(&t, 1, 1);
  pfi_restab_row(&t);
  pfi_restab_int(&t, 0, 1);
  pfi_restab_int(&t, 1, 0);
  pfi_restab_row(&t);
  pfi_restab_int(&t, 0, 2);
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_int_equal(pfi_restab_print(&t, PFI_RESTAB_JSON, fp), 0);
  fclose(fp);
  assert_string_equal(buf, "[\n"
                           "  {\n"
                           "    \"gpu\": 0,\n"
                           "    \"emulated\": true\n"
                           "  },\n"
                           "  {\n"
                           "    \"gpu\": 1,\n"
                           "    \"emulated\": false\n"
                           "  },\n"
                           "  {\n"
                           "    \"gpu\": 2,\n"
                           "    \"emulated\": null\n"
                           "  }\n"
                           "]\n");
  free(buf);
  fp = open_memstream(&buf, &n);
  assert_int_equal(pfi_restab_print(&t, PFI_RESTAB_CSV, fp), 0);
  fclose(fp);
  assert_string_equal(buf, "gpu,emulated\n0,1\n1,0\n2,-\n");
  free(buf);
  pfi_restab_release(&t);
}

/* A long row (a 5,000-character name holding a quote) prints whole; a
 * borrowed name (pfi_restab_text_ref) prints like a copied one;
 * counts past the fast path print as printf does. */
static void csv_long_row(void **state) {
  (void)state;
  size_t len = 5000;
  char *name = malloc(len + 1);
  assert_non_null(name);
  memset(name, 'x', len);
  name[0] = '"';
  name[len] = '\0';
  struct pfi_restab t;
  assert_int_equal(pfi_restab_init(&t, cols, 4), 0);
  pfi_restab_row(&t);
  pfi_restab_text_ref(&t, 0, name);
  pfi_restab_num(&t, 1, 250);
  pfi_restab_int(&t, 3, 1234567890123LL);
  pfi_restab_row(&t);
  pfi_restab_text_ref(&t, 0, "short");
  pfi_restab_int(&t, 3, -7);
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_int_equal(pfi_restab_print(&t, PFI_RESTAB_CSV, fp), 0);
  fclose(fp);
  pfi_restab_release(&t);
  /* header, then '"' + '""' + 4,999 x + '"', then the numbers */
  char *want = malloc(len + 200);
  assert_non_null(want);
  size_t k = (size_t)sprintf(want, "job,cap_w,pfi,runs\n\"\"\"");
  memset(want + k, 'x', len - 1);
  k += len - 1;
  sprintf(want + k, "\",250,-,1234567890123\nshort,-,-,-7\n");
  assert_string_equal(buf, want);
  free(buf);
  free(want);
  free(name);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(terminal),     cmocka_unit_test(csv),
      cmocka_unit_test(json),         cmocka_unit_test(html),
      cmocka_unit_test(layout),       cmocka_unit_test(blank),
      cmocka_unit_test(quoted),       cmocka_unit_test(boolean),
      cmocka_unit_test(csv_long_row),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
