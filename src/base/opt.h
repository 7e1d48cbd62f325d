/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One option table per command, as git's parse-options: the same table
 * builds the getopt_long() call and the "Options:" part of --help, so the
 * help lists exactly the options the command accepts. A mistyped long
 * option gets "did you mean '--xyz'?" from the table's names.
 *
 * Each row names the variable it sets and the value's type, range and
 * default; the command's entry names the rules between options and how
 * many arguments it takes; pfi_opt_parse() does the rest, and every usage
 * message has the same form: "pfi CMD: --NAME: 'VALUE': WHY", then
 * "Try 'pfi CMD --help'.", exit status 2.
 *
 *   static double margin = 0.002;
 *   static const char *out;
 *   static const struct pfi_opt opts[] = {
 *       PFI_OPT_NUMBER("margin", &margin, 0, 0.5, PFI_RANGE_HI_OPEN, "M",
 *                      "aim this share below the target"),
 *       PFI_OPT_STRING("out", 'o', &out, "DIR", "where the tables go"),
 *       PFI_OPT_HELP, PFI_OPT_END};
 *   static const struct pfi_opt_rule rules[] = {
 *       PFI_RULE_REQUIRED("out"), PFI_RULE_END};
 *   static const struct pfi_cmd_help help = {.cmd = "x", .usage = ...,
 *       .opts = opts, .rules = rules, .args_min = 1, .args_max = 1};
 *   struct pfi_optparse op;
 *   int st = pfi_opt_parse(&op, &help, argc, argv);
 *   if (st != PFI_OPT_GO)
 *     return st;            (0 after --help, 2 after a usage error)
 *   ... argv[op.rest .. argc) are the arguments ...
 */
#ifndef PFI_BASE_OPT_H
#define PFI_BASE_OPT_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

enum pfi_opt_arg {
  PFI_ARG_NONE, /* --flag */
  PFI_ARG_REQ,  /* --name VALUE or --name=VALUE */
  PFI_ARG_OPT   /* --name or --name=VALUE */
};

/*
 * One option. `lng` NULL ends the table, or, with `help` set, is a heading
 * that starts a group of options in the help ("Sweep options:"). `shrt`,
 * when not 0, is also accepted as -c. `help` is one paragraph, wrapped to the terminal
 * width of 79 columns; a '\n' in it starts a new line. It is printed as it
 * is: a percent sign is "%", never "%%".
 */
/* What a bound row does with its value (pfi_opt_parse()). */
enum pfi_opt_type {
  PFI_OT_NONE = 0,   /* a heading or the end of the table */
  PFI_OT_HELP,       /* prints the help; the command exits with 0 */
  PFI_OT_FLAG,       /* int *var = 1 */
  PFI_OT_SET,        /* int *var = ival */
  PFI_OT_COUNT,      /* int *var += 1 each time */
  PFI_OT_STRING,     /* const char **var = the value (argv's) */
  PFI_OT_INT,        /* int *var: a whole number in the range */
  PFI_OT_ULONG,      /* unsigned long *var: a whole number in the range */
  PFI_OT_SIZE,       /* size_t *var: a whole number in the range */
  PFI_OT_NUMBER,     /* double *var: a finite number in the range */
  PFI_OT_SHARE,      /* double *var: "5%" or 0.05, as 0.05, in the range */
  PFI_OT_DURATION,   /* double *var, seconds: "90", "15m", "2h" (ival: the
                        pfi_duration_kind), in the range or the kind's */
  PFI_OT_CHOICE,     /* int *var = the value of the word given, and, with
                        var2, const char **var2 = the word; an empty word
                        stands for an optional value left out */
  PFI_OT_LIST,       /* const char **var: each value appended, *var2 (a
                        size_t) counting them, at most `hi` */
  PFI_OT_CALLBACK    /* cb(row, value, why): the command's own parsing */
};

/* A range's ends: open (the bound itself is out) or absent. */
#define PFI_RANGE_LO_OPEN 1u
#define PFI_RANGE_HI_OPEN 2u
#define PFI_RANGE_NO_LO 4u
#define PFI_RANGE_NO_HI 8u
#define PFI_RANGE_ANY (PFI_RANGE_NO_LO | PFI_RANGE_NO_HI)

