/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The job's throughput, as the job reports it (docs/throughput-protocol.md).
 *
 * Two sources, chosen by a spec string:
 *  - "jsonl:PATH": the job appends one JSON object per line to PATH, e.g.
 *      {"t": 1733000000.5, "tokens": 123456789, "step": 42, "loss": 2.1}
 *    with a timestamp ("t" Unix seconds, or "elapsed_s" seconds since the
 *    job started) and cumulative "tokens" or a rate "tokens_per_s"; "step",
 *    "loss" and "mfu" are optional. A rate is derived from cumulative
 *    tokens between consecutive lines.
 *  - "regex:PATTERN": a POSIX extended regular expression applied to each
 *    line of the job's standard output; its first capture group is the
 *    throughput in tokens/s.
 * Malformed lines are counted and the first one kept as a located error;
 * they never stop the sweep.
 */
#ifndef PFI_THROUGHPUT_H
#define PFI_THROUGHPUT_H

#include <stddef.h>

#include "pfi/error.h"
#include "pfi/store.h"

/*
 * Parses one JSONL line (without its newline). Returns 1 and fills *step
 * (t_s = NaN; job_t_s from "t"/"timestamp" or "elapsed_s"; missing values
 * NaN), 0 for a blank line, or PFI_EPARSE (not a JSON object, a value of the
 * wrong type, a negative or non-finite number, neither tokens nor
 * tokens_per_s, no timestamp with cumulative tokens) with `name`, `line`
 * and the column in err. `*is_elapsed` (may be NULL) is set when the
 * timestamp was "elapsed_s".
 */
int pfi_jsonl_parse_line(const char *name, long line, const char *text,
                         size_t len, struct pfi_step *step, int *is_elapsed,
                         struct pfi_error *err);

/* What a trainer may add to a line about its phase and its next pause
 * (docs/throughput-protocol.md "Phase and announced pauses"): "phase" one
 * of "training", "startup", "warmup", "pause", "evaluation", "eval",
 * "validation", "checkpoint" (the last four are PFI_PHASE_PAUSE);
 * "next_pause_s" when its next evaluation or checkpoint starts, seconds
 * after the line's time; "next_pause_len_s" how long it is expected to
 * last; "end_in_s" when the job ends (its last step), seconds after the
 * line's time. */
struct pfi_step_phase {
  int phase;               /* enum pfi_phase, -1 when absent */
  double next_pause_s;     /* >= 0, NaN when absent */
  double next_pause_len_s; /* > 0, NaN when absent */
  double end_in_s;         /* >= 0, NaN when absent */
};

/*
 * pfi_jsonl_parse_line, and the phase fields into *ph (may be NULL: then
 * they are not read). A "phase" that names no phase, or a pause time that
 * is negative, not finite or above 1e7 s, is PFI_EPARSE naming the field.
 */
int pfi_jsonl_parse_line_phase(const char *name, long line, const char *text,
                               size_t len, struct pfi_step *step,
                               int *is_elapsed, struct pfi_step_phase *ph,
                               struct pfi_error *err);

enum pfi_tput_kind { PFI_TPUT_JSONL = 1, PFI_TPUT_REGEX = 2 };

/* A throughput collector. Opaque. */
struct pfi_tput;

/* Parses `spec` and sets up the collector. PFI_EINVAL for a bad spec or a
 * regular expression that does not compile (regerror's text in err). */
int pfi_tput_open(struct pfi_tput **tp, const char *spec,
                  struct pfi_error *err);
void pfi_tput_close(struct pfi_tput *tp);
enum pfi_tput_kind pfi_tput_kind(const struct pfi_tput *tp);
/* The JSONL path (jsonl kind), else NULL. */
const char *pfi_tput_path(const struct pfi_tput *tp);

/*
 * Starts a new run: forgets partial lines and the previous rate base. The
 * JSONL file is truncated (created empty) so that a run reads only its own
 * lines. `dev_t0` is the device clock and `wall_t0` the Unix time at the
 * job's start, used to align job timestamps with the device clock.
 */
int pfi_tput_start(struct pfi_tput *tp, double dev_t0, double wall_t0,
                   struct pfi_error *err);

/* Regex kind: feeds bytes of the job's standard output; complete lines are
 * matched and stamped with device time `now_s`. Other kinds ignore it. */
int pfi_tput_feed(struct pfi_tput *tp, const char *buf, size_t n, double now_s);
/* JSONL kind: reads the lines appended since the last poll (a final line
 * without newline waits for the next poll unless `final`). Lines without
 * a timestamp are stamped `now_s`. */
int pfi_tput_poll(struct pfi_tput *tp, double now_s, int final,
                  struct pfi_error *err);

/* Moves the collected steps out: returns their count and sets *steps to an
 * internal array valid until the next call into the collector. */
size_t pfi_tput_take(struct pfi_tput *tp, const struct pfi_step **steps);
/* The newest throughput seen, tokens/s, or NaN. */
double pfi_tput_last_rate(const struct pfi_tput *tp);
/* Malformed lines seen in this run, and the first as a located error. */
long pfi_tput_bad_lines(const struct pfi_tput *tp, struct pfi_error *first);
/*
 * Regex kind: drains `fd` (the job's stdout, read end of a pipe) from now
 * on in a reader thread, and matches its lines in a matcher thread, so the
 * job never blocks on a full pipe and the caller's loop never waits for the
 * matcher. Lines are stamped with the device clock of pfi_tput_clock(). A
 * matcher that falls more than 8 MiB behind loses lines, counted as bad
 * lines. Takes ownership of fd. Returns 0, PFI_EINVAL (not an idle regex
 * collector), PFI_EIO or PFI_ENOMEM.
 */
int pfi_tput_attach(struct pfi_tput *tp, int fd, struct pfi_error *err);

/*
 * Regex kind, before pfi_tput_attach: every byte of the job's standard
 * output, as it is read, is also written to `log_fd` (a regular file; a
 * failed write ends the log, pfi_tput_tee_error says its errno) and then to
 * `out_fd` (pfi's own output: written once writable, at most PIPE_BUF bytes
 * at a time, so a stop is never kept waiting; a failed write ends the
 * passing on). -1: not written. The collector does not own or close them.
 */
void pfi_tput_tee(struct pfi_tput *tp, int out_fd, int log_fd);
/* The errno of a failed write to the tee's log file, or 0. */
long pfi_tput_tee_error(const struct pfi_tput *tp);

/* Sets the device clock the threads stamp lines with: `dev_now_s` now, and,
 * when `advancing`, moving on with the real (monotonic) clock. */
void pfi_tput_clock(struct pfi_tput *tp, double dev_now_s, int advancing);

/*
 * Ends an attached stream: waits at most `timeout_s` real seconds for the
 * job's output to end and every line to be matched, then stops the threads
 * (lines not yet matched count as bad lines) and closes fd. Returns 0, or
 * PFI_EBUSY when the matcher is stuck in one line: the collector is then
 * unusable (its matcher thread is left running; pfi_tput_close() leaves
 * the collector to the process's end).
 */
int pfi_tput_detach(struct pfi_tput *tp, double timeout_s,
                    struct pfi_error *err);

/* Resets of a cumulative "tokens" counter seen in this run (the counter
 * went down), and the first, located. The line of a reset has no rate; when
 * the next line resumes above the value before the drop, its rate runs from
 * that value (a glitch, not a jump of tokens), else from the dropped value
 * (a restarted counter). */
long pfi_tput_resets(const struct pfi_tput *tp, struct pfi_error *first);

#endif
