/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The manual page writer (src/base/opt.h pfi_roff_put(),
 * pfi_opt_print_man()): roff's escapes and a whole small page, each
 * expected output written by hand from man(7) and groff(7).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "pfi/version.h"
#include "testutil.h"

/* What pfi_roff_put() writes for s. */
static char *roff(const char *s, int verbatim) {
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_non_null(fp);
  pfi_roff_put(fp, s, strlen(s), verbatim);
  assert_int_equal(fclose(fp), 0);
  return buf;
}

static void check(const char *in, int verbatim, const char *want) {
  char *got = roff(in, verbatim);
  assert_string_equal(got, want);
  free(got);
}

static void test_escapes(void **state) {
  (void)state;
  /* A hyphen is a minus sign ("\-"), so that it copies and searches as
   * the ASCII '-' an option name needs. */
  check("--out-dir", 1, "\\-\\-out\\-dir");
  /* A backslash is printed by "\e". */
  check("a\\b", 1, "a\\eb");
  /* A line that starts with '.' or '\'' would be a request: "\&" first;
   * inside a line they are plain text. */
  check(".5 W", 1, "\\&.5 W");
  check("'quoted' x.y", 1, "\\&'quoted' x.y");
  check("a\n.b\n'c", 1, "a\n\\&.b\n\\&'c");
  /* Filled text: a new line is a break, the leading spaces of a line and
   * runs of spaces go (each would be a break or a wide gap). */
  check("one\n  two  three", 0, "one\n.br\ntwo three");
  check("x\n.y", 0, "x\n.br\n\\&.y");
  /* No-fill text keeps its spaces. */
  check("a  b", 1, "a  b");
}

static int flag;
static double num;
static const struct pfi_opt opts[] = {
    PFI_OPT_FLAG("dry-run", 'n', &flag, "change nothing"),
    PFI_OPT_GROUP("Model options:"),
    {.lng = "margin", .arg = PFI_ARG_REQ, .argname = "M", .help = "aim below",
     .type = PFI_OT_NUMBER, .var = &num, .lo = 0, .hi = 0.5,
     .range = PFI_RANGE_HI_OPEN, .def = "0.002"},
    PFI_OPT_HELP,
    PFI_OPT_END};
static const struct pfi_cmd_help help = {
    .cmd = "demo run",
    .usage = "usage: pfi demo run [options] FILE\n"
             "       pfi demo run --dry-run\n",
    .about = "Run the demo.\n\n.dots stay text\n",
    .opts = opts};

static void test_page(void **state) {
  (void)state;
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_non_null(fp);
  pfi_opt_print_man(&help, fp);
  assert_int_equal(fclose(fp), 0);
  char want[2048];
  snprintf(want, sizeof want,
           ".TH PFI\\-DEMO\\-RUN 1 \"\" \"pfi %s\" \"pfi manual\"\n"
           ".SH NAME\n"
           "pfi\\-demo\\-run \\- Run the demo\n"
           ".SH SYNOPSIS\n"
           ".nf\n"
           "pfi demo run [options] FILE\n"
           "pfi demo run \\-\\-dry\\-run\n"
           ".fi\n"
           ".SH DESCRIPTION\n"
           ".nf\n"
           "Run the demo.\n"
           ".sp\n"
           "\\&.dots stay text\n"
           ".fi\n"
           ".SH OPTIONS\n"
           ".TP\n"
           "\\fB\\-n\\fR, \\fB\\-\\-dry\\-run\\fR\n"
           "change nothing\n"
           ".SS Model options\n"
           ".TP\n"
           "\\fB\\-\\-margin\\fR \\fIM\\fR\n"
           "aim below (0 <= M < 0.5; default 0.002)\n"
           ".TP\n"
           "\\fB\\-h\\fR, \\fB\\-\\-help\\fR\n"
           "this text\n",
           PFI_VERSION_STRING);
  assert_string_equal(buf, want);
  free(buf);
}

static int fmt;
static const struct pfi_opt_word fmt_words[] = {
    {"table", 0}, {"csv", 1}, {"", 2}, {NULL, 0}};
static const struct pfi_opt wopts[] = {
    PFI_OPT_CHOICE("format", &fmt, fmt_words, "F", "how"),
    PFI_OPT_FLAG("wide", 0, &flag, "wide"), PFI_OPT_HELP, PFI_OPT_END};

/* The completion's words: each long option, a choice's words (the empty
 * word, an optional value left out, is no word to offer). */
static void test_words(void **state) {
  (void)state;
  struct pfi_cmd_help h = {.cmd = "demo", .opts = wopts};
  char *buf = NULL;
  size_t n = 0;
  FILE *fp = open_memstream(&buf, &n);
  assert_non_null(fp);
  pfi_opt_print_words(&h, fp);
  assert_int_equal(fclose(fp), 0);
  assert_string_equal(buf, "--format\ttable csv\n--wide\n--help\n");
  free(buf);
  h.flags = PFI_OPT_PROGRAM;
  fp = open_memstream(&buf, &n);
  assert_non_null(fp);
  pfi_opt_print_words(&h, fp);
  assert_int_equal(fclose(fp), 0);
  assert_string_equal(buf,
                      "--format\ttable csv\n--wide\n--help\n--version\n");
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escapes),
      cmocka_unit_test(test_page),
      cmocka_unit_test(test_words),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
