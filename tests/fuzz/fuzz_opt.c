/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: pfi_opt_parse() (src/base/opt.h), the option binder every
 * command and daemon parses its argv with. The input is the argv, words
 * split at '\n'; the table has a row of every type and a rule of every
 * kind. Aborts when the parser answers other than PFI_OPT_GO, 0 or 2, or
 * when a value it accepted lies outside its row's range.
 */
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/opt_rows.h"
#include "opt.h"
#include "pfi/duration.h"

static const char *list[3];

static const struct pfi_opt_word words[] = {
    {"table", 0}, {"csv", 1}, {"json", 2}, {NULL, 0}};

static const struct pfi_opt opts[] = {
    OPT_ROWS_TYPES,
    PFI_OPT_DURATION("dur", &dur, PFI_DUR_INTERVAL, 0, 0, "D", "a duration"),
    PFI_OPT_CHOICE("format", &choice, words, "F", "a format"),
    PFI_OPT_LIST("item", list, &nlist, 3, "I", "items"),
    OPT_ROW_WORD,
    {.lng = "opt", .shrt = 'p', .arg = PFI_ARG_OPT, .argname = "V",
     .help = "an optional value", .type = PFI_OT_STRING, .var = &str},
    PFI_OPT_GROUP("More:"),
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {
    PFI_RULE_EXCLUSIVE("flag", "set", "verbose"),
    PFI_RULE_TOGETHER("size", "seed"), PFI_RULE_NEEDS("word", "out", "int"),
    PFI_RULE_REQUIRED("num", "open", "share", "dur"), PFI_RULE_END};

static const struct pfi_cmd_help help = {.cmd = "fuzz",
                                         .usage = "usage: pfi fuzz\n",
                                         .opts = opts,
                                         .rules = rules,
                                         .args_min = 0,
                                         .args_max = 3,
                                         .args = "FILE"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The messages and the help are the parser's output, not the target's:
   * standard output and error go to /dev/null while it runs. */
  static int null_fd = -1, out_fd = -1, err_fd = -1;
  if (null_fd < 0) {
    null_fd = open("/dev/null", O_WRONLY);
    out_fd = dup(1);
    err_fd = dup(2);
    if (null_fd < 0 || out_fd < 0 || err_fd < 0)
      abort();
  }
  if (size > 512)
    return 0;
  char *buf = malloc(size + 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *argv[66];
  int argc = 0;
  argv[argc++] = "fuzz";
  for (char *s = buf; argc < 65;) {
    argv[argc++] = s;
    char *nl = memchr(s, '\n', (size_t)(buf + size - s));
    if (!nl)
      break;
    *nl = '\0';
    s = nl + 1;
  }
  argv[argc] = NULL;
  opt_rows_reset();
  struct pfi_optparse op;
  fflush(stdout);
  fflush(stderr);
  dup2(null_fd, 1);
  dup2(null_fd, 2);
  int rc = pfi_opt_parse(&op, &help, argc, argv);
  fflush(stdout);
  fflush(stderr);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  if (rc != PFI_OPT_GO && rc != 0 && rc != 2)
    abort();
  if (rc == PFI_OPT_GO) {
    if (op.rest < 1 || op.rest > argc || argc - op.rest > 3)
      abort();
    if (ival < -3 || ival > 5 || (sz && (sz < 1 || sz > 100)) ||
        !(num >= 0 && num < 0.5) || !(openr >= 0) || !isfinite(openr) ||
        !(share >= 0 && share <= 1) || nlist > 3 || (set && flag) ||
        (choice < 0 || choice > 2))
      abort();
    if (dur != 0 && !(dur >= pfi_duration_min(PFI_DUR_INTERVAL) &&
                      dur <= pfi_duration_max(PFI_DUR_INTERVAL)))
      abort();
    if (!pfi_opt_given(&op, "num") && !pfi_opt_given(&op, "open") &&
        !pfi_opt_given(&op, "share") && !pfi_opt_given(&op, "dur"))
      abort();
    if (!pfi_opt_given(&op, "size") != !pfi_opt_given(&op, "seed"))
      abort();
  }
  free(buf);
  return 0;
}
