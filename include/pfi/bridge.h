/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The bridge from the grid to pfid: the merged power-target timeline
 * (include/pfi/timeline.h: OpenADR 3 VTN, schedule files) becomes pfid
 * events (POST /v1/events), kept in step with it (a span that the VTN
 * changed is posted again, one it withdrew is cancelled), and pfid's
 * realized power goes back to the VTN as reports (docs/grid.md).
 *
 * pfid controls GPU power. A pfid that keeps node or meter targets itself
 * (pfid --meter-config: its GET /v1/status lists the level in "levels")
 * gets the limits as stated, with their level, when every span is at that
 * one level, and converts them each period from its own readings; else
 * (an older pfid, one without --meter-config, spans at several levels) a
 * limit stated at the node or meter level is converted at every sync from
 * the fleet's current GPU power per node (GET /v1/nodes) through the meter
 * chain (include/pfi/meter.h), and posted as a GPU target. Each
 * resolved span becomes one pfid event named "oadr-<span start>-<hash>";
 * a span is posted to end `overlap_s` after the next one starts when they
 * are back to back: the fleet is never without a target in between, and
 * caps are never released between two intervals of one grid event. Of the
 * events in force pfid runs the lowest target (in the overlap the lower of
 * the two spans), and an agent that loses pfid holds its caps to the end
 * of the whole stretch of booked spans (docs/fleet.md).
 */
#ifndef PFI_BRIDGE_H
#define PFI_BRIDGE_H

#include <stddef.h>

#include "pfi/error.h"
#include "pfi/http.h"
#include "pfi/meter.h"
#include "pfi/timeline.h"

#define PFI_BRIDGE_ID_MAX 64
#define PFI_BRIDGE_MAX_EVENTS 256
#define PFI_BRIDGE_MAX_NODES 4096

struct pfi_bridge_event {
  char id[PFI_BRIDGE_ID_MAX];
  double start_s, end_s, target_w; /* target at `level`, W (> 0) */
  int level; /* enum pfi_power_level: GPU unless pfid takes the span's
                own (sent as "level" when not GPU) */
  int cancelled;
  char source[PFI_TIMELINE_ID_MAX]; /* the span's event (not sent) */
  double known_s; /* when the grid event was created (its span's
                     created_s), sent as "known": pfid's notice; 0 unknown
                     (pfid takes its submission) */
};

/*
 * Converts every span of `in` to the GPU level at the fleet's current
 * state (gpu_w[i], node i's GPU power; other_w may be NULL) and appends it
 * to `out`. A limit that even zero GPU power cannot meet becomes a GPU
 * target of 1 mW (every job at its floor: the controller reports the
 * shortfall) and *infeasible counts it.
 */
int pfi_bridge_to_gpu(const struct pfi_timeline *in,
                      const struct pfi_meter_config *cfg, const double *gpu_w,
                      const double *other_w, size_t nodes,
                      struct pfi_timeline *out, size_t *infeasible,
                      struct pfi_error *err);

/*
 * The pfid events for a resolved timeline (at one level: the events'): spans
 * that end after `now`, in order, back-to-back ones overlapping by overlap_s.
 * Returns the number written (at most max) or PFI_ERANGE when more are needed.
 */
int pfi_bridge_plan(const struct pfi_timeline *gpu, double now,
                    double overlap_s, struct pfi_bridge_event *out, size_t max,
                    struct pfi_error *err);

/* What a sync changes: `post` the events of `want` that pfid lacks or has
 * with another start, end or target; `cancel` pfid's "oadr-" events that
 * are neither cancelled nor over at `now` and that `want` no longer has.
 * Indices into want and have. */
struct pfi_bridge_diff {
  size_t npost, ncancel;
  size_t post[PFI_BRIDGE_MAX_EVENTS], cancel[PFI_BRIDGE_MAX_EVENTS];
};
void pfi_bridge_diff(const struct pfi_bridge_event *want, size_t nwant,
                     const struct pfi_bridge_event *have, size_t nhave,
                     double now, struct pfi_bridge_diff *d);

/* ---- pfid's API over HTTP ---------------------------------------------- */

struct pfi_pfid_client;

/* `url` "http://127.0.0.1:8470" or "https://pfid.example:8470"; token
 * (may be NULL: read-only). Without pfi_pfid_client_tls, the first request
 * refuses plain http to a host that is not loopback (PFI_EINVAL). */
