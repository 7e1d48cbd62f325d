/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's state, shared by its control loop (pfid.c) and API (api.c). */
#ifndef PFI_FLEET_PFID_INT_H
#define PFI_FLEET_PFID_INT_H

#include <pthread.h>
#include <stdint.h>

#include "pfi/apitoken.h"
#include "pfi/control.h"
#include "pfi/dbtable.h"
#include "pfi/fleet.h"
#include "pfi/flexcap.h"
#include "pfi/http.h"
#include "pfi/meter.h"
#include "pfi/pfid.h"

#define PFID_MAX_EVENTS 64
/* Periods raises wait behind new decreases before they go out with them
 * (pfid.c control_step). */
#define PFID_RAISE_WAIT_MAX 2
/* Jobs whose tier was set through the API (keys tier.*). */
#define PFID_MAX_TIERS 1024

/* A node's measured power counts for the meter while it is at most this
 * old, s (3 BMC readings at pfi-agent's default --bmc-period). */
#define PFID_NODE_POWER_FRESH_S 30.0

struct pfid_node {
  char name[PFI_FLEET_NAME_MAX];
  struct pfi_fleet_telemetry tel; /* newest telemetry */
  int have_tel;
  double seen_mono; /* when it arrived */
  int stale;
  /* The newest assignment published for the node. */
  uint64_t seq, rev; /* its sequence number, the key's revision */
  int restore;       /* it was a restore (or none was published) */
  unsigned n;
  uint32_t caps[PFI_FLEET_MAX_GPUS];
  uint64_t need_seq; /* a decrease awaiting confirmation, 0 when none */
  char reason[PFI_FLEET_NAME_MAX]; /* the controller's last decision about
                                      its jobs ("" none since the restore) */
  /* What its agent may say (docs/fleet.md "Trust"): a token bucket of the
   * messages taken before decoding (PFID_TEL_RATE a second, PFID_TEL_BURST
   * at once), the signature of the GPUs its first plausible telemetry
   * registered, and the newest refusal (why, when, how many). A node with
   * a refusal in the last PFID_SUSPECT_S is suspect; its refused messages
   * are not believed (it goes stale when none is). */
  double tb_tokens, tb_mono;
  uint64_t gpu_sig;
  int registered;
  char suspect[192];
  double suspect_mono;
  unsigned long refused;
  uint64_t adopted_seq; /* the last sequence adopted from its telemetry */
};
#define PFID_TEL_RATE 20.0
#define PFID_TEL_BURST 40.0
#define PFID_SUSPECT_S 10.0
/* 1 when node n had telemetry refused within PFID_SUSPECT_S of mono. */
int pfid_node_suspect(const struct pfid_node *n, double mono);

