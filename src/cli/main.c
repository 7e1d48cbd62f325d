/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The `pfi` command: a table of subcommands, git style. */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
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

static void usage(FILE *fp) {
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
    const struct command *c = find(argv[2]);
    if (!c) {
      fprintf(stderr, "pfi: '%s' is not a pfi command. See 'pfi help'.\n",
              argv[2]);
      return PFI_EXIT_USAGE;
    }
    char *av[] = {argv[2], "--help", NULL};
    return c->fn(2, av);
  }
  const struct command *c = find(name);
  if (!c) {
    fprintf(stderr, "pfi: '%s' is not a pfi command. See 'pfi help'.\n", name);
    return PFI_EXIT_USAGE;
  }
  return c->fn(argc - 1, argv + 1);
}
