/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Shared by the files of `pfi grid`: its options and message helpers. */
#ifndef PFI_CMD_GRID_H
#define PFI_CMD_GRID_H

#include <stdint.h>

#include "cli.h"
#include "objective_opt.h"
#include "pfi/error.h"
#include "pfi/http.h"

struct opts {
  const char *vtn, *id, *secret_file, *program, *event;
  const char *events[16], *schedules[16];
  size_t nevents, nschedules;
  double baseline, simple[3], unit;
  int level, have_simple;
  int level_given; /* --level was given (level defaults to meter) */
  int64_t now, start;
  unsigned long seed;
  enum pfi_format fmt;
  double duration, usage, demand, basew, shed;
  const char *config, *gpuw, *otherw, *powercap, *callback;
  const char *bearer_file; /* subscribe: the subscription's bearerToken */
  const char *bmc; /* meter: the BMC's DCMI reader (pfi_bmc_open's spec) */
  const char *curves, *map, *tiers, *contract, *tier;
  double durations[16], notice;
  size_t ndur;
  unsigned long gpn;
  const char *pfid, *pfid_token;
  const char *listen; /* bridge: the webhook's address (--listen) */
  double overlap, report_s;
  double shed_loss; /* bridge: the loss whose quote is reported (0.1) */
  int once;
  const char *logdir, *outdir;
  unsigned long nodes;
  double interval, limit, floor;
  int phoenix;  /* event-report: Emerald's measured Phoenix delivery beside */
  int emulated; /* event-report: the log is of an emulated fleet */
  struct obj_opt ob; /* capacity: --objective, --weights, --min-share */
  int curve_fit;     /* capacity: enum pfi_curve_fit (--curve) */
  const char *token_url; /* --token-url */
  const char *cacert;    /* the VEN's --cacert */
  /* bridge: --pfid-cacert, --pfid-cert, --pfid-key, --pfid-insecure */
  struct pfi_http_client_tls pfid_tls;
};

/* cmd_grid_opts.c: the overview's help page and each action's, their
 * options bound to one set of variables. */
extern const struct pfi_cmd_help pfi__grid_help, pfi__grid_timeline_help,
    pfi__grid_report_help, pfi__grid_subscribe_help, pfi__grid_capacity_help,
    pfi__grid_bridge_help, pfi__grid_event_report_help, pfi__grid_curves_help,
    pfi__grid_meter_help;
/* The options of the action whose help page is H into *o (its defaults
 * set by the caller): 0, -1 after --help, or the exit status of a usage
 * error. */
int pfi__grid_bind(const struct pfi_cmd_help *h, int argc, char **argv,
                   struct opts *o);

int pfi__grid_usage(const char *fmt, const char *arg);
int pfi__grid_fail(const struct pfi_error *err);
const char *pfi__grid_level_name(int l);

/* The subcommands in cmd_grid_power.c. */
int pfi__grid_capacity(const struct opts *o);
int pfi__grid_curves(const struct opts *o);
int pfi__grid_meter(const struct opts *o);
struct pfi_ven;
/* cmd_grid_bridge.c; ven may be NULL (no VTN). */
int pfi__grid_bridge(const struct opts *o, struct pfi_ven *ven);
/* cmd_grid_event.c */
int pfi__grid_event_report(const struct opts *o);

#endif