struct pfi_pfid {
  struct pfi_pfid_opts o;
  char id[PFI_FLEET_NAME_MAX];
  char token[256];
  /* The API's tokens (pfid --tokens, and --token-file's as "token-file",
   * admin), none when neither is given; tokens_on: --tokens was given,
   * so reads need a token too. */
  struct pfi_api_token *tokens;
  size_t n_tokens;
  int tokens_on;
  struct pfi_nats *nc;
  struct pfi_nats_sub *tel;
  struct pfi_db *db; /* the records file (fleet_records.c) */
  struct pfid_rec *rec; /* its rows not yet written (fleet_records.c) */
  struct pfi_http *http;
  /* Set by the API when an event was submitted or cancelled: the next
   * period starts at once rather than at its time (__atomic access). */
  int wake;
  pthread_mutex_t mu; /* everything below, against the API's thread */
  struct pfid_node *node;
  size_t n_nodes, cap_nodes;
  /* The nodes by name: an open-addressing table of node index + 1 (0
   * empty), ix_cap slots (a power of two, at least twice n_nodes). */
  size_t *node_ix, ix_cap;
  struct pfi_fleet_event ev[PFID_MAX_EVENTS];
  size_t n_ev;
  struct pfi_fleet_tier tier[PFID_MAX_TIERS]; /* by job id, sorted */
  size_t n_tier;
  int leader;
  uint64_t leader_rev;            /* our lease's revision while leader */
  uint64_t seen_rev;              /* standby: the lease revision last seen */
  double seen_rev_mono;           /* standby: when it changed */
  double leader_since_mono;       /* leader: when we took over */
  int pending_raise;              /* increases wait for the decreases */
  int raise_waited; /* periods raises have waited behind new decreases */
  /* The control module's state kept in the bucket (key "ctl"): what this
   * leader wrote last, or read when it took the lead. */
  struct pfi_fleet_ctl_state ctl_state;
  int have_ctl_state;
  int takeover_check; /* took the lead: is a recovery to go on? */
  char event[PFI_FLEET_NAME_MAX]; /* the active event, "" when none */
  double target_w, power_w, budget_w; /* target_w: GPU power */
  /* Targets at the node or the meter (--meter-config; docs/fleet.md
   * "Levels"): the meter chain (defaults when none: then only GPU targets
   * are accepted), the active event's level and target as stated, and
   * whether it was infeasible this period (short by shortfall_w at its
   * level). node_w, meter_w: the fleet's power at the node and the meter
   * this period (NAN without --meter-config). */
  struct pfi_meter_config meter;
  int have_meter;
  int level;
  double stated_w, shortfall_w;
  int infeasible;
  char infeasible_ev[PFI_FLEET_NAME_MAX]; /* logged as infeasible */
  double node_w, meter_w;
  unsigned long steps, published, cas_lost, takeovers, bad_tel;
  /* Telemetry refused for its node's rate or as implausible (bad_tel
   * counts the malformed); sequence numbers adopted from the agents (a
   * node applied one above ours: an assignment not ours, or the bucket
   * lost); times the bucket was found gone and made again. */
  unsigned long tel_rate, tel_implausible, seq_adopted, bucket_recreated;
  double bucket_recreated_t; /* Unix time of the newest, 0 none */
  /* The wall clock against pfid's (pfid_wall, pfid.c): when last
   * compared (monotonic), the difference then, s, whether it is a step
   * (more than 1 s) and how many steps were seen. */
  double clock_mono, clock_diff_s;
  int clock_step;
  unsigned long clock_steps;
  /* The control module (pfi/control.h) over the nodes known when it was
   * built: GPU g of ctl_node[i] is controller GPU ctl_first[i] + g. */
  struct pfi_ctl *ctl;
  size_t ctl_nn, ctl_ngpus;
  char (*ctl_node)[PFI_FLEET_NAME_MAX];
  size_t *ctl_first;
  char *ctl_sig;       /* nodes, GPU counts and jobs it was built for */
  double ctl_t0;       /* monotonic time of its first period */
  long long ctl_epoch; /* names its records */
  double aim_w;
  int recovering;
  /* The recovery this period (control.h pfi_ctl_output): the event, the
   * ramp's limit, the ceiling, W, the rate, W/s, the window left, s, and
   * whether it held every job. */
  char rec_event[64];
  double rec_limit_w, rec_ceiling_w, rec_rate_w_s, rec_left_s;
  int rec_held;
  int takeover_wait; /* took the lead: nodes keep the previous leader's
                        caps until their first telemetry */
  /* The work of each period led (lease, bucket, control module,
   * publishing), s: the newest PFID_PERIODS in a ring, and a histogram of
   * all of them for /metrics. */
#define PFID_PERIODS 4096
  double period_s[PFID_PERIODS];
  unsigned long n_periods;
  double period_sum_s;
  unsigned long period_hist[14];
  /* Live flexible capacity (pfid_capacity.c): the tiers' longest events
   * (--tiers) and the jobs' PFI estimates (--model, --features). */
  struct pfi_tier *cap_tier;
  size_t n_cap_tier;
  struct pfi_flex_estimate *est;
  size_t n_est;
};
/* Upper bounds of the histogram's buckets, s (the last is +Inf). */
extern const double pfid_period_le[13];

struct pfi_ctl;
/* Runs one period of the control module: builds (or, when the nodes or
 * jobs changed, rebuilds) it, feeds it the telemetry, records its
 * decisions and fills want[node index][gpu]. `ev` NULL outside an event
 * (recovery). Returns 1 while the module has caps to apply (an event or
 * its recovery), 0 when done (it is then closed), or an error. Called
 * with d->mu held. */
int pfid_ctl_period(struct pfi_pfid *d, const struct pfi_fleet_event *ev,
                    uint32_t (*want)[PFI_FLEET_MAX_GPUS],
                    struct pfi_error *err);
void pfid_ctl_close(struct pfi_pfid *d);
/* The tier of job `job`: the API's (keys tier.*) when set, else the one
 * its node reports (node `hint` only, when not NULL), else none. Returns
 * the largest loss (0..1, or -1 for none) and sets *source to "api",
 * "node" or "". pfid_api_tier: the API's only. Called with d->mu held. */
