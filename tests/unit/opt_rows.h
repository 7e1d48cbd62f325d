/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The option rows that the binder's unit test (test_opt.c) and its fuzz
 * target (tests/fuzz/fuzz_opt.c) both parse with: a row of each type, with
 * the ranges both check, bound to the variables below. Each adds the rows
 * it checks apart (the duration's range, the choice's words, the list's
 * length, rows of its own). Included by one file of each program.
 */
#ifndef PFI_TEST_OPT_ROWS_H
#define PFI_TEST_OPT_ROWS_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "opt.h"

static int flag, set, count, ival, choice;
static unsigned long ul;
static size_t sz, nlist;
static double num, share, dur, openr;
static const char *str, *cbval;

/* --word W: any word but "" ("empty") and "bad" ("not a good word"). */
static int opt_rows_word(const struct pfi_opt *o, const char *v, char *why,
                         size_t n) {
  if (!*v || strcmp(v, "bad") == 0) {
    snprintf(why, n, *v ? "not a good word" : "empty");
    return -1;
  }
  *(const char **)o->var = v;
  return 0;
}

/* A flag, a set, a count, a string, an int in [-3, 5], any unsigned long,
 * a size in [1, 100], a number in [0, 0.5), one in (0, inf) and a share. */
#define OPT_ROWS_TYPES                                                         \
  PFI_OPT_FLAG("flag", 'f', &flag, "a flag"),                                  \
      PFI_OPT_SET("set", 0, &set, 7, "sets 7"),                                \
      PFI_OPT_COUNT("verbose", 'v', &count, "more"),                           \
      PFI_OPT_STRING("out", 'o', &str, "DIR", "where"),                        \
      PFI_OPT_INT("int", &ival, -3, 5, "N", "an int"),                         \
      PFI_OPT_ULONG("seed", &ul, 0, 0, "N", "a seed"),                         \
      PFI_OPT_SIZE("size", &sz, 1, 100, "K", "a size"),                        \
      PFI_OPT_NUMBER("num", &num, 0, 0.5, PFI_RANGE_HI_OPEN, "M", "a number"), \
      PFI_OPT_NUMBER("open", &openr, 0, 0,                                     \
                     PFI_RANGE_LO_OPEN | PFI_RANGE_NO_HI, "X", "positive"),    \
      PFI_OPT_SHARE("share", &share, 0, 0, 0, "R", "a share")
#define OPT_ROW_WORD                                                           \
  PFI_OPT_CALLBACK("word", &cbval, opt_rows_word, "W", "a word")

/* The variables above back to their state before a parse. */
static void opt_rows_reset(void) {
  flag = set = count = ival = choice = 0;
  ul = 0;
  sz = nlist = 0;
  num = share = dur = openr = 0;
  str = cbval = NULL;
}

#endif