/* A word of a choice and the value it stands for. */
struct pfi_opt_word {
  const char *word;
  int val;
};

/* --format's words; the values are enum pfi_format's (table 0, csv 1,
 * json 2). */
extern const struct pfi_opt_word pfi_opt_formats[];      /* table csv json */
extern const struct pfi_opt_word pfi_opt_formats_tc[];   /* table csv */
extern const struct pfi_opt_word pfi_opt_formats_tj[];   /* table json */
extern const struct pfi_opt_word pfi_opt_formats_cj[];   /* csv json */

struct pfi_opt;
/* A callback row's parser: 0, or -1 with the reason in why[0..n), naming
 * the part of the value it refuses ("'abc': not a number"); the parser
 * prints it as "--NAME: WHY". */
typedef int (*pfi_opt_cb)(const struct pfi_opt *o, const char *value,
                          char *why, size_t n);

struct pfi_opt {
  const char *lng;
  char shrt;
  enum pfi_opt_arg arg;
  const char *argname; /* the value in the help: FILE, N, LIST */
  const char *help;
  /* What the value does, where it goes. */
  enum pfi_opt_type type;
  void *var;
  void *var2;  /* PFI_OT_LIST: size_t count */
  double lo, hi;
  unsigned range; /* PFI_RANGE_* */
  int ival;       /* PFI_OT_SET: the value; PFI_OT_DURATION: the kind */
  const struct pfi_opt_word *words; /* PFI_OT_CHOICE; ends with NULL */
  pfi_opt_cb cb;
  const char *def; /* the default, as given on the command line: set
                      before parsing and shown in the help */
};

/* A pointer to `var` when it has type `type *` (else the compiler warns). */
#define PFI_OPT_VAR(type, var) ((void *)(1 ? (var) : (type *)0))

#define PFI_OPT_HELP                                                           \
  {.lng = "help", .shrt = 'h', .help = "this text", .type = PFI_OT_HELP}
#define PFI_OPT_FLAG(l, s, v, h)                                               \
  {.lng = l, .shrt = s, .arg = PFI_ARG_NONE, .help = h, .type = PFI_OT_FLAG,   \
   .var = PFI_OPT_VAR(int, v)}
#define PFI_OPT_SET(l, s, v, x, h)                                             \
  {.lng = l, .shrt = s, .arg = PFI_ARG_NONE, .help = h, .type = PFI_OT_SET,    \
   .var = PFI_OPT_VAR(int, v), .ival = x}
#define PFI_OPT_COUNT(l, s, v, h)                                              \
  {.lng = l, .shrt = s, .arg = PFI_ARG_NONE, .help = h, .type = PFI_OT_COUNT,  \
   .var = PFI_OPT_VAR(int, v)}
#define PFI_OPT_STRING(l, s, v, an, h)                                         \
  {.lng = l, .shrt = s, .arg = PFI_ARG_REQ, .argname = an, .help = h,          \
   .type = PFI_OT_STRING, .var = PFI_OPT_VAR(const char *, v)}
#define PFI_OPT_INT(l, v, lo_, hi_, an, h)                                     \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_INT, .var = PFI_OPT_VAR(int, v), .lo = lo_, .hi = hi_}
#define PFI_OPT_ULONG(l, v, lo_, hi_, an, h)                                   \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_ULONG, .var = PFI_OPT_VAR(unsigned long, v), .lo = lo_,      \
   .hi = hi_}
#define PFI_OPT_SIZE(l, v, lo_, hi_, an, h)                                    \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_SIZE, .var = PFI_OPT_VAR(size_t, v), .lo = lo_, .hi = hi_}
#define PFI_OPT_NUMBER(l, v, lo_, hi_, rg, an, h)                              \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_NUMBER, .var = PFI_OPT_VAR(double, v), .lo = lo_,            \
   .hi = hi_, .range = rg}
#define PFI_OPT_SHARE(l, v, lo_, hi_, rg, an, h)                               \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_SHARE, .var = PFI_OPT_VAR(double, v), .lo = lo_, .hi = hi_,  \
   .range = rg}
/* A duration of `kind` (enum pfi_duration_kind) within lo_..hi_ seconds;
 * both 0: the kind's own bounds. */
