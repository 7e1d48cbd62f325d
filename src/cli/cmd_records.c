/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi records`: the controller's decision records, as a table, CSV or
 * JSON. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/records.h"

/* The options, bound to these (src/base/opt.h). */
static const char *event, *job;
static int fmt;

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("event", 0, &event, "E", "only records of event E"),
    PFI_OPT_STRING("job", 0, &job, "J", "only records of job J"),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table, csv or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "records",
    "usage: pfi records DB [--event E] [--job J] [--format table|csv|json]\n",
    "Prints the decision records of a records database (written by pfi\n"
    "control --records or a live controller): one row per decision per job,\n"
    "in order of run and sequence number. Columns: run, seq, t_s, event,\n"
    "target_w, job, family, phase, cap_req_w, cap_enf_w, draw_w, pfi,\n"
    "pfi_lo, pfi_hi, tput_before, tput_pred, tput_after, reason, max_loss,\n"
    "protect, shortfall_w, complete. A value not known (a pending record's\n"
    "after-values) is empty in CSV and null in JSON. docs/control.md\n"
    "describes each field.\n",
    opts,
    "Exit status 0 ok, 1 a database error, 2 bad usage or a file that is\n"
    "not a records database.\n",
    0,
    NULL,
    NULL,
    1,
    1,
    "DB (a records database)"};

struct ctx {
  enum pfi_format fmt;
  struct pfi_restab *tab;
  size_t n;
};

/* One column list for the three formats, the terminal's columns labelled
 * as they were (cap_req, tput_bef, ...), the files' by their record names;
 * a value that does not exist (a pending record's after-values) is empty
 * in CSV, '-' in the terminal and null in JSON; protect and complete are
 * 0/1 in CSV and booleans in JSON. */
enum {
  C_RUN, C_SEQ, C_T, C_EVENT, C_TARGET, C_JOB, T_REASON, C_FAMILY, C_PHASE,
  C_REQ, C_ENF, C_DRAW, C_PFI, C_PFILO, C_PFIHI, C_TBEF, C_TPRED, C_TAFT,
  C_REASON, C_MAXLOSS, C_PROTECT, C_SHORT, C_COMPLETE, C_N
};
/* Columns of the files (CSV and JSON), not of the terminal. */
#define CSVONLY(n, k)                                                          \
  {.name = n, .kind = k, .style = 'g', .prec = 10,                             \
   .formats = PFI_RESTAB_IN_FILES}
#define TERM(n, l, u, st, p, q)                                                \
  {.name = n, .label = l, .unit = u, .kind = PFI_RESTAB_NUM, .style = st,      \
   .prec = p, .csv_style = 'g', .csv_prec = 10, .qty = q}
static const struct pfi_restab_col cols[C_N] = {
    [C_RUN] = {.name = "run", .kind = PFI_RESTAB_TEXT},
    [C_SEQ] = {.name = "seq", .kind = PFI_RESTAB_INT},
    [C_T] = TERM("t_s", "t", "s", 'f', 0, PFI_RESTAB_Q_NONE),
    [C_EVENT] = CSVONLY("event", PFI_RESTAB_TEXT),
    [C_TARGET] = CSVONLY("target_w", PFI_RESTAB_NUM),
    [C_JOB] = {.name = "job", .kind = PFI_RESTAB_TEXT, .max_width = 34},
    [T_REASON] = {.name = "reason", .kind = PFI_RESTAB_TEXT,
                  .formats = PFI_RESTAB_IN_TERM},
    [C_FAMILY] = CSVONLY("family", PFI_RESTAB_TEXT),
    [C_PHASE] = CSVONLY("phase", PFI_RESTAB_TEXT),
    [C_REQ] = TERM("cap_req_w", "cap req", "W", 'f', 1, PFI_RESTAB_Q_POWER),
    [C_ENF] = TERM("cap_enf_w", "cap enf", "W", 'f', 1, PFI_RESTAB_Q_POWER),
    [C_DRAW] = TERM("draw_w", "draw", "W", 'f', 0, PFI_RESTAB_Q_POWER),
    [C_PFI] = CSVONLY("pfi", PFI_RESTAB_NUM),
    [C_PFILO] = CSVONLY("pfi_lo", PFI_RESTAB_NUM),
    [C_PFIHI] = CSVONLY("pfi_hi", PFI_RESTAB_NUM),
    [C_TBEF] = TERM("tput_before", "tput bef", NULL, 'g', 4,
                    PFI_RESTAB_Q_THROUGHPUT),
    [C_TPRED] = TERM("tput_pred", "tput pred", NULL, 'g', 4,
                     PFI_RESTAB_Q_THROUGHPUT),
    [C_TAFT] = TERM("tput_after", "tput aft", NULL, 'g', 4,
                    PFI_RESTAB_Q_THROUGHPUT),
    [C_REASON] = CSVONLY("reason", PFI_RESTAB_TEXT),
    [C_MAXLOSS] = CSVONLY("max_loss", PFI_RESTAB_NUM),
    [C_PROTECT] = {.name = "protect", .kind = PFI_RESTAB_INT, .json_bool = 1,
                   .formats = PFI_RESTAB_IN_FILES},
    [C_SHORT] = CSVONLY("shortfall_w", PFI_RESTAB_NUM),
    [C_COMPLETE] = {.name = "complete", .kind = PFI_RESTAB_INT,
                    .json_bool = 1, .formats = PFI_RESTAB_IN_FILES},
};
#undef CSVONLY
#undef TERM

static int row(void *p, const struct pfi_records_row *r) {
  struct ctx *c = p;
  const struct pfi_ctl_record *x = &r->rec;
  c->n++;
  struct pfi_restab *t = c->tab;
  if (pfi_restab_row(t) < 0)
    return PFI_ENOMEM;
  pfi_restab_text(t, C_RUN, r->run);
  pfi_restab_int(t, C_SEQ, (long long)x->seq);
  pfi_restab_num(t, C_T, x->t_s);
  pfi_restab_text(t, C_EVENT, x->event);
  pfi_restab_num(t, C_TARGET, x->target_w);
  pfi_restab_text(t, C_JOB, x->job);
  pfi_restab_text(t, T_REASON, pfi_ctl_reason_name(x->reason));
  pfi_restab_text(t, C_FAMILY, x->family);
  pfi_restab_text(t, C_PHASE, x->phase);
  pfi_restab_num(t, C_REQ, x->cap_req_w);
  pfi_restab_num(t, C_ENF, x->cap_enf_w);
  pfi_restab_num(t, C_DRAW, x->draw_w);
  pfi_restab_num(t, C_PFI, x->pfi);
  pfi_restab_num(t, C_PFILO, x->pfi_lo);
  pfi_restab_num(t, C_PFIHI, x->pfi_hi);
  pfi_restab_num(t, C_TBEF, x->tput_before);
  pfi_restab_num(t, C_TPRED, x->tput_pred);
  pfi_restab_num(t, C_TAFT, x->tput_after);
  pfi_restab_text(t, C_REASON, pfi_ctl_reason_name(x->reason));
  pfi_restab_num(t, C_MAXLOSS, x->max_loss);
  pfi_restab_int(t, C_PROTECT, x->protect);
  pfi_restab_num(t, C_SHORT, x->shortfall_w);
  pfi_restab_int(t, C_COMPLETE, x->complete);
  return t->failed ? PFI_ENOMEM : 0;
}

int cmd_records(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  struct ctx c = {fmt, NULL, 0};
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_records *r;
  if (pfi_records_open(&r, argv[optind], 0, 0, &err) < 0) {
    fprintf(stderr, "pfi records: %s\n", err.msg);
    return PFI_EXIT_USAGE;
  }
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, C_N);
  tab.csv_null = "";
  c.tab = &tab;
  int rc = pfi_records_each(r, event, job, row, &c, &err);
  pfi_records_close(r);
  if (rc == PFI_ENOMEM && !err.msg[0])
    pfi_error_set(&err, PFI_ENOMEM, "out of memory");
  if (rc < 0) {
    pfi_restab_release(&tab);
    return pfi_cli_fail(&err);
  }
  rc = pfi_cli_print_table(&tab, c.fmt);
  pfi_restab_release(&tab);
  if (rc)
    return rc;
  if (fflush(stdout) != 0)
    return PFI_EXIT_FAIL;
  return 0;
}
