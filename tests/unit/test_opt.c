/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The option binder (src/base/opt.h): each type stores what the value
 * says, worked by hand (5% is 0.05, 15m is 900 s, a choice's word its
 * value); ranges' ends open and closed; the defaults; the rules between
 * options; the count of arguments; and every usage message in the one form
 * "pfi CMD: --NAME: 'VALUE': WHY" with exit status 2.
 */
#include <stdlib.h>
#include <string.h>

#include "opt.h"
#include "opt_rows.h"
#include "pfi/duration.h"
#include "testutil.h"

static double defd;
static const char *list[2];

static const struct pfi_opt_word colours[] = {
    {"red", 10}, {"green", 20}, {"blue", 30}, {NULL, 0}};

static const struct pfi_opt opts[] = {
    OPT_ROWS_TYPES,
    PFI_OPT_DURATION("dur", &dur, PFI_DUR_ANY, 10, 86400, "D", "a duration"),
    PFI_OPT_CHOICE("colour", &choice, colours, "C", "a colour"),
    PFI_OPT_LIST("item", list, &nlist, 2, "I", "items"),
    OPT_ROW_WORD,
    {.lng = "def", .arg = PFI_ARG_REQ, .argname = "S", .help = "defaulted",
     .type = PFI_OT_NUMBER, .var = &defd, .lo = 0.5, .hi = 60, .def = "3"},
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_EXCLUSIVE("flag", "set"), PFI_RULE_TOGETHER("size", "seed"),
    PFI_RULE_NEEDS("word", "out"), PFI_RULE_END};

static const struct pfi_cmd_help help = {.cmd = "t",
                                         .usage = "usage: pfi t FILE\n",
                                         .opts = opts,
                                         .rules = rules,
                                         .args_min = 1,
                                         .args_max = 2,
                                         .args = "FILE"};

static const struct pfi_opt_rule req_rules[] = {
    PFI_RULE_REQUIRED("out", "int"), PFI_RULE_ONE_OF("flag", "set", "verbose"),
    PFI_RULE_END};
static const struct pfi_cmd_help help_req = {
    .cmd = "r", .opts = opts, .rules = req_rules, .args_max = PFI_ARGS_ANY};

static void reset(void) {
  opt_rows_reset();
  defd = 0;
  list[0] = list[1] = NULL;
}

/* Runs the parser on the words of `line` (argv[0] "t"); its stderr into
 * err (the last message), its return value returned. */
static char err[2048];
static struct pfi_optparse op;
static int run(const struct pfi_cmd_help *h, const char *line) {
  static char buf[1024];
  char *argv[32];
  int argc = 0;
  snprintf(buf, sizeof buf, "t %s", line);
  for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
    argv[argc++] = t;
  argv[argc] = NULL;
  reset();
  fflush(stderr);
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  int rc = pfi_opt_parse(&op, h, argc, argv);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(err, 1, sizeof err - 1, tmp);
  err[n] = '\0';
  fclose(tmp);
  return rc;
}

#define ASSERT_ERR(line, want)                                                 \
  do {                                                                         \
    int rc_ = run(&help, line);                                                \
    ASSERT_EQ_INT(rc_, 2);                                                     \
    assert_string_equal(err, want "\nTry 'pfi t --help'.\n");                 \
  } while (0)

