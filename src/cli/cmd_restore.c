/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi restore`: put back the GPU caps a killed sweep or pfi cap --db
 * (--plan) left recorded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/capset.h"
#include "pfi/store.h"
#include "pfi/sweep.h"

/* The options, bound to these (src/base/opt.h). */
static const char *db;
static int fmt;

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("db", 0, &db, "FILE", "the sweep's trace store"),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_opt_rule rules[] = {PFI_RULE_REQUIRED("db"),
                                            PFI_RULE_END};

static const struct pfi_cmd_help help = {
    "restore",
    "usage: pfi restore --db FILE [--format table|csv|json]\n",
    "Puts back the power caps recorded in a trace store's cap ledger: the\n"
    "limit each GPU had before a pfi sweep or a pfi cap --db STORE changed\n"
    "it. Each recorded GPU gets that limit back, the enforced limit is read\n"
    "back to check it, and the record is cleared.\n"
    "\n"
    "Two uses:\n"
    "  - the undo of pfi cap --plan FILE --db STORE (a cap plan applied for a\n"
    "    grid event) or of pfi cap --set/--reset --db STORE: pfi restore --db\n"
    "    STORE returns every GPU the plan changed to its limit from before\n"
    "    the plan (the first pfi cap into STORE set what is restored);\n"
    "  - after a sweep that did not finish (pfi killed with SIGKILL, a\n"
    "    crash, a power loss): each GPU gets its pre-sweep cap back, and runs\n"
    "    left \"running\" are marked \"interrupted\" so that a resumed sweep\n"
    "    runs them again. A sweep that ends restores its own caps.\n"
    "\n"
    "Reading a store (pfi trace) never restores; a sweep or pfi cap that\n"
    "needs these GPUs does it first. Each row is checked before anything is\n"
    "set: its GPU UUID must be the GPU's, its cap within the GPU's range and\n"
    "equal to the limit this machine recorded before the change (a\n"
    "row the machine has no change pending for is only cleared, when the GPU\n"
    "already reads it); a row that does not check out is refused and kept.\n"
    "Nothing is changed while the sweep that owns the store is still running\n"
    "(it restores its own caps), nor on a GPU that a running sweep through\n"
    "another store holds (the message names the GPU and that sweep's store):\n"
    "run pfi restore again when it has ended.\n"
    "\n"
    "Output: the rows pending before the restore (backend, gpu, uuid, cap_w),\n"
    "whether each GPU's limit now reads its recorded cap (restored) and\n"
    "whether the row was cleared (a read-only store keeps it). Exit status: 0\n"
    "ok (also when nothing was pending), 1 a cap not restored or a row not\n"
    "cleared, a live sweep owns the store or holds one of its GPUs, 2 bad\n"
    "usage or not a trace store (an empty file is not one, and stays empty).\n",
    opts,
    NULL,
    0,
    NULL,
    rules,
    0,
    0,
    NULL};

int cmd_restore(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
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
  struct pfi_restore_row *rows = NULL;
  size_t n = 0;
  rc = pfi_ledger_restore(st, &rows, &n, &err);
  pfi_store_close(st);
  int status = 0;
  for (size_t i = 0; i < n; i++) {
    int seen = 0;
    for (size_t j = 0; j < i; j++)
      seen |= rows[j].job_ended == rows[i].job_ended;
    if (rows[i].job_ended && !seen)
      fprintf(stderr,
              "pfi restore: ended the job (pid %ld, SIGKILL to its process "
              "group) that the sweep which died had left running\n",
              rows[i].job_ended);
  }
  if (rc < 0) {
    /* Every row that failed says why (the first is err). */
    for (size_t i = 0; i < n; i++)
      if (rows[i].err.code && strcmp(rows[i].err.msg, err.msg) != 0) {
        char buf[PFI_ERROR_MSG_MAX + 64];
        pfi_cli_err("%s", pfi_error_format(&rows[i].err, buf, sizeof buf));
      }
    status = pfi_cli_fail(&err);
    if (status == PFI_EXIT_USAGE)
      status = PFI_EXIT_FAIL; /* a store that opened: a restore failure */
  }
  if (fmt == PFI_FMT_JSON) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
      json_array_append_new(
          a,
          json_pack("{s:s, s:i, s:s, s:f, s:b, s:b}", "backend",
                    rows[i].cap.backend, "gpu", (int)rows[i].cap.gpu, "uuid",
                    rows[i].cap.uuid, "cap_w", rows[i].cap.cap_mw / 1000.0,
                    "restored", rows[i].restored, "cleared", rows[i].cleared));
    if (pfi_cli_print_json(a) != 0 && status == 0)
      status = PFI_EXIT_FAIL;
  } else if (fmt == PFI_FMT_CSV) {
    printf("backend,gpu,uuid,cap_w,restored,cleared\n");
    for (size_t i = 0; i < n; i++)
      printf("%s,%u,%s,%.3f,%d,%d\n", rows[i].cap.backend, rows[i].cap.gpu,
             rows[i].cap.uuid, rows[i].cap.cap_mw / 1000.0, rows[i].restored,
             rows[i].cleared);
  } else {
    if (n == 0 && rc >= 0)
      printf("nothing to restore\n");
    else if (n > 0)
      printf("%-8s %4s  %-44s %9s  %-8s %s\n", "backend", "gpu", "uuid",
             "cap_w", "restored", "record");
    for (size_t i = 0; i < n; i++)
      printf("%-8s %4u  %-44s %9.3f  %-8s %s\n", rows[i].cap.backend,
             rows[i].cap.gpu, rows[i].cap.uuid[0] ? rows[i].cap.uuid : "-",
             rows[i].cap.cap_mw / 1000.0, rows[i].restored ? "yes" : "no",
             rows[i].cleared ? "cleared" : "kept");
  }
  if (fflush(stdout) != 0 && status == 0)
    status = PFI_EXIT_FAIL;
  free(rows);
  return status;
}
