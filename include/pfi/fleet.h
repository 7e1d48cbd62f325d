/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fleet's messages: what pfid and pfi-agent say to each other over NATS
 * (docs/fleet.md gives the subjects, the key-value bucket and every field).
 *
 *  - An assignment (pfid -> one agent, key "assign.<node>" of the bucket,
 *    republished by the server on subject "pfi.assign.<node>"): a sequence
 *    number, the lease, the grid event and its end time, and either one cap
 *    per GPU of the node or "restore" (put back the limits recorded before
 *    the first change).
 *  - Telemetry (agent -> pfid, subject "pfi.telemetry.<node>", every
 *    period): per GPU its limits, the limit read back, the enforced limit,
 *    power and job; per job its throughput; the sequence number applied.
 *  - An event (API -> pfid, key "event.<id>"): a target for the fleet's
 *    power between a start and an end time.
 *
 * Messages are JSON objects of at most PFI_FLEET_MSG_MAX bytes. Decoders
 * check every field (type, range, names usable in a NATS subject) and
 * reject anything else with PFI_EPARSE and a message naming the field;
 * they never read past `len`. Times are Unix seconds (double), powers in
 * the units their names carry.
 */
#ifndef PFI_FLEET_H
#define PFI_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/meter.h"

/* Largest message either side accepts, bytes. */
#define PFI_FLEET_MSG_MAX 65536
/* Most GPUs per node and jobs per node a message carries. */
#define PFI_FLEET_MAX_GPUS 64
#define PFI_FLEET_MAX_JOBS 64
/* Names (nodes, events, leaders, jobs): 1..63 bytes of [A-Za-z0-9_-]. */
#define PFI_FLEET_NAME_MAX 64
/* The largest throughput a telemetry message carries, tokens/s (a job's
 * tokens_per_s and deadline_tput): pfid's decoder refuses a message above
 * it, and the agent takes no report above it (its endpoint refuses the
 * post, a file's value is left out of the job's telemetry). */
#define PFI_FLEET_TPUT_MAX 1e15
/* Version of the message format, the "v" field. */
#define PFI_FLEET_VERSION 1

/* 1 when `s` is a valid name (usable as one token of a NATS subject). */
int pfi_fleet_name_ok(const char *s);

struct pfi_fleet_assign {
  char node[PFI_FLEET_NAME_MAX];   /* the agent this is for */
  uint64_t seq;                    /* > 0; strictly increasing per node */
  char leader[PFI_FLEET_NAME_MAX]; /* the pfid that issued it */
  double issued_s;                 /* Unix time of issue */
  double lease_s; /* the agent counts the controller lost when no newer
                     assignment arrives within this, s (0.1..3600) */
  char event[PFI_FLEET_NAME_MAX]; /* "" outside an event */
  double event_end_s; /* Unix time the event ends; 0 outside an event */
  int restore;        /* 1: restore the recorded limits (n is 0) */
  unsigned n;         /* caps: one per GPU of the node, in index order */
  uint32_t cap_mw[PFI_FLEET_MAX_GPUS];
  /* Why the caps are what they are (optional, "reason"): the controller's
   * last decision about the node's jobs ("cut", "raise", "floor",
   * "infeasible", "rollback", "recovery", "anomaly"), else what the
   * assignment did ("cut", "raise", "refresh"...); "" when not given. */
  char reason[PFI_FLEET_NAME_MAX];
};

/* Encodes `a` into buf (n bytes). Returns the length (< n), PFI_ERANGE when
 * it does not fit, PFI_EINVAL for a field the decoder would reject. */
int pfi_fleet_assign_encode(const struct pfi_fleet_assign *a, char *buf,
                            size_t n, struct pfi_error *err);
/* Decodes `len` bytes. Returns 0 or PFI_EPARSE (err names the field). */
int pfi_fleet_assign_decode(const char *buf, size_t len,
                            struct pfi_fleet_assign *a, struct pfi_error *err);

