/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The result-table printer (pfi/restab.h): each format on a small table
 * whose name holds a comma, a quote, a line break and a tab, with a NaN and
 * a 1e308; the expected text is written out by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/error.h"
#include "pfi/fmt.h"
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
                         "job          cap_w [W]  pfi  runs\n"
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
        "<thead><tr><th>job</th><th>cap_w [W]</th><th>pfi</th><th>runs</th>"
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

/* Significant digits by kind of quantity, worked by hand: digits - 1 -
 * floor(log10 |v|) decimals, none below 0, at most 9. */
static void sig_digits(void **state) {
  (void)state;
  static const struct {
    double v;
    int d;
    const char *want;
  } cases[] = {
      {19572.2499511953, 4, "19572"}, /* integer digits all kept */
      {312.46, 4, "312.5"},           /* 1 decimal */
      {700, 4, "700.0"},
      {1.3056e6, 4, "1305600"},       /* never 1.3056e+06 */
      {0.0512, 3, "0.0512"},          /* 3 - 1 - (-2) = 4 decimals */
      {9.996, 3, "10.0"},             /* the carry: one decimal fewer */
      {-0.0001, 3, "-0.000100"},
      {0, 3, "0"},
      {-1e-12, 3, "0"},               /* rounds to zero in 9 decimals */
      {1.234e16, 4, "1.234e+16"},     /* %g beyond 1e15 */
      {12.5, 3, "12.5"},
      {0.25, 2, "0.25"},
  };
  char buf[PFI_FMT_MAX];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pfi_restab_fmt_sig(buf, cases[i].v, cases[i].d);
    if (strcmp(buf, cases[i].want) != 0)
      fail_msg("%.17g with %d digits: got '%s', want '%s'", cases[i].v,
               cases[i].d, buf, cases[i].want);
  }
  assert_int_equal(pfi_restab_fmt_sig(buf, NAN, 3), 0);
  assert_string_equal(buf, "");
  assert_int_equal(pfi_restab_qty_digits(PFI_RESTAB_Q_POWER), 3);
  assert_int_equal(pfi_restab_qty_digits(PFI_RESTAB_Q_THROUGHPUT), 4);
  assert_int_equal(pfi_restab_qty_digits(PFI_RESTAB_Q_SHARE), 3);
  assert_int_equal(pfi_restab_qty_digits(PFI_RESTAB_Q_NONE), 0);
}

/* A table of power and share columns: the terminal shows each kind's
 * digits and "-" for NaN; CSV keeps the column's own style (%g 6) and
 * its field names; JSON null for the NaN. */
static const struct pfi_restab_col qcols[] = {
    {.name = "gpu", .kind = PFI_RESTAB_TEXT},
    {.name = "power_w",
     .label = "power",
     .unit = "W",
     .kind = PFI_RESTAB_NUM,
     .qty = PFI_RESTAB_Q_POWER},
    {.name = "share_pct",
     .label = "share",
     .unit = "%",
     .kind = PFI_RESTAB_NUM,
     .qty = PFI_RESTAB_Q_SHARE},
    {.name = "time_s",
     .label = "time",
     .unit = "s",
     .kind = PFI_RESTAB_NUM,
     .qty = PFI_RESTAB_Q_SECONDS},
    {.name = "note", .kind = PFI_RESTAB_TEXT},
};

static void qfill(struct pfi_restab *t) {
  assert_int_equal(pfi_restab_init(t, qcols, 5), 0);
  pfi_restab_row(t);
  pfi_restab_text(t, 0, "gpu0");
  pfi_restab_num(t, 1, 19572.2499511953);
  pfi_restab_num(t, 2, 12.3456);
  pfi_restab_num(t, 3, 0.0975);
  pfi_restab_text(t, 4, "a, \"b\"");
  pfi_restab_row(t);
  pfi_restab_text(t, 0, "gpu1");
  pfi_restab_num(t, 1, 700);
  pfi_restab_num(t, 2, NAN);
  pfi_restab_num(t, 3, 3600);
  pfi_restab_text(t, 4, "\x01x\xff");
}

static char *qprint(int width, enum pfi_restab_format f) {
  struct pfi_restab t;
  qfill(&t);
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_non_null(fp);
  if (f == PFI_RESTAB_TERM)
    assert_int_equal(pfi_restab_print_term(&t, fp, width), 0);
  else
    assert_int_equal(pfi_restab_print(&t, f, fp), 0);
  fclose(fp);
  pfi_restab_release(&t);
  return buf;
}

static void expect(char *got, const char *want) {
  if (strcmp(got, want) != 0)
    fail_msg("--- got\n%s--- want\n%s", got, want);
  free(got);
}

/* Widths: gpu 4, "power [W]" 9, "share [%]" 9, "time [s]" 8, note 6
 * ("a, \"b\"", the other "?x\xff" 3 bytes): 4+2+9+2+9+2+8+2+6 = 44. */
static void fit_full(void **state) {
  (void)state;
  static const char full[] = "gpu   power [W]  share [%]  time [s]  note\n"
                             "gpu0      19572       12.3    0.0975  a, \"b\"\n"
                             "gpu1        700          -      3600  ?x\xff\n";
  expect(qprint(0, PFI_RESTAB_TERM), full);  /* --wide */
  expect(qprint(44, PFI_RESTAB_TERM), full); /* exactly fits */
}