/* Reads the tiers set through the API from the bucket's keys (those that
 * start with "tier."; pfid_tiers.c). */
void pfid_load_tiers(struct pfi_pfid *d, char **keys, size_t nk);
double pfid_job_tier(struct pfi_pfid *d, const char *job,
                     const struct pfid_node *hint, const char **source);
double pfid_api_tier(const struct pfi_pfid *d, const char *job);
/* The rest of job `job`'s contract for the controller (docs/fleet.md
 * "Tiers"): each term the API's (PUT /v1/tiers/JOB) where set, else its
 * node's (the agent's tier file), else the tier file's (--tiers) row for
 * its max_loss `loss`, else 0 (none). *source: "api", "node", "file" or ""
 * for the longest event and notice. Called with d->mu held. */
void pfid_job_terms(const struct pfi_pfid *d, const char *job, double loss,
                    double *max_event_s, double *notice_s,
                    double *deadline_tput, const char **source);
/* The two-phase rule: a node's decrease (need_seq) is confirmed when its
 * telemetry says it applied that sequence number and every limit reads
 * back at or below its cap; the period's increases wait while any of the
 * n nodes, stale ones included, has one unconfirmed. */
int pfid_confirmed(const struct pfid_node *n);
/* A node's state from its assignment in the bucket, read by a pfid taking
 * the lead: the previous leader may have published a decrease the agent
 * has not confirmed, so a cap assignment is taken as awaiting
 * confirmation (need_seq = its sequence number) until the node's
 * telemetry shows it applied; a restore awaits nothing. */
void pfid_node_from_bucket(struct pfid_node *n, const struct pfi_fleet_assign *a,
                           uint64_t rev);
int pfid_raises_wait(const struct pfid_node *node, size_t n);
/* What a period publishes under the two-phase rule: PFID_PUB_WANT the
 * caps wanted, PFID_PUB_DOWN their decreases only (the raises wait),
 * PFID_PUB_HOLD the caps in force. `unconfirmed`: some node's decrease is
 * not confirmed (pfid_raises_wait); `pending_raise`: the previous period
 * held raises back behind its decreases; `any_down`/`any_up`: this period
 * lowers/raises some GPU; `raise_waited`: periods raises have waited
 * behind new decreases. A raise never goes out while a decrease of an
 * earlier period is unconfirmed, whether that period raised too or only
 * cut. *with_down: 1 when the raises go out with this period's decreases
 * (PFID_RAISE_WAIT_MAX). */
enum { PFID_PUB_WANT, PFID_PUB_DOWN, PFID_PUB_HOLD };
int pfid_phase(int pending_raise, int unconfirmed, int any_down, int any_up,
               int raise_waited, int *with_down);
/* A job's throughput as the control module observes it, from one node's
 * report more (`tokens_per_s` >= 0; `*nrep` the reports taken so far,
 * counted here): a job spanning nodes, reported by several (each task
 * reporting the whole job's rate, docs/throughput-protocol.md), is
 * observed at their mean, whichever node's came last; one reported by a
 * single node (rank 0's, pfi_trainer) at that node's. */
void pfid_job_tput_add(struct pfi_ctl_job_obs *o, unsigned *nrep,
                       double tokens_per_s);
/* A node's measured power now (docs/fleet.md, "Node power"): -1 when its
 * telemetry carries none; else its age (the reading's age when sent plus
 * the time since it arrived) and 1 when fresh (the node live and the age
 * at most PFID_NODE_POWER_FRESH_S), 0 when stale. *gpu_w: the GPUs' power
 * of the same telemetry; *other_w: node - GPUs, NAN where a GPU has no
 * power or the difference is negative (the baseline applies then). */
int pfid_node_power(const struct pfid_node *n, double mono, double *gpu_w,
                    double *other_w, double *age_s);
/* The node named `name`, or NULL. */
struct pfid_node *pfid_node_find(struct pfi_pfid *d, const char *name);