/* The agent's state, as telemetry reports it. */
enum pfi_agent_mode {
  PFI_AGENT_IDLE = 0,     /* no cap of ours on the GPUs (originals) */
  PFI_AGENT_TRACKING = 1, /* following a live assignment */
  PFI_AGENT_HOLD = 2      /* controller lost during an event: caps held */
};
/* "idle", "tracking", "hold". */
const char *pfi_agent_mode_name(enum pfi_agent_mode m);

struct pfi_fleet_gpu {
  char uuid[96];
  uint32_t min_mw, max_mw, default_mw; /* settable range, factory default */
  uint32_t cap_mw;                     /* the power limit read back */
  uint32_t enforced_mw; /* the enforced limit (lowest of every limiter) */
  uint32_t assigned_mw; /* what the agent applies; 0 when none */
  double power_w;       /* board power, W; negative when not valid */
  char job[PFI_FLEET_NAME_MAX]; /* job on the GPU, "" when none known */
  /* The limit the agent puts the GPU back to (its recorded original: the
   * GPU's limit before the event), mW, while it holds an assignment; 0
   * when it holds none (the limit read back is the GPU's own). Optional
   * in the message ("restore_mw"). */
  uint32_t restore_mw;
};

struct pfi_fleet_job {
  char id[PFI_FLEET_NAME_MAX];
  double tokens_per_s; /* newest throughput the job reported; < 0 unknown */
  double max_loss;     /* its tier: largest tolerated throughput loss, 0..1;
                          < 0 when it has none */
  /* The rest of its contract as its tier file gives it (pfi-agent
   * --tier-dir: "max_loss[,max_event_s[,notice_s[,deadline_tput]]]"); 0:
   * none. */
  double max_event_s, notice_s, deadline_tput;
  /* What its trainer reported of its phase and its next pause (optional
   * fields "phase", "pause_in_s", "pause_len_s"; throughput.h's struct
   * pfi_step_phase, and "end_in_s"): phase enum pfi_phase or -1 unknown;
   * pause_in_s the next pause's start, s after this message's t (< 0:
   * none announced); pause_len_s its expected length (<= 0: unknown);
   * end_in_s the job's announced end, s after t (< 0: none). */
  int phase;
  double pause_in_s, pause_len_s, end_in_s;
};

/* A tier file's line (pfi-agent --tier-dir, written by the Slurm prolog):
 * "max_loss[,max_event_s[,notice_s[,deadline_tput]]]" (empty fields: none;
 * a trailing newline allowed) into j's max_loss and terms. Returns 0, or
 * -1 for a malformed line (j then has no tier: max_loss -1, terms 0). */
int pfi_fleet_tier_line(const char *line, struct pfi_fleet_job *j);

struct pfi_fleet_telemetry {
  char node[PFI_FLEET_NAME_MAX];
  double t_s;           /* Unix time of the sample */
  uint64_t seq_applied; /* newest assignment applied (0: none yet) */
  enum pfi_agent_mode mode;
  unsigned reapplied; /* drift re-applications since the agent started */
  unsigned n;
  struct pfi_fleet_gpu gpu[PFI_FLEET_MAX_GPUS];
  unsigned n_jobs;
  struct pfi_fleet_job job[PFI_FLEET_MAX_JOBS];
  /* The node's power, where the agent measures it (optional fields
   * "node_w", "node_source", "node_age_s"; messages without them decode
   * with node_w < 0: not measured, the configured baseline applies). The
   * DC power of the whole node, its GPUs included, as node_source says
   * (store.h's PFI_NODE_SOURCE_*): "rapl" (the GPUs' power_w of this
   * message plus CPU packages and DRAM over the agent's last period),
   * "dcmi" (the BMC's reading, read off the agent's loop: node_age_s old
   * at t_s), "emulated" (the emulator's node model, include/pfi/emu.h). */
  double node_w;        /* W (0..1e6); < 0 when not measured */
  char node_source[16]; /* "" when not measured */
  double node_age_s;    /* age of the reading at t_s, s (0..1e6) */
  /* 1: the agent cannot write its local record (a full disk): it applies
   * cuts only and keeps its state in memory (optional field
   * "cannot_record", true, written only when set; absent: 0). */
  int cannot_record;
};

