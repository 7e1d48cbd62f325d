/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The node agent's core: one node's GPUs, its local record, and the safety
 * rules of the fleet's leases. No network of its own: pfi-agent feeds it
 * the assignments that arrive over NATS and publishes the telemetry it
 * returns; tests and benchmarks drive it directly. Times are passed in by
 * the caller, so that every rule can be tested without waiting: the
 * monotonic clock, which the lease, the hold and the event's end run on,
 * and Unix time, used only at the edges (an event's end is converted to
 * the monotonic clock once, when it arrives or at the first call after
 * open for an end from the record; telemetry's time; a step of the wall
 * clock is counted, pfi_agent_stats).
 *
 * The rules (docs/fleet.md):
 *  - An assignment is applied only when its sequence number is above every
 *    one seen before (also across restarts: the newest is in the local
 *    record); older and replayed ones are ignored.
 *  - Before the first change each GPU's power limit is recorded in the local
 *    record's cap ledger (the trace store's, kept until restored); restore
 *    puts back *that* limit, not the default.
 *  - Caps are applied all-or-none: when one GPU refuses, the GPUs already
 *    changed are put back to what they had and the assignment is rejected.
 *    Each is read back.
 *  - The assignment and its sequence number are written to the record
 *    before any cap moves, so that a restarted agent resumes exactly them.
 *  - Controller lost (no newer assignment within the lease): during an
 *    event the caps are held, never raised, until the event's end, then the
 *    recorded limits are restored; outside an event they are restored at
 *    once.
 *  - A limit that drifts from the assignment (driver reload, persistence
 *    mode off, another tool) is re-applied and the re-application recorded.
 */
#ifndef PFI_AGENT_H
#define PFI_AGENT_H

#include <stdint.h>

#include "pfi/error.h"
#include "pfi/fleet.h"
#include "pfi/throughput.h"

struct pfi_agent_opts {
  const char *node;       /* the node's name (pfi_fleet_name_ok) */
  const char *backend;    /* "emu" or "nvml" */
  const char *params;     /* backend parameters (NULL: defaults) */
  const char *record;     /* path of the local record (SQLite), created */
  const char *jobmap_dir; /* GPU -> job files (dcgm-exporter HPC format:
                             one file per GPU index holding the job id), or
                             NULL: the Slurm job of each GPU's compute
                             processes, from their cgroups, where the
                             backend lists them (nvml) */
  const char *tput_dir;   /* per-job throughput, DIR/<job>.jsonl in the
                             throughput protocol, or NULL */
  const char *tier_dir;   /* per-job tier, DIR/<job> holding the largest
                             tolerated throughput loss 0..1 (the Slurm
                             prolog writes it), or NULL */
  const char *emu_job;    /* emu backend: a job-library id to run on all
                             GPUs (EMULATED throughput), or NULL */
  /* Each job's throughput reports (pfi_agent_post_throughput): at most
   * post_rate a second, beyond a burst of post_burst (0: the defaults,
   * PFI_AGENT_POST_RATE and PFI_AGENT_POST_BURST). */
  double post_rate, post_burst;
  double tput_max_age_s;  /* a tput_dir line older than this, s, is not
                             the job's throughput (pfi_fleet_tput_current);
                             0: PFI_AGENT_TPUT_MAX_AGE_S */
};

/* An agent. Opaque. */
struct pfi_agent;

/*
 * Opens the device and the record, takes the GPUs' locks (pfi_gpu_lock_take,
 * command "agent") and resumes from the record: caps of an event that is
 * still on at `now_s` (Unix time) are held (re-applied where they drifted);
 * anything else in the ledger is restored. Returns 0, PFI_EBUSY (another pfi
 * holds a GPU), or a device or store error. Close with pfi_agent_close().
 */
int pfi_agent_open(struct pfi_agent **ag, const struct pfi_agent_opts *o,
                   double now_s, struct pfi_error *err);

