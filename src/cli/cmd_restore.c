/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi restore`: put back the GPU caps a killed sweep left recorded. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/store.h"
#include "pfi/sweep.h"

static const char usage_text[] =
    "usage: pfi restore --db FILE [--format table|csv|json]\n"
    "\n"
    "Restores the power caps that a sweep recorded in its trace store before\n"
    "changing them, when that sweep did not finish (pfi killed with SIGKILL,\n"
    "a crash, a power loss): each recorded GPU gets its pre-sweep cap back,\n"
    "the enforced limit is read back to check it, and the record is cleared.\n"
    "Runs left \"running\" are marked \"interrupted\" so that a resumed sweep\n"
    "runs them again. Any pfi command that opens the store does the same;\n"
    "this one says what it did. Nothing is changed while the sweep that owns\n"
    "the store is still running (it restores its own caps), nor while a\n"
    "running sweep through another store holds one of the recorded GPUs\n"
    "(the message names the GPU and that sweep's store): run pfi restore\n"
    "again when it has ended.\n"
    "\n"
    "Output: the GPUs still pending before the restore (backend, gpu, uuid,\n"
    "cap_w). Exit status: 0 ok (also when nothing was pending), 1 a cap\n"
    "could not be restored, a live sweep owns the store or holds one of its\n"
    "GPUs, 2 bad usage or not a trace store.\n";

int cmd_restore(int argc, char **argv) {
  static const struct option opts[] = {{"db", required_argument, NULL, 'd'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *db = NULL;
  enum pfi_format fmt = PFI_FMT_TABLE;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'd':
      db = optarg;
      break;
    case 'f':
      if (pfi_cli_format("restore", optarg,
                         PFI_FMT_ALLOW_TABLE | PFI_FMT_ALLOW_CSV |
                             PFI_FMT_ALLOW_JSON,
                         &fmt) != 0)
        return PFI_EXIT_USAGE;
      break;
    case 'h':
      fputs(usage_text, stdout);
      return 0;
    default:
      return pfi_cli_usage("restore", "bad option");
    }
  }
  if (optind != argc)
    return pfi_cli_usage("restore", "unexpected argument '%s'", argv[optind]);
  if (!db)
    return pfi_cli_usage("restore", "--db FILE is required");
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_store *st = NULL;
  int rc = pfi_store_open(&st, db, 0, &err);
  if (rc < 0) {
    /* A disk remounted read-only after errors must not keep the GPUs
     * capped: restore them from the ledger as read, and say that the
     * record could not be cleared. */
    struct pfi_error e2;
    pfi_error_clear(&e2);
    if (pfi_store_open(&st, db, PFI_STORE_READONLY, &e2) == 0)
      rc = 0;
  }
  if (rc < 0) {
    if (rc == PFI_EIO || rc == PFI_EDB)
      err.code = PFI_EPARSE;
    return pfi_cli_fail(&err);
  }
  struct pfi_saved_cap *caps = NULL;
  size_t n = 0;
  if ((rc = pfi_store_caps_pending(st, &caps, &n, &err)) < 0) {
    pfi_store_close(st);
    return pfi_cli_fail(&err);
  }
  rc = pfi_sweep_recover(st, &err);
  int status = 0;
  if (rc < 0)
    status = pfi_cli_fail(&err);
  /* What is still in the ledger afterwards was not restored. */
  struct pfi_saved_cap *left = NULL;
  size_t nleft = 0;
  struct pfi_error e2;
  if (pfi_store_caps_pending(st, &left, &nleft, &e2) < 0) {
    left = NULL;
    nleft = n; /* unknown: report none as restored */
  }
  pfi_store_close(st);
  int *done = calloc(n ? n : 1, sizeof *done);
  for (size_t i = 0; done && i < n; i++) {
    done[i] = left || nleft == 0;
    for (size_t j = 0; left && j < nleft; j++)
      if (strcmp(left[j].backend, caps[i].backend) == 0 &&
          left[j].gpu == caps[i].gpu)
        done[i] = 0;
  }
  free(left);
  if (!done) {
    free(caps);
    return PFI_EXIT_FAIL;
  }
  if (fmt == PFI_FMT_JSON) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
      json_array_append_new(
          a, json_pack("{s:s, s:i, s:s, s:f, s:b}", "backend", caps[i].backend,
                       "gpu", (int)caps[i].gpu, "uuid", caps[i].uuid, "cap_w",
                       caps[i].cap_mw / 1000.0, "restored", done[i]));
    if (pfi_cli_print_json(a) != 0 && status == 0)
      status = PFI_EXIT_FAIL;
  } else if (fmt == PFI_FMT_CSV) {
    printf("backend,gpu,uuid,cap_w,restored\n");
    for (size_t i = 0; i < n; i++)
      printf("%s,%u,%s,%.3f,%d\n", caps[i].backend, caps[i].gpu, caps[i].uuid,
             caps[i].cap_mw / 1000.0, done[i]);
  } else {
    if (n == 0)
      printf("nothing to restore\n");
    else
      printf("%-8s %4s  %-44s %9s  %s\n", "backend", "gpu", "uuid", "cap_w",
             "restored");
    for (size_t i = 0; i < n; i++)
      printf("%-8s %4u  %-44s %9.3f  %s\n", caps[i].backend, caps[i].gpu,
             caps[i].uuid[0] ? caps[i].uuid : "-", caps[i].cap_mw / 1000.0,
             done[i] ? "yes" : "no");
  }
  free(caps);
  free(done);
  return status;
}