int pfi_pfid_client_open(const char *url, const char *token,
                         struct pfi_pfid_client **out, struct pfi_error *err);
/* The client's TLS (pfi_http_client_tls_check's rules, its errors): the CA
 * pfid's certificate is verified against, a client certificate and key
 * (read now) for a pfid that asks for one, or insecure. */
int pfi_pfid_client_tls(struct pfi_pfid_client *c,
                        const struct pfi_http_client_tls *tls,
                        struct pfi_error *err);
void pfi_pfid_client_close(struct pfi_pfid_client *c);

/* GPU power per node (GET /v1/nodes): gpu_w gets up to max entries, a
 * stale node's with the GPU power it last reported (it still draws at the
 * meter, and pfid's controller counts its GPUs within the target: leaving
 * it out would make a node or meter limit a larger GPU budget). other_w
 * (may be NULL) gets each node's measured non-GPU power, node power - GPU
 * power as pfid serves it ("node_power"'s "other_w"): where the reading is
 * fresh (and the node live), that; where it is not, that when it is above
 * cfg's node_other_w (so that a reading gone stale never lowers the
 * estimate below what was last measured), else NAN; NAN where it is absent
 * or negative (pfi_meter_gpu_limit then uses the configured node_other_w).
 * cfg may be NULL (a reading that is not fresh: NAN). Returns the number
 * of nodes. */
int pfi_pfid_client_nodes(struct pfi_pfid_client *c,
                          const struct pfi_meter_config *cfg, double *gpu_w,
                          double *other_w, size_t max, struct pfi_error *err);
/* The levels pfid accepts events at (GET /v1/status "levels"): a bit per
 * enum pfi_power_level into *mask; an older pfid that does not say: GPU
 * only. */
int pfi_pfid_client_levels(struct pfi_pfid_client *c, unsigned *mask,
                           struct pfi_error *err);
/* The fleet's realized GPU power and target now (GET /v1/status). */
int pfi_pfid_client_status(struct pfi_pfid_client *c, double *power_w,
                           double *target_w, struct pfi_error *err);
/* pfid's events (GET /v1/events). Returns the number (<= max). */
int pfi_pfid_client_events(struct pfi_pfid_client *c,
                           struct pfi_bridge_event *out, size_t max,
                           struct pfi_error *err);
/* Every job's throughput (GET /v1/jobs; a job on several nodes counted
 * once, as its first node reports it): names copied into name[i] (64
 * bytes each), throughput into tput[i], and (held not NULL) into held[i]
 * 1 while pfid's controller holds it under its pre-event caps, 0 when not,
 * -1 when pfid does not say. Returns the number of jobs. */
int pfi_pfid_client_jobs(struct pfi_pfid_client *c, char (*name)[64],
                         double *tput, int *held, size_t max,
                         struct pfi_error *err);
/* pfid's live flexible capacity (GET /v1/capacity, docs/fleet.md): the
 * shed at <= max_loss throughput loss (one of pfi_capacity_quotes) with
 * its interval, and the longest event it holds for (INFINITY: any).
 * PFI_EIO when pfid has no quote (no job: HTTP 409), PFI_ENOTFOUND for
 * none at that loss. */
int pfi_pfid_client_capacity(struct pfi_pfid_client *c, double max_loss,
                             double *shed_w, double *shed_lo_w,
                             double *shed_hi_w, double *duration_s,
                             struct pfi_error *err);
/* POST /v1/events; DELETE /v1/events/ID. */
int pfi_pfid_client_post(struct pfi_pfid_client *c,
                         const struct pfi_bridge_event *e,
                         struct pfi_error *err);
int pfi_pfid_client_cancel(struct pfi_pfid_client *c, const char *id,
                           struct pfi_error *err);

/* One sync: nodes -> GPU-level conversion -> resolve -> plan -> diff ->
 * post and cancel (or, when pfid accepts the one level of every span,
 * resolve -> plan -> diff -> post and cancel at that level, *infeasible 0:
 * pfid reports it). `targets` is every source's spans (any levels). Counts
 * of posted and cancelled events in *posted, *cancelled. */
int pfi_bridge_sync(struct pfi_pfid_client *c,
                    const struct pfi_timeline *targets,
                    const struct pfi_meter_config *cfg, double now,
                    double overlap_s, size_t *posted, size_t *cancelled,
                    size_t *infeasible, struct pfi_error *err);

#endif