/* At 30 columns: panels that repeat the first column, gpu + power + share
 * (4+2+9+2+9 = 26), then gpu + time + note (4+2+8+2+6 = 22). */
static void fit_wrap(void **state) {
  (void)state;
  expect(qprint(30, PFI_RESTAB_TERM), "gpu   power [W]  share [%]\n"
                                      "gpu0      19572       12.3\n"
                                      "gpu1        700          -\n"
                                      "\n"
                                      "gpu   time [s]  note\n"
                                      "gpu0    0.0975  a, \"b\"\n"
                                      "gpu1      3600  ?x\xff\n");
}

/* At 14 columns gpu and "power [W]" (4+2+9 = 15) do not fit side by side:
 * one "header: value" block per row, the values aligned after the longest
 * header and its colon. */
static void fit_records(void **state) {
  (void)state;
  expect(qprint(14, PFI_RESTAB_TERM), "gpu:       gpu0\n"
                                      "power [W]: 19572\n"
                                      "share [%]: 12.3\n"
                                      "time [s]:  0.0975\n"
                                      "note:      a, \"b\"\n"
                                      "\n"
                                      "gpu:       gpu1\n"
                                      "power [W]: 700\n"
                                      "share [%]: -\n"
                                      "time [s]:  3600\n"
                                      "note:      ?x\xff\n");
}

/* CSV: field names with units as written (power_w), numbers in %g 6,
 * "-" for the NaN, the comma and quotes quoted; JSON: the double, null,
 * the control character escaped and the byte 0xff as U+FFFD. */
static void fit_files(void **state) {
  (void)state;
  expect(qprint(10, PFI_RESTAB_CSV), "gpu,power_w,share_pct,time_s,note\n"
                                     "gpu0,19572.2,12.3456,0.0975,"
                                     "\"a, \"\"b\"\"\"\n"
                                     "gpu1,700,-,3600,\x01x\xff\n");
  expect(qprint(10, PFI_RESTAB_JSON), "[\n"
                                      "  {\n"
                                      "    \"gpu\": \"gpu0\",\n"
                                      "    \"power_w\": 19572.2499512,\n"
                                      "    \"share_pct\": 12.3456,\n"
                                      "    \"time_s\": 0.0975,\n"
                                      "    \"note\": \"a, \\\"b\\\"\"\n"
                                      "  },\n"
                                      "  {\n"
                                      "    \"gpu\": \"gpu1\",\n"
                                      "    \"power_w\": 700.0,\n"
                                      "    \"share_pct\": null,\n"
                                      "    \"time_s\": 3600.0,\n"
                                      "    \"note\": \"\\u0001x\xef\xbf\xbd\"\n"
                                      "  }\n"
                                      "]\n");
}

/* A first column named "" starts the CSV text with nothing: no copy into
 * the buffer that does not exist yet (UBSan flagged the zero-length
 * memcpy to NULL, found by fuzz_restab_doc). */
static void csv_empty_first(void **state) {
  (void)state;
  static const struct pfi_restab_col c[] = {
      {.name = "", .kind = PFI_RESTAB_TEXT},
      {.name = "x", .kind = PFI_RESTAB_INT}};
  struct pfi_restab t;
  assert_int_equal(pfi_restab_init(&t, c, 2), 0);
  pfi_restab_row(&t);
  pfi_restab_text(&t, 0, "");
  pfi_restab_int(&t, 1, 1);
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_int_equal(pfi_restab_print(&t, PFI_RESTAB_CSV, fp), 0);
  fclose(fp);
  pfi_restab_release(&t);
  expect(buf, ",x\n,1\n");
}

/* $COLUMNS when a whole number from 20 up, else (not a terminal: a memory
 * stream) the default, 80. */
static void term_width(void **state) {
  (void)state;
  FILE *fp = tmpfile();
  assert_non_null(fp);
  setenv("COLUMNS", "120", 1);
  assert_int_equal(pfi_restab_term_width(fp), 120);
  setenv("COLUMNS", "12x", 1);
  assert_int_equal(pfi_restab_term_width(fp), PFI_RESTAB_WIDTH_DEFAULT);
  setenv("COLUMNS", "19", 1);
  assert_int_equal(pfi_restab_term_width(fp), PFI_RESTAB_WIDTH_DEFAULT);
  unsetenv("COLUMNS");
  assert_int_equal(pfi_restab_term_width(fp), 80);
  fclose(fp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(terminal),     cmocka_unit_test(csv),
      cmocka_unit_test(json),         cmocka_unit_test(html),
      cmocka_unit_test(layout),       cmocka_unit_test(blank),
      cmocka_unit_test(quoted),       cmocka_unit_test(boolean),
      cmocka_unit_test(csv_long_row), cmocka_unit_test(sig_digits),
      cmocka_unit_test(fit_full),     cmocka_unit_test(fit_wrap),
      cmocka_unit_test(fit_records),  cmocka_unit_test(fit_files),
      cmocka_unit_test(term_width),   cmocka_unit_test(csv_empty_first),
  };
  /* Terminal tables fit $COLUMNS: the tests above expect the default. */
  unsetenv("COLUMNS");
  return cmocka_run_group_tests(tests, NULL, NULL);
}
