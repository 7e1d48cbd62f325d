/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Durations on the command line and in options: one parser and one set of
 * bounds for every command, so that `--interval` means the same range in
 * `pfi sweep`, `pfi emulate`, `pfi reproduce` and `pfi trace import-prom`.
 *
 *   kind      bounds        what it is
 *   interval  0.1 s..10 m   sampling (or scrape) interval
 *   duration  1 s..24 h     length of one run
 *   cooldown  0..1 h        pause after a run (0: none)
 *   grace     0.1 s..10 m   SIGTERM-to-SIGKILL grace of a job
 *   any       0..finite     a command with its own bounds (pfi grid's spans)
 *
 * A bound keeps a run finite and its row count sane: an interval of
 * 1e-300 s would never advance the clock, a duration of 1e308 s never end.
 */
#ifndef PFI_DURATION_H
#define PFI_DURATION_H

#include "pfi/error.h"

enum pfi_duration_kind {
  PFI_DUR_INTERVAL,
  PFI_DUR_DURATION,
  PFI_DUR_COOLDOWN,
  PFI_DUR_GRACE,
  PFI_DUR_ANY,
  PFI_DUR__COUNT
};

/* Smallest and largest accepted value of `kind`, seconds. */
double pfi_duration_min(enum pfi_duration_kind kind);
double pfi_duration_max(enum pfi_duration_kind kind);

/* The kind's name ("interval", ...), for messages. */
const char *pfi_duration_name(enum pfi_duration_kind kind);

/*
 * Parses "250ms", "5s", "30m", "30min", "1h" or plain seconds ("12.5") into
 * seconds and checks it against the bounds of `kind`. A run length
 * (PFI_DUR_DURATION, written in minutes as often as in seconds) must say
 * its unit: a plain number is refused. Returns 0, or PFI_EINVAL with a
 * message naming the text and, when it is out of range, the range
 * ("'1e-300s' is outside 0.1s..10m").
 */
int pfi_parse_duration(const char *s, enum pfi_duration_kind kind,
                       double *seconds, struct pfi_error *err);

/*
 * Checks a value in seconds against the bounds of `kind` (for options set
 * through the library, e.g. struct pfi_sweep_opts). `what` names the option
 * in the message. Returns 0 or PFI_EINVAL.
 */
int pfi_duration_check(enum pfi_duration_kind kind, double seconds,
                       const char *what, struct pfi_error *err);

#endif