static void types(void **state) {
  ASSERT_EQ_INT(run(&help, "-f -v -v --verbose --out d --int -3 x"),
                PFI_OPT_GO);
  ASSERT_EQ_INT(flag, 1);
  ASSERT_EQ_INT(count, 3);
  assert_string_equal(str, "d");
  ASSERT_EQ_INT(ival, -3);
  ASSERT_EQ_INT(op.rest, 9);
  ASSERT_EQ_INT(run(&help, "--set --seed 18446744073709551615 --size 100 x"),
                PFI_OPT_GO);
  ASSERT_EQ_INT(set, 7);
  assert_true(ul == 18446744073709551615UL);
  ASSERT_EQ_INT(sz, 100);
  /* 5% is 0.05; 0.25 is itself; 15m is 900 s. */
  ASSERT_EQ_INT(run(&help, "--share 5% --num 0.25 --dur 15m x"), PFI_OPT_GO);
  ASSERT_NEAR(share, 0.05, 1e-15);
  ASSERT_NEAR(num, 0.25, 0);
  ASSERT_NEAR(dur, 900, 0);
  ASSERT_EQ_INT(run(&help, "--share 0.05 --open 1e-9 --colour green x"),
                PFI_OPT_GO);
  ASSERT_NEAR(share, 0.05, 0);
  ASSERT_NEAR(openr, 1e-9, 0);
  ASSERT_EQ_INT(choice, 20);
  ASSERT_EQ_INT(run(&help, "--item a --item=b --word w --out o x y"),
                PFI_OPT_GO);
  ASSERT_EQ_INT(nlist, 2);
  assert_string_equal(list[0], "a");
  assert_string_equal(list[1], "b");
  assert_string_equal(cbval, "w");
  ASSERT_EQ_INT(pfi_opt_given(&op, "item"), 2);
  ASSERT_EQ_INT(pfi_opt_given(&op, "flag"), 0);
}

static void defaults(void **state) {
  /* Set before parsing, through the row's own parsing. */
  ASSERT_EQ_INT(run(&help, "x"), PFI_OPT_GO);
  ASSERT_NEAR(defd, 3, 0);
  ASSERT_EQ_INT(pfi_opt_given(&op, "def"), 0);
  ASSERT_EQ_INT(run(&help, "--def 60 x"), PFI_OPT_GO);
  ASSERT_NEAR(defd, 60, 0);
  ASSERT_EQ_INT(pfi_opt_given(&op, "def"), 1);
}

static void ranges(void **state) {
  /* Closed ends take the bound, open ends do not. */
  ASSERT_EQ_INT(run(&help, "--int 5 --num 0 x"), PFI_OPT_GO);
  ASSERT_ERR("--int 6 x", "pfi t: --int: '6': expected -3 <= N <= 5");
  ASSERT_ERR("--int 2.5 x",
             "pfi t: --int: '2.5': expected a whole number, -3 <= N <= 5");
  ASSERT_ERR("--num 0.5 x", "pfi t: --num: '0.5': expected 0 <= M < 0.5");
  ASSERT_ERR("--num -1e-300 x",
             "pfi t: --num: '-1e-300': expected 0 <= M < 0.5");
  ASSERT_ERR("--num nan x",
             "pfi t: --num: 'nan': expected a number, 0 <= M < 0.5");
  ASSERT_ERR("--num 1e999 x",
             "pfi t: --num: '1e999': expected a number, 0 <= M < 0.5");
  ASSERT_ERR("--open 0 x", "pfi t: --open: '0': expected X > 0");
  ASSERT_ERR("--size 0 x", "pfi t: --size: '0': expected 1 <= K <= 100");
  ASSERT_ERR("--size -1 x", "pfi t: --size: '-1': expected 1 <= K <= 100");
  ASSERT_ERR("--seed -1 --size 1 x",
             "pfi t: --seed: '-1': expected a whole number >= 0");
  /* A share is [0, 1] unless the row says otherwise: 150% is 1.5. */
  ASSERT_ERR("--share 150% x", "pfi t: --share: '150%': expected 0 <= R <= 1");
  ASSERT_ERR("--share 5%% x",
             "pfi t: --share: '5%%': expected a share (0.05 or 5%), 0 <= R <= "
             "1");
  ASSERT_EQ_INT(run(&help, "--share 100% x"), PFI_OPT_GO);
  ASSERT_NEAR(share, 1, 0);
  ASSERT_ERR("--dur 9s x", "pfi t: --dur: '9s': expected 10s <= D <= 24h");
  ASSERT_EQ_INT(run(&help, "--dur 24h x"), PFI_OPT_GO);
  ASSERT_NEAR(dur, 86400, 0);
  ASSERT_ERR("--colour pink x",
             "pfi t: --colour: 'pink': expected red, green or blue");
  ASSERT_ERR("--item a --item b --item c x",
             "pfi t: --item: 'c': given more than 2 times");
  /* A callback's reason names the part it refuses itself. */
  ASSERT_ERR("--word bad --out o x", "pfi t: --word: not a good word");
}