#define PFI_OPT_DURATION(l, v, kind, lo_, hi_, an, h)                          \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_DURATION, .var = PFI_OPT_VAR(double, v), .ival = kind,       \
   .lo = lo_, .hi = hi_}
#define PFI_OPT_CHOICE(l, v, w, an, h)                                         \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_CHOICE, .var = PFI_OPT_VAR(int, v), .words = w}
#define PFI_OPT_LIST(l, v, n, max, an, h)                                      \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_LIST, .var = PFI_OPT_VAR(const char *, v),                   \
   .var2 = PFI_OPT_VAR(size_t, n), .hi = max}
#define PFI_OPT_CALLBACK(l, v, f, an, h)                                       \
  {.lng = l, .arg = PFI_ARG_REQ, .argname = an, .help = h,                     \
   .type = PFI_OT_CALLBACK, .var = v, .cb = f}
#define PFI_OPT_GROUP(title) {.lng = NULL, .help = title}
#define PFI_OPT_END {.lng = NULL, .help = NULL}

/* Stop at the first argument that is not an option (getopt's "+"): a
 * command whose actions take options of their own. */
#define PFI_OPT_IN_ORDER 1u
/* `about` is one text wrapped at 79 columns ('\n' starts a new line), as
 * an option's help is, rather than printed as it is. */
#define PFI_OPT_WRAP_ABOUT 2u
/* `cmd` names a program of its own (the daemons pfid and pfi-agent), not a
 * pfi command: messages read "pfid: ..." and "Try 'pfid --help'.". Such a
 * program also takes --version, listed in its help: pfi_opt_parse() prints
 * "pfid 1.2.3" (the version pfi --version prints) and exits with 0. */
#define PFI_OPT_PROGRAM 4u

/* An action of a command with actions (pfi trace summarize): its name and
 * what it does, wrapped like an option's help. */
struct pfi_action {
  const char *name;
  const char *help;
};

/* A rule between options, by their long names. */
enum pfi_opt_rule_kind {
  PFI_RULE_NONE = 0, /* ends the list */
  PFI_RULE_REQ,      /* at least one of the names is given */
  PFI_RULE_EXCL,     /* at most one of the names is given */
  PFI_RULE_TOGETHER, /* all of the names or none */
  PFI_RULE_NEEDS,    /* the first, given, needs each of the others */
  PFI_RULE_ONE       /* exactly one of the names is given */
};

#define PFI_RULE_MAX_NAMES 4
struct pfi_opt_rule {
  enum pfi_opt_rule_kind kind;
  const char *names[PFI_RULE_MAX_NAMES];
};

#define PFI_RULE_REQUIRED(...) {PFI_RULE_REQ, {__VA_ARGS__}}
#define PFI_RULE_EXCLUSIVE(...) {PFI_RULE_EXCL, {__VA_ARGS__}}
#define PFI_RULE_TOGETHER(...) {PFI_RULE_TOGETHER, {__VA_ARGS__}}
#define PFI_RULE_NEEDS(...) {PFI_RULE_NEEDS, {__VA_ARGS__}}
#define PFI_RULE_ONE_OF(...) {PFI_RULE_ONE, {__VA_ARGS__}}
#define PFI_RULE_END {PFI_RULE_NONE, {NULL}}

/* args_max for any number of arguments. */
#define PFI_ARGS_ANY (-1)

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
  /* pfi_opt_parse() only: the rules between options (ending with
   * PFI_RULE_END, or NULL), and how many arguments are left after the
   * options (args_max PFI_ARGS_ANY: no most). `args` names them in the
   * message when too few are given ("FILE"). */
  const struct pfi_opt_rule *rules;
  int args_min, args_max;
  const char *args;
};

#define PFI_OPT_MAX 64

struct pfi_optparse {
  const struct pfi_cmd_help *h;
  int argc;
  char **argv;
  struct option lo[PFI_OPT_MAX + 1];
  char so[3 * PFI_OPT_MAX + 4];
  /* pfi_opt_parse(): how often each row (by its index in the table) was
   * given, and the index of the first argument after the options. */
  unsigned short given[PFI_OPT_MAX * 2];
  int rest;
};

/* pfi_opt_parse()'s answer when the command goes on; any other is the
 * exit status it returns now (0 after --help, 2 after a usage error). */