/* Closes without touching the caps: a stopped agent's caps stay as the
 * record says, and the next start resumes them (pfi_agent_restore first to
 * give them back). Safe with NULL. */
void pfi_agent_close(struct pfi_agent *ag);

/*
 * One assignment message (`len` bytes as received). `now_s` is Unix time,
 * `mono_s` the monotonic clock. Returns 1 when applied, 0 when ignored (not
 * for this node, or a sequence number not above the newest seen: old or
 * replayed), PFI_EPARSE for a malformed message, PFI_EINVAL for one that
 * does not fit the node (cap count, cap outside a GPU's limits), or the
 * device's error (the caps then are as before).
 */
int pfi_agent_handle(struct pfi_agent *ag, const char *msg, size_t len,
                     double now_s, double mono_s, struct pfi_error *err);

/*
 * Called every period: applies the lease rules, re-applies drifted limits,
 * samples the GPUs and fills `t` (may be NULL). Returns 0 or the first
 * error (the other steps still run).
 */
int pfi_agent_tick(struct pfi_agent *ag, double now_s, double mono_s,
                   struct pfi_fleet_telemetry *t, struct pfi_error *err);

/* Restores the recorded limits now (the agent is then idle). Returns the
 * number of GPUs restored or an error. */
int pfi_agent_restore(struct pfi_agent *ag, struct pfi_error *err);

/* Counters and state, for /metrics and the tests. */
struct pfi_agent_stats {
  enum pfi_agent_mode mode;
  uint64_t seq;       /* newest sequence number seen */
  unsigned applied;   /* assignments applied since open */
  unsigned ignored;   /* old or replayed assignments ignored */
  unsigned rejected;  /* malformed or unfit assignments */
  unsigned reapplied; /* drift re-applications */
  unsigned restores;  /* restores of the recorded limits */
  unsigned tput_dropped; /* a job's throughput left out of telemetry: above
                            PFI_FLEET_TPUT_MAX (a file's; posts above it
                            are refused) */
  unsigned tput_stale;   /* reads of a job's throughput file whose newest
                            line was not current (pfi_fleet_tput_current):
                            left out of telemetry, one a job a tick */
  unsigned tput_stale_jobs; /* jobs whose file's newest line was not
                               current at the newest tick */
  double event_end_s; /* the held event's end, 0 when none */
  unsigned clock_steps; /* steps of the wall clock seen (its difference to
                           the monotonic clock changed by more than
                           PFI_AGENT_CLOCK_STEP_S between two calls) */
  double clock_step_s;  /* the newest step, s (+: the wall clock jumped
                           ahead) */
  int cannot_record;    /* 1 while the local record cannot be written (a
                           full disk): the state is kept in memory and
                           written again every tick (telemetry's
                           record_ok false) */
};
void pfi_agent_stats(const struct pfi_agent *ag, struct pfi_agent_stats *s);

/* 1 and *err (the newest failure) while the local record cannot be
 * written, else 0. Meanwhile the agent applies an assignment only when no
 * cap is above its GPU's limit before the first change (known in memory: a
 * cut is always safe; anything else is refused), restores from memory, and
 * each pfi_agent_tick tries to write the record again. */
int pfi_agent_record_error(const struct pfi_agent *ag, struct pfi_error *err);

/* A change of the wall clock against the monotonic one between two calls
 * larger than this, s, is a step (NTP slews by far less). */
#define PFI_AGENT_CLOCK_STEP_S 1.0

/* Seconds left of the event whose caps the agent holds or tracks, on the
 * monotonic clock (`mono_s`): its end converted once when it arrived, so a
 * step of the wall clock moves neither the hold nor this. 0 outside one. */
double pfi_agent_event_left(const struct pfi_agent *ag, double mono_s);