static void range_text(void **state) {
  char b[96];
  pfi_opt_range_text(&opts[4], b, sizeof b);
  assert_string_equal(b, "-3 <= N <= 5");
  pfi_opt_range_text(&opts[5], b, sizeof b); /* no bounds */
  assert_string_equal(b, "");
  pfi_opt_range_text(&opts[7], b, sizeof b);
  assert_string_equal(b, "0 <= M < 0.5");
  pfi_opt_range_text(&opts[8], b, sizeof b);
  assert_string_equal(b, "X > 0");
  pfi_opt_range_text(&opts[10], b, sizeof b);
  assert_string_equal(b, "10s <= D <= 24h");
  pfi_opt_range_text(&opts[3], b, sizeof b); /* a string */
  assert_string_equal(b, "");
}

static void rules_and_args(void **state) {
  ASSERT_ERR("--flag --set x", "pfi t: --flag and --set exclude each other");
  ASSERT_ERR("--size 3 x", "pfi t: --size and --seed go together");
  ASSERT_ERR("--seed 3 x", "pfi t: --seed and --size go together");
  ASSERT_EQ_INT(run(&help, "--seed 3 --size 4 x"), PFI_OPT_GO);
  ASSERT_ERR("--word w x", "pfi t: --word needs --out");
  ASSERT_ERR("", "pfi t: missing FILE");
  ASSERT_ERR("x y z", "pfi t: unexpected argument 'z'");
  ASSERT_EQ_INT(run(&help_req, ""), 2);
  assert_string_equal(err, "pfi r: one of --out or --int is required\n"
                           "Try 'pfi r --help'.\n");
  ASSERT_EQ_INT(run(&help_req, "--int 1"), 2);
  assert_string_equal(err, "pfi r: exactly one of --flag, --set or --verbose "
                           "is required\nTry 'pfi r --help'.\n");
  ASSERT_EQ_INT(run(&help_req, "--int 1 -v -f"), 2);
  assert_string_equal(err, "pfi r: --flag and --verbose exclude each other\n"
                           "Try 'pfi r --help'.\n");
  ASSERT_EQ_INT(run(&help_req, "--int 1 -v a b c d"), PFI_OPT_GO);
}

static void getopt_errors(void **state) {
  ASSERT_ERR("--otu d x", "pfi t: unknown option '--otu'; did you mean '--out'?");
  ASSERT_ERR("--flag=1 x", "pfi t: option '--flag' takes no value");
  ASSERT_ERR("x --out", "pfi t: option '--out' needs a value");
  ASSERT_ERR("-z x", "pfi t: unknown option '-z'");
  /* A prefix of one option is that option, of two ambiguous. */
  ASSERT_EQ_INT(run(&help, "--colo red x"), PFI_OPT_GO);
  ASSERT_EQ_INT(choice, 10);
  ASSERT_ERR("--s 1 x", "pfi t: option '--s' is ambiguous (--set, --seed, "
                        "--size, --share)");
}

static void help_text(void **state) {
  fflush(stdout);
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  pfi_opt_print_help(&help, tmp);
  rewind(tmp);
  char h[8192];
  size_t n = fread(h, 1, sizeof h - 1, tmp);
  h[n] = '\0';
  fclose(tmp);
  /* The range and default from the rows themselves. */
  assert_non_null(strstr(h, "  --num M "));
  assert_non_null(strstr(h, "a number (0 <= M < 0.5)\n"));
  assert_non_null(strstr(h, "defaulted (0.5 <= S <= 60; default 3)\n"));
  assert_non_null(strstr(h, "a duration (10s <= D <= 24h)\n"));
  assert_non_null(strstr(h, "  -f, --flag "));
  /* --help prints it and says the command is done with status 0. */
  int saved = dup(1);
  FILE *t2 = tmpfile();
  dup2(fileno(t2), 1);
  reset();
  char a0[] = "t", a1[] = "--help";
  char *argv[] = {a0, a1, NULL};
  int rc = pfi_opt_parse(&op, &help, 2, argv);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  fclose(t2);
  ASSERT_EQ_INT(rc, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(types),          cmocka_unit_test(defaults),
      cmocka_unit_test(ranges),         cmocka_unit_test(range_text),
      cmocka_unit_test(rules_and_args), cmocka_unit_test(getopt_errors),
      cmocka_unit_test(help_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
