/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * One grid event as recorded (by `pfi grid bridge --log DIR`, or written by
 * hand): the fleet's target and realized GPU power over time, and every
 * job's throughput, read into the compliance record of
 * include/pfi/compliance.h.
 *
 *   series.csv   t_s,target_w,power_w     (target_w 0: no event in force)
 *                [,shed_loss,shed_w,shed_lo_w,shed_hi_w,shed_duration_s]
 *   jobs.csv     t_s,job,tokens_per_s[,held]  (one row per job per sample)
 *
 * The optional capacity columns are pfid's live flexible capacity as the
 * bridge read it (GET /v1/capacity): the power the fleet could shed at <=
 * shed_loss throughput loss (one loss for the whole log), its interval, and
 * the longest event it holds for. Empty cells: no quote then (shed), or an
 * event of any length (duration).
 *
 * The optional held column is pfid's word on the job (GET /v1/jobs): 1
 * while the controller holds it under its pre-event caps, 0 when it does
 * not (never cut, or released by its contract: docs/control.md
 * "Contract"); an empty cell counts as held. A job's held time is the
 * event's samples up to its last held one, each dt long; without the
 * column every job is held the whole event.
 *
 * The event is the longest run of samples with target_w > 0. Baselines come
 * from the samples before it: the fleet's median power and each job's mean
 * throughput (an error when there are none, or a job has none). Throughput
 * samples are matched to series samples by time (the last job sample at or
 * before each series sample; a job with no sample yet in the event is an
 * error naming it).
 */
#ifndef PFI_EVENTLOG_H
#define PFI_EVENTLOG_H

#include <stddef.h>

#include "pfi/compliance.h"
#include "pfi/error.h"
#include "pfi/meter.h"

struct pfi_eventlog {
  size_t n;                   /* series samples */
  double *t, *target, *power; /* n each, owned */
  size_t ev0, ev1;            /* the event: samples [ev0, ev1) */
  double baseline_w;          /* median power before the event */
  size_t nj;
  char **job;       /* nj names, owned */
  double *job_base; /* nj: mean throughput before the event */
  double *tput;     /* (ev1 - ev0) x nj, row per event sample */
  /* The capacity columns (NULL when the log has none): n each, NAN for an
   * empty cell (shed_dur: INFINITY for any length). */
  double shed_loss; /* the quotes' loss; 0 when the log has none */
  double *shed, *shed_lo, *shed_hi, *shed_dur;
  /* The held column (NULL when jobs.csv has none): nj, the index of each
   * job's last held event sample from ev0 plus one (0: never held). */
  size_t *held_n;
};

/* Reads the two files (paths; located errors, PFI_EPARSE). */
int pfi_eventlog_load(struct pfi_eventlog *log, const char *series_csv,
                      const char *jobs_csv, struct pfi_error *err);
/* The same from memory (names series.csv and jobs.csv in messages). */
int pfi_eventlog_load_mem(struct pfi_eventlog *log, const char *series,
                          size_t slen, const char *jobs, size_t jlen,
                          struct pfi_error *err);
void pfi_eventlog_release(struct pfi_eventlog *log);

/*
 * Fills `in` (and the arrays it points to, in *meter_w, nt = ev1 - ev0,
 * caller frees) from the log: dt = median sample spacing; meter power of
 * each sample from the GPU power spread over `nodes` nodes through the
 * meter chain; jobs matched to `contract` (every logged job must be in it,
 * PFI_EINVAL naming it); event length = duration of [ev0, ev1); each job's
 * held time (the held column; NULL without it) in in->held_s, stored after
 * the meter samples in *meter_w.
 */
int pfi_eventlog_compliance(const struct pfi_eventlog *log,
                            const struct pfi_meter_config *cfg, unsigned nodes,
                            const struct pfi_contract_job *contract, size_t nc,
                            const struct pfi_tier *tiers, size_t ntiers,
                            double notice_s, struct pfi_compliance_input *in,
                            double **meter_w, struct pfi_contract_job **jobs,
                            struct pfi_error *err);

/*
 * The cut the fleet delivered over the logged event, on the terms of a
 * share `asked` of the pre-event draw (the way Emerald AI's delivery in
 * Phoenix is read, include/pfi/cluster.h pfi_event_srp): mean_cut = the
 * mean over the event's samples of 1 - power / baseline; share_above = the
 * share of them with power > (1 - asked) x baseline. PFI_EINVAL for asked
 * outside (0, 1) or an empty event.
 */
struct pfi_delivered {
  double asked, mean_cut, share_above;
  size_t samples;
};
int pfi_eventlog_delivered(const struct pfi_eventlog *log, double asked,
                           struct pfi_delivered *d, struct pfi_error *err);

/*
 * pfid's capacity quote when the event began (the number a bid made then
 * would have used): the last sample at or before the event's first with a
 * quote. Its index in *row. PFI_ENOTFOUND when the log has no capacity
 * columns or no quote by then.
 */
int pfi_eventlog_quote_at_start(const struct pfi_eventlog *log, size_t *row,
                                struct pfi_error *err);

#endif