#define PFI_OPT_GO (-1)

/*
 * Parses argv[1..argc-1] by help->opts: each bound row stores its value in
 * its variable (the defaults first), then the rules and the count of
 * arguments are checked. Returns PFI_OPT_GO (p->rest: the first argument
 * after the options), 0 after printing the help, or 2 after printing a
 * usage error "pfi CMD: --NAME: 'VALUE': WHY" (a program of its own,
 * PFI_OPT_PROGRAM: "pfid: ..."). Rows of the older form (PFI_OT_CALLER)
 * are not taken.
 */
int pfi_opt_parse(struct pfi_optparse *p, const struct pfi_cmd_help *help,
                  int argc, char **argv);

/* How often the option named `lng` was given to pfi_opt_parse(). */
unsigned pfi_opt_given(const struct pfi_optparse *p, const char *lng);

/* Prints a usage error as pfi_opt_parse() does ("pfi CMD: MESSAGE", "Try
 * 'pfi CMD --help'.") and returns 2, for a check the rules cannot state. */
int pfi_opt_usage(const struct pfi_cmd_help *help, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The command that messages name ("index", "trace summarize"), set by
 * pfi_opt_start() and pfi_opt_parse(); NULL before. */
void pfi_opt_set_cmd(const char *cmd);
const char *pfi_opt_cmd(void);

/* Writes a row's range as the help shows it ("[0, 0.5)", "[10s, 24h]",
 * ">= 1") into buf; "" for a row without one. */
void pfi_opt_range_text(const struct pfi_opt *o, char *buf, size_t n);

/* Prints the help to fp. */
void pfi_opt_print_help(const struct pfi_cmd_help *help, FILE *fp);

/*
 * The help as a manual page (roff, man(7)): NAME, SYNOPSIS (the usage),
 * DESCRIPTION (the about text), ACTIONS, OPTIONS (each row with its
 * argument, range and default as --help shows them), NOTES (the footer);
 * section 8 for a program of its own (PFI_OPT_PROGRAM), else 1.
 * NAME's line says what the command does: PFI_MAN_WHATIS when set in the
 * environment, else the about text's first sentence.
 * pfi_opt_print_help() prints this instead when the environment has
 * PFI_HELP_FORMAT=man and fp is standard output (how the build writes the
 * pages: `PFI_HELP_FORMAT=man pfi grid timeline --help`).
 */
void pfi_opt_print_man(const struct pfi_cmd_help *help, FILE *fp);
int pfi_opt_man_wanted(void);

/* The words a shell completes (PFI_HELP_FORMAT=complete in place of the
 * help): one line per option, "--NAME", and for a choice "--NAME<TAB>W1
 * W2 ...", its words. */
void pfi_opt_print_words(const struct pfi_cmd_help *help, FILE *fp);

/* Writes text[0..len) as roff text: '\' as "\e", '-' as "\-", a '.' or
 * '\'' that starts a line behind "\&". verbatim 0 (filled text): a '\n'
 * becomes a break (".br"), runs of spaces one space, a line's leading
 * spaces dropped; verbatim 1 (no-fill text): kept as they are. */
void pfi_roff_put(FILE *fp, const char *text, size_t len, int verbatim);

/* Prints the help to standard output and returns 0, the exit status. */
int pfi_opt_help(const struct pfi_cmd_help *help);

/* The table's long option closest to `name` (a mistyping: a few edits
 * away), or NULL. */
const char *pfi_opt_suggest(const struct pfi_opt *opts, const char *name);

/* Optimal string alignment distance between a and b: the fewest single
 * character insertions, deletions, substitutions and transpositions of two
 * neighbours that turn one into the other ("simulat" -> "simulate": 1;
 * "stpe" -> "step": 1). (size_t)-1 when out of memory. */
size_t pfi_edit_distance(const char *a, const char *b);

/* The names of `names[0..n)` nearest `name` by pfi_edit_distance(), when
 * near enough to be a typo (at most 2 edits, and at most a third of name's
 * length, at least 1): up to `max` of them, all at the smallest distance,
 * in the table's order, into out[]. Returns how many. */
size_t pfi_suggest(const char *name, const char *const *names, size_t n,
                   const char **out, size_t max);

#endif
