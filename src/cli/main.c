/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The `pfi` command: a table of subcommands, git style. */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/version.h"

struct command {
  const char *name;
  int (*fn)(int, char **);
  const char *help;
};

static const struct command commands[] = {
#define PFI_CMD(name, help) {#name, cmd_##name, help},
#include "commands.def"
#undef PFI_CMD
    {NULL, NULL, NULL}};

/* pfi(1): the commands, each with its own page pfi-CMD(1). */
static void usage_man(FILE *fp) {
  fprintf(fp,
          ".TH PFI 1 \"\" \"pfi %s\" \"pfi manual\"\n"
          ".SH NAME\n"
          "pfi \\- Power Flexibility Index toolkit: measure, index, predict "
          "and allocate GPU power\n"
          ".SH SYNOPSIS\n"
          ".nf\n"
          "pfi [\\-\\-version] [\\-\\-help] <command> [<args>]\n"
          ".fi\n"
          ".SH COMMANDS\n",
          PFI_VERSION_STRING);
  for (const struct command *c = commands; c->name; c++) {
    fprintf(fp, ".TP\n.B %s\n", c->name);
    pfi_roff_put(fp, c->help, strlen(c->help), 0);
    fputc('\n', fp);
  }
  fputs(".TP\n.B help\nShow help for pfi or a command\n"
        ".SH EXIT STATUS\n"
        "0 ok, 1 run\\-time failure, 2 bad usage or input.\n"
        ".SH SEE ALSO\n",
        fp);
  for (const struct command *c = commands; c->name; c++)
    fprintf(fp, ".BR pfi\\-%s (1),\n", c->name);
  fputs(".BR pfid (8),\n.BR pfi\\-agent (8)\n", fp);
}

static void usage(FILE *fp) {
  if (fp == stdout && pfi_opt_man_wanted()) {
    usage_man(fp);
    return;
  }
  fprintf(fp,
          "usage: pfi [--version] [--help] <command> [<args>]\n"
          "\n"
          "Power Flexibility Index toolkit: measure, index, predict and "
          "allocate GPU power.\n"
          "\n"
          "Commands:\n");
  for (const struct command *c = commands; c->name; c++)
    fprintf(fp, "  %-12s %s\n", c->name, c->help);
  fprintf(fp, "  %-12s %s\n", "help", "Show help for pfi or a command");
  fprintf(fp,
          "\n'pfi <command> --help' describes a command. Exit status: 0 ok, "
          "1 run-time failure, 2 bad usage or input.\n");
}

static const struct command *find(const char *name) {
  for (const struct command *c = commands; c->name; c++)
    if (strcmp(c->name, name) == 0)
      return c;
  return NULL;
}

static const char help_help[] =
    "usage: pfi help [COMMAND]\n"
    "\n"
    "Without COMMAND, lists pfi's commands (as 'pfi --help'); with one,\n"
    "prints its help (as 'pfi COMMAND --help'). 'pfi help help' is this\n"
    "text. Exit status: 0 ok, 2 COMMAND is not a pfi command.\n";

/* "pfi: 'NAME' is not a pfi command.", with the nearest commands when
 * NAME looks like a typo of one. Returns the usage exit status. */
static int not_a_command(const char *name) {
  enum { MAX = 3 };
  const char *names[sizeof commands / sizeof commands[0] + 2], *near[MAX];
  size_t n = 0;
  for (const struct command *c = commands; c->name; c++)
    names[n++] = c->name;
  names[n++] = "help";
  names[n++] = "version";
  size_t k = pfi_suggest(name, names, n, near, MAX);
  fprintf(stderr, "pfi: '%s' is not a pfi command.", name);
  if (k == 0)
    fprintf(stderr, " See 'pfi help'.\n");
  else {
    fprintf(stderr, " Did you mean ");
    for (size_t i = 0; i < k; i++)
      fprintf(stderr, "%s'%s'", i == 0 ? "" : i + 1 < k ? ", " : " or ",
              near[i]);
    fprintf(stderr, "?\n");
  }
  return PFI_EXIT_USAGE;
}

int main(int argc, char **argv) {
  /* The library checks GSL's return codes; GSL must not abort. */
  gsl_set_error_handler_off();
  if (argc < 2) {
    usage(stderr);
    return PFI_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    printf("pfi %s\n", PFI_VERSION_STRING);
    return 0;
  }
  if (pfi_cli_is_help(name)) {
    usage(stdout);
    return 0;
  }
  if (strcmp(name, "help") == 0) {
    if (argc < 3) {
      usage(stdout);
      return 0;
    }
    if (strcmp(argv[2], "help") == 0 || pfi_cli_is_help(argv[2])) {
      fputs(help_help, stdout);
      return 0;
    }
    const struct command *c = find(argv[2]);
    if (!c)
      return not_a_command(argv[2]);
    char *av[] = {argv[2], "--help", NULL};
    return c->fn(2, av);
  }
  const struct command *c = find(name);
  if (!c)
    return not_a_command(name);
  return c->fn(argc - 1, argv + 1);
}