/*
 * What the job on the node is told about its cap (docs/fleet.md, "The cap
 * as the job sees it"): one JSON object (and a newline) with the node, the
 * time, the agent's mode, the event in force and its end, the reason
 * ("cut", "raise", "floor", "infeasible", "rollback", "recovery",
 * "anomaly": the controller's last decision about the node's jobs;
 * "restore" once the recorded limits are back; "hold" while the controller
 * is lost during an event; "none" before any cap), since when the caps
 * and reason are as they are, each GPU's limits from the telemetry `t`
 * (pfi_agent_tick's), and per job its GPUs, mean cap and default. Writes
 * it to buf (n bytes); returns its length, PFI_ERANGE or PFI_ENOMEM.
 */
int pfi_agent_cap_json(const struct pfi_agent *ag,
                       const struct pfi_fleet_telemetry *t, char *buf,
                       size_t n, struct pfi_error *err);
/* Writes `len` bytes to `path` atomically (a file beside it, then rename),
 * mode 0644. Returns 0 or PFI_EIO. */
int pfi_agent_cap_write(const char *path, const char *json, size_t len,
                        struct pfi_error *err);

/*
 * A throughput report a trainer posted for job `job` (pfi-agent's
 * --tput-listen endpoint): `len` bytes holding one line of the throughput
 * protocol (docs/throughput-protocol.md), received at monotonic `mono_s`.
 * `peer_pid` > 0 is the posting process (a Unix socket's peer) and
 * `peer_uid` its user: it must be in the job. When its cgroup
 * (/proc/PID/cgroup) places it in a Slurm job, that must be `job`; in none,
 * its user must own the job on this node (the owner of a mapping file that
 * names it, or the user of the job's compute process on a GPU), or be root
 * (0, which may post for any job). `peer_pid` <= 0: the poster is not
 * known (loopback TCP), nothing is checked. The report's tokens_per_s, or
 * its cumulative tokens over the job's previous report, is the job's
 * throughput in telemetry for PFI_AGENT_POST_TTL_S (it wins over
 * --tput-dir). Returns 1 and sets *rate, 0 when the report gives no rate
 * yet (the first cumulative one, or a counter that went down),
 * PFI_ENOTFOUND (no GPU of this node runs `job`), PFI_ENOPERM (the poster
 * is not in the job), PFI_EBUSY (the job posted more than the agent's
 * post_rate reports a second, beyond a burst of post_burst: dropped,
 * nothing changes), PFI_ERANGE (a rate above
 * PFI_FLEET_TPUT_MAX, which pfid would refuse: nothing changes), PFI_EPARSE
 * (err located as "body", line 1 and the column). Safe to call from another
 * thread than pfi_agent_tick's.
 */
#define PFI_AGENT_POST_TTL_S 10.0
#define PFI_AGENT_POST_RATE 20.0
#define PFI_AGENT_POST_BURST 40.0
int pfi_agent_post_throughput(struct pfi_agent *ag, const char *job,
                              const char *body, size_t len, long peer_pid,
                              long peer_uid, double mono_s, double *rate,
                              struct pfi_error *err);

/* The Slurm job a process belongs to from its cgroup file (a path
 * component "job_N", as Slurm's cgroup plugins name it, v1 or v2):
 * "slurm-N" into buf. Returns 1, 0 when it is in no Slurm job, or PFI_EIO
 * when the file cannot be read. `cgroup_path` NULL: /proc/PID/cgroup. */
int pfi_fleet_cgroup_job(long pid, const char *cgroup_path, char *buf,
                         size_t n, struct pfi_error *err);

/*
 * The newest throughput in a JSONL file of the throughput protocol: reads
 * at most the last 64 KiB, takes the newest line's "tokens_per_s", or the
 * rate between the two newest lines' cumulative "tokens". Returns 1 and
 * sets *rate (tokens/s), 0 when the file has no usable line, or PFI_EIO.
 */
int pfi_fleet_tail_rate(const char *path, double *rate, struct pfi_error *err);
/* The same, and the newest line's phase fields into *ph, its Unix time
 * "t" into *line_t (NaN: none, or "elapsed_s") and the file's modification
 * time (Unix time, s) into *mtime_s (NaN: not read); any may be NULL. */