/* 1 when `s` names a node power source the message carries. */
int pfi_fleet_node_source_ok(const char *s);

int pfi_fleet_telemetry_encode(const struct pfi_fleet_telemetry *t, char *buf,
                               size_t n, struct pfi_error *err);
int pfi_fleet_telemetry_decode(const char *buf, size_t len,
                               struct pfi_fleet_telemetry *t,
                               struct pfi_error *err);

/* A grid event: the fleet's power at most target_w from start_s to end_s. */
struct pfi_fleet_event {
  char id[PFI_FLEET_NAME_MAX];
  double start_s, end_s; /* Unix times, start < end */
  double target_w;       /* > 0 */
  int cancelled;         /* 1: ended early by the operator */
  double known_s;        /* Unix time it became known (field "known": the
                            submission to pfid's API, or the grid's own
                            creation time where the source has one); 0:
                            unknown. Its notice is start_s - known_s */
  int level;             /* enum pfi_power_level (pfi/timeline.h) target_w
                            is stated at (field "level": "gpu", "node" or
                            "meter"; absent: gpu, as an event record of an
                            older pfid). pfid converts a node or meter
                            target to GPU power each period (--meter-config,
                            pfi_fleet_event_gpu_target) */
};

int pfi_fleet_event_encode(const struct pfi_fleet_event *e, char *buf, size_t n,
                           struct pfi_error *err);
/* "gpu", "node", "meter" (NULL for another value); the level of a name,
 * or -1. */
const char *pfi_fleet_level_name(int level);
int pfi_fleet_level_by_name(const char *s);

/* ---- targets at the node or the meter (docs/fleet.md "Levels") -----------
 * pfid's own accounting is GPU power: a target stated at the node or meter
 * level becomes a GPU target each period, from the nodes' state then. */

/*
 * Node i's non-GPU power for the meter chain from its node-power reading:
 * reading_other_w (node power less its GPUs', NAN when the node has no
 * reading or it is below its GPUs') counts as measured when `fresh`; a
 * reading that is not fresh counts no lower than cfg's node_other_w (the
 * node may still draw what it drew then); without a reading NAN (the chain
 * then takes node_other_w).
 */
double pfi_fleet_node_other_w(const struct pfi_meter_config *cfg,
                              double reading_other_w, int fresh);

/*
 * 1 when the meter chain's wall power rises with a node's DC power at
 * every load (so that a GPU target found by bisection is the largest safe
 * one: less GPU power never draws more at the meter); 0 when a segment of
 * the supplies' curve rises faster than the load, *load_lo..*load_hi.
 */
int pfi_fleet_meter_safe(const struct pfi_meter_config *cfg, double *load_lo,
                         double *load_hi);
/* pfi_meter_config_load, and a curve that is not safe (above) is
 * PFI_EPARSE at the psu_curve line (pfid --meter-config). */
int pfi_fleet_meter_config_load(const char *path, struct pfi_meter_config *cfg,
                                struct pfi_error *err);

/*
 * The GPU target an event's target_w at `level` becomes at the nodes'
 * state now (gpu_w[i], other_w[i] as for pfi_meter_levels): at the GPU
 * level the target itself; at the node or meter level pfi_meter_gpu_limit
 * (GPU power shared as now, other power as measured; the answer is a GPU
 * total whose power at that level is at most the target). Returns 0 with
 * *gpu_target_w and *shortfall_w = 0; 1 when infeasible (the nodes draw
 * more than the target with no GPU power at all): *gpu_target_w = 0,
 * *shortfall_w the excess at the stated level, W; or PFI_EINVAL (no nodes
 * at a node or meter level, a bad input).
 */
int pfi_fleet_event_gpu_target(const struct pfi_meter_config *cfg,
                               const double *gpu_w, const double *other_w,
                               size_t n, int level, double target_w,
                               double *gpu_target_w, double *shortfall_w,
                               struct pfi_error *err);
