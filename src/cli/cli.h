/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Shared helpers of the pfi command's subcommands. Only the CLI prints. */
#ifndef PFI_CLI_H
#define PFI_CLI_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "pfi/duration.h" /* durations: pfi_parse_duration() */
#include "pfi/error.h"
#include "pfi/restab.h" /* result tables: pfi_cli_print_table() */
#include "opt.h"          /* options, pfi_suggest() */

/* Exit statuses, the same for every command (README.md, `pfi help`): 0 ok,
 * 1 failure at run time, 2 bad usage or bad input. */
enum { PFI_EXIT_OK = 0, PFI_EXIT_FAIL = 1, PFI_EXIT_USAGE = 2 };

/* Every subcommand: argv[0] is its name. Returns the exit status. */
#define PFI_CMD(name, help) int cmd_##name(int argc, char **argv);
#include "commands.def"
#undef PFI_CMD

/* Prints "pfi CMD: file:line:col: message" to stderr (CMD: the command
 * running, pfi_cli_set_cmd()) and returns the exit status for the error's
 * class (2 for bad input/usage, 1 otherwise). */
int pfi_cli_fail(const struct pfi_error *err);

/* The command that messages name ("index", "trace summarize"); set by
 * pfi_opt_parse(). NULL: messages start with "pfi:". */
void pfi_cli_set_cmd(const char *cmd);
const char *pfi_cli_cmd(void);

/* Prints "pfi CMD: message\n" to stderr (no hint to --help: a run-time
 * message). */
void pfi_cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Exit status for an error code. */
int pfi_cli_status(int code);

/* Prints "pfi CMD: message" and "Try 'pfi CMD --help'." to stderr; returns 2.
 */
int pfi_cli_usage(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

enum pfi_format { PFI_FMT_TABLE, PFI_FMT_CSV, PFI_FMT_JSON };
#define PFI_FMT_ALLOW_TABLE 1u
#define PFI_FMT_ALLOW_CSV 2u
#define PFI_FMT_ALLOW_JSON 4u

/* Parses --format's value among the allowed ones; returns 0 or 2 after
 * printing a usage error. */
int pfi_cli_format(const char *cmd, const char *s, unsigned allowed,
                   enum pfi_format *out);

/* Prints result table `t` to stdout in `fmt` (table, CSV or JSON), a
 * terminal table fitted to the terminal's width (pfi_restab_term_width())
 * unless pfi_cli_wide. Returns 0, or 1 after a message when memory or
 * writing failed. */
int pfi_cli_print_table(const struct pfi_restab *t, enum pfi_format fmt);

/* Set by --wide (PFI_OPT_WIDE): terminal tables at their full width. */
extern int pfi_cli_wide;
/* --wide, bound to pfi_cli_wide: a row of every command printing tables. */
#define PFI_OPT_WIDE                                                           \
  PFI_OPT_FLAG("wide", 0, &pfi_cli_wide,                                       \
               "tables at their full width, not fitted to the terminal's "    \
               "($COLUMNS, else the terminal's, else 80 columns)")

/* Prints `j` to stdout (indented, keys in insertion order, newline) and
 * decrefs it. Returns 0, or 1 when writing failed. */
int pfi_cli_print_json(json_t *j);

/*
 * A JSON string of `s` that is never NULL: json_string() refuses text that
 * is not UTF-8, and json_object_set_new() then silently leaves the key
 * out. Bytes that do not start a well-formed UTF-8 sequence become U+FFFD
 * (the replacement character); valid text is unchanged. Returns a new
 * reference (json_null() only when out of memory).
 */
json_t *pfi_cli_json_str(const char *s);

/*
 * Prints name `s` in a table cell left-aligned to `width` bytes. A control
 * character (a line break in a quoted CSV field, a tab) would break the
 * table's rows and columns, so each prints as '?'; CSV and JSON output
 * carry the name exactly.
 */
void pfi_cli_put_name(FILE *fp, const char *s, int width);

/*
 * Prints `s` as one CSV field: as it is, or, when it holds a comma, a quote
 * or a line break (a job or device name is the user's), in quotes with each
 * quote doubled, so that the row stays intact.
 */
void pfi_cli_put_csv_field(FILE *fp, const char *s);

/*
 * Parses a list of numbers "200,500,600" or a range "LO:HI:STEP" (inclusive
 * of HI when reached). On success *out is a malloc'd array (caller frees)
 * of *n values. Returns 0 or PFI_EINVAL with a message in err.
 */
int pfi_cli_parse_numlist(const char *s, double **out, size_t *n,
                          struct pfi_error *err);

/* A finite non-negative duration without bounds, for an option with bounds
 * of its own; pfi_parse_duration(s, PFI_DUR_ANY, ...). Options of the kinds
 * in pfi/duration.h (interval, duration, cooldown, grace) use those. */
int pfi_cli_parse_duration(const char *s, double *seconds,
                           struct pfi_error *err);

/* Parses a whole string as a finite double / a non-negative integer;
 * returns 0 or PFI_EINVAL. */
int pfi_cli_parse_double(const char *s, double *out);
int pfi_cli_parse_ulong(const char *s, unsigned long *out);

/*
 * Checks an input file a command is about to read, before it does any
 * work: `path` must name a file this process can open for reading ("-",
 * standard input, and NULL, not given, pass). A missing, unreadable or
 * directory path is bad input, like a malformed file: prints "pfi CMD:
 * WHAT: PATH: REASON" (WHAT the option, e.g. "--curves", or "input") and
 * returns PFI_EXIT_USAGE (2); else 0.
 */
int pfi_cli_input(const char *what, const char *path);

/* True when `s` is "-h" or "--help". */
int pfi_cli_is_help(const char *s);

/* "Did you mean": pfi_edit_distance() and pfi_suggest() (src/base/opt.h). */

/* Parses a comma-separated strategy list into strat[] (at most
 * PFI_STRAT__COUNT, no repeats); NULL gives the default: oracle, equal and,
 * with `have_pfi`, pfi-aware and pfi-curve. Prints a usage error for `cmd`
 * and returns -1 on a bad name. */
int pfi_cli_parse_strategies(const char *s, int have_pfi, int *strat, size_t *n,
                             const char *cmd);

#endif