/* Records one row of the leadership/fleet log (what, detail). */
void pfid_log(struct pfi_pfid *d, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The live flexible capacity (pfid_capacity.c): what the fleet could shed
 * now, in total and per tier (the jobs of one max_loss; 1 = no tier). Called
 * with d->mu held. Returns 0 or PFI_EINVAL (no job with a draw and a
 * throughput), PFI_ENOMEM. */
#define PFID_CAP_TIERS 16
#define PFID_CAP_DURS 8
struct pfid_capacity {
  size_t njobs, skipped, ntiers, ndur;
  size_t believed, estimated; /* jobs on the controller's belief, with an
                                 estimate's interval */
  struct pfi_flexcap all;     /* any event up to all.duration_s */
  /* Events longer than the shortest bound: each entry the quote for
   * events up to dur[k].duration_s (INFINITY: any length). */
  struct pfi_flexcap dur[PFID_CAP_DURS];
  struct {
    double max_loss, uncapped_w, floor_w;
    double max_event_s; /* the tier file's longest event; 0: none */
    size_t jobs;
  } tier[PFID_CAP_TIERS];
};
int pfid_capacity(struct pfi_pfid *d, struct pfid_capacity *c,
                  struct pfi_error *err);
/* Loads --tiers, --model and --features (at open); frees them. */
int pfid_capacity_open(struct pfi_pfid *d, struct pfi_error *err);
void pfid_capacity_close(struct pfi_pfid *d);
/* The PFI estimate of `job` (--model), or NULL. */
const struct pfi_flex_estimate *pfid_estimate(const struct pfi_pfid *d,
                                              const char *job);
/* The HTTP API's handler (api.c). */
void pfid_api(void *arg, const struct pfi_http_req *rq,
              struct pfi_http_resp *rs);
/* pfid's Unix time (its monotonic clock plus an offset that follows the
 * wall clock's slews, not its steps: docs/fleet.md "Clocks"), and its
 * monotonic clock, s. */
double pfid_wall(void);
double pfid_mono(void);

/* The records file (fleet_records.c): opened at start; each write logs a
 * failure to stderr and goes on (the caps matter more than their record). */
struct pfid_assign_rec {
  int64_t id;
  double t_s;
  const char *leader, *node;
  int64_t seq;
  const char *event, *kind, *caps_mw;
};
int pfid_records_open(struct pfi_pfid *d, struct pfi_error *err);
/* A row that cannot be written (a full file system) is held in memory, at
 * most PFID_REC_QUEUE rows (the oldest dropped past that), and written
 * before any newer one once it can: at the next write or the period's
 * pfid_records_flush. Between pfid_records_begin and _end rows are
 * written together in one transaction at _end. */
#define PFID_REC_QUEUE 16384
void pfid_records_begin(struct pfi_pfid *d);
void pfid_records_end(struct pfi_pfid *d);
void pfid_records_flush(struct pfi_pfid *d);
void pfid_records_close(struct pfi_pfid *d);
struct pfid_records_state {
  int failing;            /* the newest write failed */
  size_t pending;         /* rows held */
  unsigned long failed;   /* writes that failed */
  unsigned long dropped;  /* rows dropped past the bound */
  unsigned long written_late; /* rows written after a failure */
  char err[256];          /* the newest failure */
};
void pfid_records_state(struct pfi_pfid *d, struct pfid_records_state *s);
void pfid_records_log(struct pfi_pfid *d, const char *what, const char *detail);
void pfid_records_assign(struct pfi_pfid *d, const struct pfi_fleet_assign *a,
                         const char *kind);
void pfid_records_decision(struct pfi_pfid *d, const struct pfi_ctl_record *r);
/* One API mutation (event, cancel, tier) as its request was answered:
 * who (the token's name and role), from where (pfi_http_req.peer), what
 * (method, path, the body's first bytes) and the HTTP status. */
struct pfid_audit_rec {
  int64_t id;
  double t_s;
  const char *pfid, *who, *role, *peer, *method, *path, *body;
  int64_t status;
  const char *error;
};
void pfid_records_audit(struct pfi_pfid *d, const struct pfid_audit_rec *a);
/* Which audit rows pfid_records_audits() reads: those with id > since,
 * t > after_s (Unix time; NaN: any) and, when who is set, that token's
 * name; at most `limit`, the first ones in id order or, with `last`, the
 * newest ones (still in id order). */
struct pfid_audit_filter {
  int64_t since;
  double after_s;
  const char *who;
  size_t limit;
  int last;
};
int pfid_records_audits(struct pfi_pfid *d, const struct pfid_audit_filter *f,
                        int (*fn)(void *ctx, const struct pfid_audit_rec *a),
                        void *ctx, struct pfi_error *err);
/* The assignments with id > since, in id order, at most `limit`. */
int pfid_records_assignments(struct pfi_pfid *d, int64_t since, size_t limit,
                             int (*fn)(void *ctx,
                                       const struct pfid_assign_rec *a),
                             void *ctx, struct pfi_error *err);

#endif
