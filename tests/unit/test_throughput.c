/* SPDX-License-Identifier: GPL-3.0-or-later */
/* JSONL and regex throughput reports. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pfi/phase.h"
#include "pfi/throughput.h"
#include "testutil.h"

static int parse(const char *s, struct pfi_step *st, int *el,
                 struct pfi_error *err) {
  return pfi_jsonl_parse_line("t.jsonl", 7, s, strlen(s), st, el, err);
}

/* A trainer's phase and announced pause (struct pfi_step_phase): read
 * when asked, each name to its phase, absent fields -1 / NaN, a bad value
 * an error naming the field at the line. */
static void jsonl_phase(void **state) {
  (void)state;
  struct pfi_step st;
  struct pfi_step_phase ph;
  struct pfi_error err;
  const char *ok = "{\"t\": 10, \"tokens_per_s\": 5, \"phase\": "
                   "\"training\", \"next_pause_s\": 4.5, "
                   "\"next_pause_len_s\": 45, \"end_in_s\": 7}";
  assert_int_equal(pfi_jsonl_parse_line_phase("t.jsonl", 3, ok, strlen(ok),
                                              &st, NULL, &ph, &err),
                   1);
  assert_int_equal(ph.phase, PFI_PHASE_TRAINING);
  ASSERT_NEAR(ph.next_pause_s, 4.5, 0);
  ASSERT_NEAR(ph.next_pause_len_s, 45, 0);
  ASSERT_NEAR(ph.end_in_s, 7, 0);
  static const struct {
    const char *name;
    int ph;
  } names[] = {{"checkpoint", PFI_PHASE_PAUSE}, {"evaluation", PFI_PHASE_PAUSE},
               {"eval", PFI_PHASE_PAUSE},       {"validation", PFI_PHASE_PAUSE},
               {"pause", PFI_PHASE_PAUSE},      {"startup", PFI_PHASE_STARTUP},
               {"warmup", PFI_PHASE_WARMUP}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char line[128];
    snprintf(line, sizeof line, "{\"tokens_per_s\": 0, \"phase\": \"%s\"}",
             names[i].name);
    assert_int_equal(pfi_jsonl_parse_line_phase("t.jsonl", 3, line,
                                                strlen(line), &st, NULL, &ph,
                                                &err),
                     1);
    assert_int_equal(ph.phase, names[i].ph);
    assert_true(isnan(ph.next_pause_s) && isnan(ph.next_pause_len_s) &&
                isnan(ph.end_in_s));
  }
  const char *none = "{\"tokens_per_s\": 5}";
  assert_int_equal(pfi_jsonl_parse_line_phase("t.jsonl", 3, none, strlen(none),
                                              &st, NULL, &ph, &err),
                   1);
  assert_int_equal(ph.phase, -1);
  static const char *const bad[][2] = {
      {"{\"tokens_per_s\": 5, \"phase\": \"nap\"}", "\"phase\""},
      {"{\"tokens_per_s\": 5, \"phase\": 2}", "\"phase\""},
      {"{\"tokens_per_s\": 5, \"next_pause_s\": -1}", "next_pause_s"},
      {"{\"tokens_per_s\": 5, \"next_pause_s\": 2e7}", "next_pause_s"},
      {"{\"tokens_per_s\": 5, \"next_pause_len_s\": \"1\"}",
       "next_pause_len_s"},
      {"{\"tokens_per_s\": 5, \"end_in_s\": -3}", "end_in_s"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(pfi_jsonl_parse_line_phase("t.jsonl", 3, bad[i][0],
                                                strlen(bad[i][0]), &st, NULL,
                                                &ph, &err),
                     PFI_EPARSE);
    ASSERT_EQ_INT(err.line, 3);
    if (!strstr(err.msg, bad[i][1]))
      fail_msg("%s: '%s' does not name %s", bad[i][0], err.msg, bad[i][1]);
  }
  /* Not asked: the plain parser takes a line with a bad phase as before. */
  assert_int_equal(parse(bad[0][0], &st, NULL, &err), 1);
}

static void jsonl_lines(void **state) {
  (void)state;
  struct pfi_step st;
  struct pfi_error err;
  int el;
  assert_int_equal(parse("{\"t\": 10.5, \"tokens\": 1000, \"step\": 3, "
                         "\"loss\": -0.5, \"mfu\": 0.4}",
                         &st, &el, &err),
                   1);
  ASSERT_NEAR(st.job_t_s, 10.5, 0);
  ASSERT_NEAR(st.tokens, 1000, 0);
  ASSERT_NEAR(st.step, 3, 0);
  ASSERT_NEAR(st.loss, -0.5, 0);
  ASSERT_NEAR(st.mfu, 0.4, 0);
  assert_true(isnan(st.tokens_per_s));
  assert_int_equal(el, 0);
  assert_int_equal(
      parse("{\"elapsed_s\": 2, \"tokens_per_s\": 5}", &st, &el, &err), 1);
  assert_int_equal(el, 1);
  ASSERT_NEAR(st.tokens_per_s, 5, 0);
  assert_int_equal(parse("   ", &st, &el, &err), 0);
  /* Errors, each located at line 7. */
  assert_int_equal(parse("{\"t\": 1", &st, &el, &err), PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 7);
  assert_string_equal(err.file, "t.jsonl");
  assert_int_equal(parse("[1,2]", &st, &el, &err), PFI_EPARSE);
  assert_int_equal(parse("{\"t\": 1}", &st, &el, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "tokens"));
  assert_int_equal(parse("{\"tokens\": 5}", &st, &el, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "timestamp"));
  assert_int_equal(parse("{\"t\": 1, \"tokens\": -5}", &st, &el, &err),
                   PFI_EPARSE);
  assert_int_equal(parse("{\"t\": 1, \"tokens\": \"5\"}", &st, &el, &err),
                   PFI_EPARSE);
  assert_int_equal(parse("{\"t\": 1, \"t\": 2, \"tokens\": 5}", &st, &el, &err),
                   PFI_EPARSE);
  /* A raw NUL byte, after a complete object or inside one, is refused at
   * its column (1-based: byte 22 of the first, 19 of the
   * second, which jansson alone takes for a whole object). */
  static const char nul1[] = "{\"tokens_per_s\": 5}  \0 junk";
  static const char nul2[] = "{\"tokens_per_s\": 5\0}"; /* jansson: ok */
  assert_int_equal(
      pfi_jsonl_parse_line("t.jsonl", 7, nul1, sizeof nul1 - 1, &st, &el, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.column, 22);
  assert_non_null(strstr(err.msg, "NUL"));
  assert_int_equal(
      pfi_jsonl_parse_line("t.jsonl", 7, nul2, sizeof nul2 - 1, &st, &el, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.column, 19);
}

/* Cumulative tokens give rates by difference: (3000-1000)/(12-10) = 1000
 * and (3500-3000)/(12.5-12) = 1000 tokens/s exactly. */
static void jsonl_collector(void **state) {
  (void)state;
  char path[] = "/tmp/pfi-test-tput-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  char spec[64];
  snprintf(spec, sizeof spec, "jsonl:%s", path);
  struct pfi_tput *tp;
  struct pfi_error err;
  assert_int_equal(pfi_tput_open(&tp, spec, &err), 0);
  /* Device clock 100 s at job start, wall clock 10 s. */
  assert_int_equal(pfi_tput_start(tp, 100, 10, &err), 0);
  FILE *fp = fopen(path, "a");
  fputs("{\"t\": 10, \"tokens\": 1000}\n{\"t\": 12, \"tokens\": 3000}\n"
        "garbage\n{\"t\": 12.5, \"tok",
        fp);
  fclose(fp);
  assert_int_equal(pfi_tput_poll(tp, 103, 0, &err), 0);
  const struct pfi_step *s;
  size_t n = pfi_tput_take(tp, &s);
  ASSERT_EQ_INT(n, 2);
  ASSERT_NEAR(s[0].t_s, 100, 1e-9);
  assert_true(isnan(s[0].tokens_per_s));
  ASSERT_NEAR(s[1].t_s, 102, 1e-9);
  ASSERT_NEAR(s[1].tokens_per_s, 1000, 1e-9);
  /* The partial line completes on the next poll. */
  fp = fopen(path, "a");
  fputs("ens\": 3500}\n", fp);
  fclose(fp);
  assert_int_equal(pfi_tput_poll(tp, 104, 1, &err), 0);
  n = pfi_tput_take(tp, &s);
  ASSERT_EQ_INT(n, 1);
  ASSERT_NEAR(s[0].tokens_per_s, 1000, 1e-9);
  ASSERT_NEAR(pfi_tput_last_rate(tp), 1000, 1e-9);
  struct pfi_error first;
  ASSERT_EQ_INT(pfi_tput_bad_lines(tp, &first), 1);
  ASSERT_EQ_INT(first.line, 3);
  pfi_tput_close(tp);
  unlink(path);
}

/* A cumulative counter at 655 tokens/s (6550 every 10 s) with one line that
 * drops to 0 at t = 1000 s: the drop is a reset, not counted, and the next
 * line (t = 1005 s, 658 275 tokens, back on the old count) gets its rate
 * from the last good line: (658275 - 648450) / (1005 - 990) = 655, not the
 * jump 658275 / 5 = 131 655. A counter that really restarts (0 at 1020 s,
 * then 3275 at 1030 s) rates from the dropped value: 3275 / 10 = 327.5. */
static void jsonl_counter_reset(void **state) {
  (void)state;
  char path[] = "/tmp/pfi-test-tput-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  char spec[64];
  snprintf(spec, sizeof spec, "jsonl:%s", path);
  struct pfi_tput *tp;
  struct pfi_error err;
  assert_int_equal(pfi_tput_open(&tp, spec, &err), 0);
  assert_int_equal(pfi_tput_start(tp, 0, 0, &err), 0);
  FILE *fp = fopen(path, "a");
  fputs("{\"elapsed_s\": 980, \"tokens\": 641900}\n"
        "{\"elapsed_s\": 990, \"tokens\": 648450}\n"
        "{\"elapsed_s\": 1000, \"tokens\": 0}\n"
        "{\"elapsed_s\": 1005, \"tokens\": 658275}\n"
        "{\"elapsed_s\": 1015, \"tokens\": 664825}\n"
        "{\"elapsed_s\": 1020, \"tokens\": 0}\n"
        "{\"elapsed_s\": 1030, \"tokens\": 3275}\n",
        fp);
  fclose(fp);
  assert_int_equal(pfi_tput_poll(tp, 2000, 1, &err), 0);
  const struct pfi_step *s;
  size_t n = pfi_tput_take(tp, &s);
  ASSERT_EQ_INT(n, 7);
  assert_true(isnan(s[0].tokens_per_s));
  ASSERT_NEAR(s[1].tokens_per_s, 655, 1e-9);
  assert_true(isnan(s[2].tokens_per_s));
  ASSERT_NEAR(s[3].tokens_per_s, 655, 1e-9);
  ASSERT_NEAR(s[4].tokens_per_s, 655, 1e-9);
  assert_true(isnan(s[5].tokens_per_s));
  ASSERT_NEAR(s[6].tokens_per_s, 327.5, 1e-9);
  struct pfi_error first;
  ASSERT_EQ_INT(pfi_tput_resets(tp, &first), 2);
  ASSERT_EQ_INT(first.line, 3);
  assert_non_null(strstr(first.msg, "reset"));
  pfi_tput_close(tp);
  unlink(path);
}

static void regex_collector(void **state) {
  (void)state;
  struct pfi_tput *tp;
  struct pfi_error err;
  assert_int_equal(pfi_tput_open(&tp, "regex:tok/s=([0-9.]+)", &err), 0);
  assert_int_equal(pfi_tput_start(tp, 0, 0, &err), 0);
  const char out[] = "step 1 tok/s=1234.5 loss 2\nno match\nstep 2 tok/s=1";
  pfi_tput_feed(tp, out, sizeof out - 1, 50);
  const struct pfi_step *s;
  size_t n = pfi_tput_take(tp, &s);
  ASSERT_EQ_INT(n, 1);
  ASSERT_NEAR(s[0].tokens_per_s, 1234.5, 0);
  ASSERT_NEAR(s[0].t_s, 50, 0);
  pfi_tput_feed(tp, "00\n", 3, 55);
  n = pfi_tput_take(tp, &s);
  ASSERT_EQ_INT(n, 1);
  ASSERT_NEAR(s[0].tokens_per_s, 100, 0);
  pfi_tput_close(tp);
  /* Bad specs. */
  assert_int_equal(pfi_tput_open(&tp, "regex:([", &err), PFI_EINVAL);
  assert_int_equal(pfi_tput_open(&tp, "regex:no group", &err), PFI_EINVAL);
  assert_int_equal(pfi_tput_open(&tp, "csv:x", &err), PFI_EINVAL);
  assert_int_equal(pfi_tput_open(&tp, "jsonl:", &err), PFI_EINVAL);
}

/* Repetitions that regcomp copies out: '+' doubles its operand, {m,n} makes
 * max(m,n) copies, a group counts one more atom. (x{255}) is 256 atoms, 15
 * of those 3,840 (and 3 for ([0-9]+)): within 4,096. One '+' more doubles it: refused, as is
 * a stack of 22 '+' (2^22 copies: gigabytes in regcomp). */
static void regex_expansion_bound(void **state) {
  (void)state;
  struct pfi_tput *tp;
  struct pfi_error err;
  assert_int_equal(pfi_tput_open(&tp, "regex:(x{255}){15}([0-9]+)", &err), 0);
  pfi_tput_close(tp);
  assert_int_equal(pfi_tput_open(&tp, "regex:((x{255}){15})+([0-9]+)", &err),
                   PFI_EINVAL);
  assert_non_null(strstr(err.msg, "4096"));
  /* Stacked through groups: ((((a+)+)+)...)+, 22 deep, 2^22 copies. */
  char spec[160] = "regex:([0-9]+)";
  for (int i = 0; i < 22; i++)
    strcat(spec, "(");
  strcat(spec, "a");
  for (int i = 0; i < 22; i++)
    strcat(spec, ")+");
  assert_int_equal(pfi_tput_open(&tp, spec, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "4096"));
  /* A repetition of a repetition ('a++', the fuzzer's '=*****++' that kept
   * glibc's matcher busy for over 25 s) is refused at once, whatever it
   * would expand to; an escaped '*' or '+' is a character, not one. */
  const char *stacked[] = {"regex:([0-9]+)a++", "regex:([0-9]+)a**",
                           "regex:([0-9]+)a{2}+", "regex:([0-9]+) x?*",
                           "regex:=*****++$([0-9]+)",
                           /* after a bracket holding a '[' (the fuzzer's
                            * "[\\0-[]1().++***++9", over 30 s) */
                           "regex:[\\0-[]1().++***++9([0-9]+)"};
  for (size_t i = 0; i < sizeof stacked / sizeof *stacked; i++) {
    assert_int_equal(pfi_tput_open(&tp, stacked[i], &err), PFI_EINVAL);
    assert_non_null(strstr(err.msg, "repetition of a repetition"));
  }
  assert_int_equal(pfi_tput_open(&tp, "regex:a\\*+ ([0-9]+)", &err), 0);
  pfi_tput_close(tp);
  assert_int_equal(pfi_tput_open(&tp, "regex:[*+]+ ([0-9]+)", &err), 0);
  pfi_tput_close(tp);
  /* A ']' first in a bracket is a character: "[]*+]+" is one repetition. */
  assert_int_equal(pfi_tput_open(&tp, "regex:[]*+]+ ([0-9]+)", &err), 0);
  pfi_tput_close(tp);
  assert_int_equal(pfi_tput_open(&tp, "regex:[^]*+]+ ([0-9]+)", &err), 0);
  pfi_tput_close(tp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(jsonl_lines),
      cmocka_unit_test(jsonl_phase),
      cmocka_unit_test(jsonl_collector),
      cmocka_unit_test(jsonl_counter_reset),
      cmocka_unit_test(regex_collector),
      cmocka_unit_test(regex_expansion_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
