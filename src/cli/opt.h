/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One option table per command, as git's parse-options: the same table
 * builds the getopt_long() call and the "Options:" part of --help, so the
 * help lists exactly the options the command accepts. A mistyped long
 * option gets "did you mean '--xyz'?" from the table's names.
 *
 *   static const struct pfi_opt opts[] = {
 *       {"caps", 'c', 0, PFI_ARG_REQ, "LIST", "keep only these caps"},
 *       PFI_OPT_HELP,
 *       PFI_OPT_END};
 *   static const struct pfi_cmd_help help = {"index",
 *       "usage: pfi index [options] FILE\n", "Computes ...\n", opts, NULL, 0};
 *   struct pfi_optparse op;
 *   pfi_opt_start(&op, &help, argc, argv);
 *   while ((c = pfi_opt_next(&op)) != -1)
 *     switch (c) {
 *     case 'h': return pfi_opt_help(&help);
 *     case 'c': ... optarg ...
 *     default: return PFI_EXIT_USAGE;   (the error is printed already)
 *     }
 */
#ifndef PFI_CLI_OPT_H
#define PFI_CLI_OPT_H

#include <getopt.h>
#include <stdio.h>

enum pfi_opt_arg {
  PFI_ARG_NONE, /* --flag */
  PFI_ARG_REQ,  /* --name VALUE or --name=VALUE */
  PFI_ARG_OPT   /* --name or --name=VALUE */
};

/*
 * One option. `lng` NULL ends the table, or, with `help` set, is a heading
 * that starts a group of options in the help ("Sweep options:"). `val` is
 * what pfi_opt_next() returns; `shrt`, when not 0, is also accepted as -c
 * (and must equal `val`). `help` is one paragraph, wrapped to the terminal
 * width of 79 columns; a '\n' in it starts a new line. It is printed as it
 * is: a percent sign is "%", never "%%".
 */
struct pfi_opt {
  const char *lng;
  int val;
  char shrt;
  enum pfi_opt_arg arg;
  const char *argname; /* the value in the help: FILE, N, LIST */
  const char *help;
};

#define PFI_OPT_HELP {"help", 'h', 'h', PFI_ARG_NONE, NULL, "this text"}
/* --wide: terminal tables at their full width (pfi_cli_wide), handled by
 * pfi_opt_next() itself, which never returns its value. */
#define PFI_OPT_WIDE_VAL 0x7f01
#define PFI_OPT_WIDE                                                         \
  {"wide", PFI_OPT_WIDE_VAL, 0, PFI_ARG_NONE, NULL,                          \
   "tables at their full width, not fitted to the terminal's ($COLUMNS, "   \
   "else the terminal's, else 80 columns)"}
#define PFI_OPT_GROUP(title) {NULL, 0, 0, PFI_ARG_NONE, NULL, title}
#define PFI_OPT_END {NULL, 0, 0, PFI_ARG_NONE, NULL, NULL}

/* Stop at the first argument that is not an option (getopt's "+"): a
 * command whose actions take options of their own. */
#define PFI_OPT_IN_ORDER 1u
/* `about` is one text wrapped at 79 columns ('\n' starts a new line), as
 * an option's help is, rather than printed as it is. */
#define PFI_OPT_WRAP_ABOUT 2u
/* `cmd` names a program of its own (the daemons pfid and pfi-agent), not a
 * pfi command: messages read "pfid: ..." and "Try 'pfid --help'.". Such a
 * program also takes --version, listed in its help: pfi_opt_next() prints
 * "pfid 1.2.3" (the version pfi --version prints) and exits with 0. */
#define PFI_OPT_PROGRAM 4u

/* An action of a command with actions (pfi trace summarize): its name and
 * what it does, wrapped like an option's help. */
struct pfi_action {
  const char *name;
  const char *help;
};

/*
 * A command's help: `usage` is the synopsis ("usage: pfi index [options]
 * FILE\n", more lines allowed), `about` the text between it and the
 * options, `footer` the text after them; each printed as it is, each may
 * be NULL; `actions`, when set, are listed after `about` under
 * "Actions:". `cmd` names the command in messages ("index", "trace
 * summarize").
 */
struct pfi_cmd_help {
  const char *cmd;
  const char *usage;
  const char *about;
  const struct pfi_opt *opts;
  const char *footer;
  unsigned flags;
  const struct pfi_action *actions; /* NULL-terminated, or NULL */
};

#define PFI_OPT_MAX 64

struct pfi_optparse {
  const struct pfi_cmd_help *h;
  int argc;
  char **argv;
  struct option lo[PFI_OPT_MAX + 1];
  char so[3 * PFI_OPT_MAX + 4];
};

/* Prepares parsing argv[1..argc-1] (argv[0] is the command's name) with
 * help->opts, and makes help->cmd the name pfi_cli_fail() prints. */
void pfi_opt_start(struct pfi_optparse *p, const struct pfi_cmd_help *help,
                   int argc, char **argv);

/*
 * The next option's `val` with its value in optarg (NULL for none), or -1
 * at the end (optind: the first argument left). A problem (an unknown,
 * ambiguous or mistyped option, a missing or unexpected value) is printed
 * as a usage error and returns '?': the caller then exits with status 2.
 */
int pfi_opt_next(struct pfi_optparse *p);

/* Prints the help to fp. */
void pfi_opt_print_help(const struct pfi_cmd_help *help, FILE *fp);

/* Prints the help to standard output and returns 0, the exit status. */
int pfi_opt_help(const struct pfi_cmd_help *help);

/* The table's long option closest to `name` (a mistyping: a few edits
 * away), or NULL. */
const char *pfi_opt_suggest(const struct pfi_opt *opts, const char *name);

#endif
