/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi records`: the controller's decision records, as a table, CSV or
 * JSON. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/records.h"

static const struct pfi_opt opts[] = {
    {"event", 'e', 0, PFI_ARG_REQ, "E", "only records of event E"},
    {"job", 'j', 0, PFI_ARG_REQ, "J", "only records of job J"},
    {"format", 'f', 0, PFI_ARG_REQ, "F", "table (default), csv or json"},
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
    NULL};

struct ctx {
  enum pfi_format fmt;
  json_t *arr;
  size_t n;
};

static void csv_num(double v) {
  if (isfinite(v))
    printf("%.10g", v);
}

static json_t *jnum(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static int row(void *p, const struct pfi_records_row *r) {
  struct ctx *c = p;
  const struct pfi_ctl_record *x = &r->rec;
  c->n++;
  if (c->fmt == PFI_FMT_JSON) {
    json_t *o = json_object();
    json_object_set_new(o, "run", pfi_cli_json_str(r->run));
    json_object_set_new(o, "seq", json_integer((json_int_t)x->seq));
    json_object_set_new(o, "t_s", jnum(x->t_s));
    json_object_set_new(o, "event", pfi_cli_json_str(x->event));
    json_object_set_new(o, "target_w", jnum(x->target_w));
    json_object_set_new(o, "job", pfi_cli_json_str(x->job));
    json_object_set_new(o, "family", pfi_cli_json_str(x->family));
    json_object_set_new(o, "phase", pfi_cli_json_str(x->phase));
    json_object_set_new(o, "cap_req_w", jnum(x->cap_req_w));
    json_object_set_new(o, "cap_enf_w", jnum(x->cap_enf_w));
    json_object_set_new(o, "draw_w", jnum(x->draw_w));
    json_object_set_new(o, "pfi", jnum(x->pfi));
    json_object_set_new(o, "pfi_lo", jnum(x->pfi_lo));
    json_object_set_new(o, "pfi_hi", jnum(x->pfi_hi));
    json_object_set_new(o, "tput_before", jnum(x->tput_before));
    json_object_set_new(o, "tput_pred", jnum(x->tput_pred));
    json_object_set_new(o, "tput_after", jnum(x->tput_after));
    json_object_set_new(o, "reason",
                        json_string(pfi_ctl_reason_name(x->reason)));
    json_object_set_new(o, "max_loss", jnum(x->max_loss));
    json_object_set_new(o, "protect", json_boolean(x->protect));
    json_object_set_new(o, "shortfall_w", jnum(x->shortfall_w));
    json_object_set_new(o, "complete", json_boolean(x->complete));
    json_array_append_new(c->arr, o);
    return 0;
  }
  if (c->fmt == PFI_FMT_CSV) {
    pfi_cli_put_csv_field(stdout, r->run);
    printf(",%llu,", (unsigned long long)x->seq);
    csv_num(x->t_s);
    putchar(',');
    pfi_cli_put_csv_field(stdout, x->event);
    putchar(',');
    csv_num(x->target_w);
    putchar(',');
    pfi_cli_put_csv_field(stdout, x->job);
    putchar(',');
    pfi_cli_put_csv_field(stdout, x->family);
    printf(",%s,", x->phase);
    double v[] = {x->cap_req_w,   x->cap_enf_w, x->draw_w,
                  x->pfi,         x->pfi_lo,    x->pfi_hi,
                  x->tput_before, x->tput_pred, x->tput_after};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
      csv_num(v[i]);
      putchar(',');
    }
    printf("%s,", pfi_ctl_reason_name(x->reason));
    csv_num(x->max_loss);
    printf(",%d,", x->protect);
    csv_num(x->shortfall_w);
    printf(",%d\n", x->complete);
    return 0;
  }
  printf("%-8s %7llu %8.0f ", r->run, (unsigned long long)x->seq, x->t_s);
  pfi_cli_put_name(stdout, x->job, 34);
  printf(" %-10s %7.1f %7.1f %9.0f %10.4g %10.4g %10.4g\n",
         pfi_ctl_reason_name(x->reason), x->cap_req_w, x->cap_enf_w, x->draw_w,
         x->tput_before, x->tput_pred, x->tput_after);
  return 0;
}

int cmd_records(int argc, char **argv) {
  const char *event = NULL, *job = NULL;
  struct ctx c = {PFI_FMT_TABLE, NULL, 0};
  int o;
  struct pfi_optparse op;
  pfi_opt_start(&op, &help, argc, argv);
  while ((o = pfi_opt_next(&op)) != -1) {
    switch (o) {
    case 'e':
      event = optarg;
      break;
    case 'j':
      job = optarg;
      break;
    case 'f':
      if (pfi_cli_format("records", optarg,
                         PFI_FMT_ALLOW_TABLE | PFI_FMT_ALLOW_CSV |
                             PFI_FMT_ALLOW_JSON,
                         &c.fmt))
        return PFI_EXIT_USAGE;
      break;
    case 'h':
      pfi_opt_print_help(&help, stdout);
      return 0;
    default: /* said by pfi_opt_next() */
      return PFI_EXIT_USAGE;
    }
  }
  if (optind + 1 != argc)
    return pfi_cli_usage("records", "expected one records database");
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_records *r;
  if (pfi_records_open(&r, argv[optind], 0, 0, &err) < 0) {
    fprintf(stderr, "pfi records: %s\n", err.msg);
    return PFI_EXIT_USAGE;
  }
  if (c.fmt == PFI_FMT_JSON)
    c.arr = json_array();
  else if (c.fmt == PFI_FMT_CSV)
    puts("run,seq,t_s,event,target_w,job,family,phase,cap_req_w,cap_enf_w,"
         "draw_w,pfi,pfi_lo,pfi_hi,tput_before,tput_pred,tput_after,reason,"
         "max_loss,protect,shortfall_w,complete");
  else
    printf("%-8s %7s %8s %-34s %-10s %7s %7s %9s %10s %10s %10s\n", "run",
           "seq", "t_s", "job", "reason", "cap_req", "cap_enf", "draw_w",
           "tput_bef", "tput_pred", "tput_aft");
  int rc = pfi_records_each(r, event, job, row, &c, &err);
  pfi_records_close(r);
  if (rc < 0) {
    json_decref(c.arr);
    return pfi_cli_fail(&err);
  }
  if (c.fmt == PFI_FMT_JSON)
    return pfi_cli_print_json(c.arr);
  if (fflush(stdout) != 0)
    return PFI_EXIT_FAIL;
  return 0;
}