int pfi_fleet_event_decode(const char *buf, size_t len,
                           struct pfi_fleet_event *e, struct pfi_error *err);

/* A job's tier set through pfid's API (key "tier.<job>"): it overrides the
 * tier the job's node reports (the Slurm prolog's tier file). */
struct pfi_fleet_tier {
  char job[PFI_FLEET_NAME_MAX];
  double max_loss; /* largest tolerated throughput loss, 0..1 */
  char name[PFI_FLEET_NAME_MAX]; /* the named tier it came from, "" none */
  /* The rest of the contract, kept live by the controller; 0: none (the
   * tier file's, pfid --tiers, for the tier's max_loss). */
  double max_event_s;   /* the longest event, s */
  double notice_s;      /* the notice the tier needs, s */
  double deadline_tput; /* the least mean throughput over an event */
};

int pfi_fleet_tier_encode(const struct pfi_fleet_tier *t, char *buf, size_t n,
                          struct pfi_error *err);
int pfi_fleet_tier_decode(const char *buf, size_t len,
                          struct pfi_fleet_tier *t, struct pfi_error *err);

/* What the leading pfid keeps in the bucket (key "ctl") about the event
 * its control module is in, for a pfid that takes the lead from it: the
 * event and the pre-event baseline its recovery stays under. Written when
 * the module has an event's baseline; a new leader that finds nodes still
 * holding an event's caps outside any event goes on with that event's
 * recovery under this baseline (docs/fleet.md "Takeover"). */
struct pfi_fleet_ctl_state {
  char event[PFI_FLEET_NAME_MAX]; /* the event */
  double baseline_w;              /* its pre-event baseline, W (> 0) */
  double t_s;                     /* Unix time written */
};

int pfi_fleet_ctl_state_encode(const struct pfi_fleet_ctl_state *c,
                               char *buf, size_t n, struct pfi_error *err);
int pfi_fleet_ctl_state_decode(const char *buf, size_t len,
                               struct pfi_fleet_ctl_state *c,
                               struct pfi_error *err);

/* The named tiers, as the Slurm prolog knows them: flex0, flex10, flex25,
 * flex50 (largest loss 0, 0.1, 0.25, 0.5). Entry i (0..count-1) by
 * pfi_fleet_tier_named(i, &loss) (NULL past the end); by name with
 * pfi_fleet_tier_lookup (0, or -1 when unknown). */
const char *pfi_fleet_tier_named(size_t i, double *max_loss);
int pfi_fleet_tier_lookup(const char *name, double *max_loss);

/* ---- Prometheus text exposition ------------------------------------------
 * A growing text buffer for the /metrics pages (pfi_ prefix, base units:
 * watts, seconds, tokens per second; docs/fleet.md lists every metric). */
struct pfi_buf {
  char *s; /* NUL-terminated, malloc'd (free with pfi_buf_release) */
  size_t len, cap;
  int oom; /* an allocation failed: the text is incomplete */
};
void pfi_buf_printf(struct pfi_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pfi_buf_release(struct pfi_buf *b);
/* A label value with \, " and newline escaped as the format requires. */
void pfi_buf_label(struct pfi_buf *b, const char *v);

struct pfi_agent_stats;
/* Appends an agent's metrics: its telemetry `t` and counters `s`. */
void pfi_fleet_metrics_agent(struct pfi_buf *b,
                             const struct pfi_fleet_telemetry *t,
                             const struct pfi_agent_stats *s);

struct pfi_ctl;
/* Appends the control module's belief about each job of ids[0..n) that it
 * knows: pfi_job_power_flexibility_index{job} (its believed PFI over the
 * job's power range: the prior until learned points replace it; absent
 * while the job's uncapped point is unknown) and pfi_job_learned_points
 * {job}. `ctl` NULL appends the headers only. */
void pfi_fleet_metrics_jobs(struct pfi_buf *b, const struct pfi_ctl *ctl,
                            const char *const *ids, size_t n);

#endif