int pfi_fleet_tail_report(const char *path, double *rate,
                          struct pfi_step_phase *ph, double *line_t,
                          double *mtime_s, struct pfi_error *err);

/*
 * Whether a job's newest throughput line is its current throughput at
 * `now_s` (Unix time), or what a job that stopped writing left behind (its
 * start-up, a pause, a hang, its end, a crash). Its age is now_s less the
 * line's own Unix time `line_t` ("t", "timestamp" or "time"), or, for a
 * line without one (NaN: "elapsed_s" only, or no timestamp), less the
 * file's modification time `mtime_s`. Sets *age_s (may be NULL; NaN when
 * neither is known). Returns 1 when the age is within -max_age_s..max_age_s,
 * else 0: older, dated ahead of the clock by more (a wrong unit, e.g.
 * milliseconds), of no known age, or max_age_s not a positive number.
 * pfi-agent reports a line that is not current as no throughput, its phase
 * and announcements unknown, and counts it (pfi_agent_stats' tput_stale).
 */
#define PFI_AGENT_TPUT_MAX_AGE_S 30.0
int pfi_fleet_tput_current(double now_s, double line_t, double mtime_s,
                           double max_age_s, double *age_s);

/* ---- node power --------------------------------------------------------
 * What the agent reports as the node's power (telemetry's node_w,
 * docs/fleet.md "Node power"): one source, none by default.
 *  - emulated: the emulator's node model (include/pfi/emu.h,
 *    pfi_emu_node_other_w) over the GPUs' power of the same telemetry;
 *  - RAPL (Linux powercap): the GPUs' power plus CPU packages and DRAM over
 *    the interval since the previous fill (nothing at the first);
 *  - the BMC (pfi_bmc_read): a thread of its own reads it every
 *    bmc_period_s (the tool may take seconds; it never delays the agent's
 *    loop), and each fill reports the newest reading with its age, brought
 *    to the GPUs' power of this telemetry (the reading less the GPUs' power
 *    of the newest fill at or before its instant, plus theirs now); none
 *    once it is older than 3 periods.
 * A fill where a GPU has no valid power reports none for the emulated and
 * RAPL sources (the sum would be short). */
struct pfi_node_meter_opts {
  int emulated;         /* the emulator's node model */
  const char *powercap; /* powercap root ("default": /sys/class/powercap;
                           NULL or "none": not read) */
  const char *bmc;      /* pfi_bmc_open's spec (NULL or "none": not read) */
  double bmc_period_s;  /* 1..3600 s; each reading's timeout is the period
                           or PFI_BMC_TIMEOUT_S, whichever is less */
};
struct pfi_node_meter;
/* A RAPL or BMC source wins over `emulated`, and "none" for either turns
 * the emulated node off (no node power); both RAPL and the BMC:
 * PFI_EINVAL. RAPL without a readable package zone: PFI_ENOTFOUND; the
 * BMC's errors are pfi_bmc_open's. */
int pfi_node_meter_open(struct pfi_node_meter **m,
                        const struct pfi_node_meter_opts *o,
                        struct pfi_error *err);
/* Sets t->node_w, node_source and node_age_s from t's GPUs at `mono_s`
 * (CLOCK_MONOTONIC), or node_w -1 when there is no reading. NULL m: none. */
void pfi_node_meter_fill(struct pfi_node_meter *m,
                         struct pfi_fleet_telemetry *t, double mono_s);
/* The source's name, PFI_NODE_SOURCE_* or "" for none. */
const char *pfi_node_meter_source(const struct pfi_node_meter *m);
/* 1 and *err (the first failure) once per run of failed BMC readings, for
 * the log; else 0. */
int pfi_node_meter_error(struct pfi_node_meter *m, struct pfi_error *err);
/* Stops the BMC thread (waiting for a reading in flight) and frees. */
void pfi_node_meter_close(struct pfi_node_meter *m);

#endif
