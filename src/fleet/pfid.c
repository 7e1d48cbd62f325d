/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid: leadership, nodes, events, assignments, records. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pfi/transport.h"
#include "pfid_int.h"

static double real_wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double pfid_mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* pfid's Unix time is its monotonic clock plus an offset, ns, taken from
 * the wall clock at the first reading and then kept by pfid_clock_check:
 * the wall clock's small corrections (NTP's slew) followed, a step of more
 * than PFID_CLOCK_STEP_S logged and not followed (approached at
 * PFID_CLOCK_SLEW of the time passing, as ntpd slews), so that a clock
 * stepped an hour neither ends an event an hour early nor stamps the
 * records an hour ahead (docs/fleet.md "Clocks"). Shared with the API's
 * thread: atomic. */
#define PFID_CLOCK_STEP_S 1.0
#define PFID_CLOCK_SLEW 0.0005
static int64_t clock_off_ns;
static int clock_set;

double pfid_wall(void) {
  if (!__atomic_load_n(&clock_set, __ATOMIC_ACQUIRE)) {
    int64_t off = (int64_t)((real_wall() - pfid_mono()) * 1e9);
    int64_t zero = 0;
    __atomic_compare_exchange_n(&clock_off_ns, &zero, off, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    __atomic_store_n(&clock_set, 1, __ATOMIC_RELEASE);
  }
  return pfid_mono() + __atomic_load_n(&clock_off_ns, __ATOMIC_ACQUIRE) / 1e9;
}

/* Once a period: compares the wall clock with pfid's; a step is logged
 * once (until the two agree again) and approached slowly. */
static void pfid_clock_check(struct pfi_pfid *d) {
  double mono = pfid_mono(), ours = pfid_wall(), diff = real_wall() - ours;
  double since = d->clock_mono > 0 ? mono - d->clock_mono : 0;
  d->clock_mono = mono;
  int64_t adj;
  if (fabs(diff) <= PFID_CLOCK_STEP_S) {
    adj = (int64_t)(diff * 1e9);
    if (d->clock_step)
      pfid_log(d, "clock", "the wall clock agrees with pfid's again (%+.3f s)",
               diff);
    d->clock_step = 0;
  } else {
    double step = PFID_CLOCK_SLEW * since;
    adj = (int64_t)((diff > 0 ? step : -step) * 1e9);
    if (!d->clock_step) {
      d->clock_steps++;
      pfid_log(d, "clock",
               "the wall clock stepped %+.3f s: event times stay on pfid's "
               "monotonic clock (approached at %.1f ms/s; restart pfid to "
               "take the wall clock at once)",
               diff, PFID_CLOCK_SLEW * 1e3);
    }
    d->clock_step = 1;
  }
  __atomic_add_fetch(&clock_off_ns, adj, __ATOMIC_ACQ_REL);
  d->clock_diff_s = diff;
}

/* ---- records ------------------------------------------------------------- */

void pfid_log(struct pfi_pfid *d, const char *what, const char *fmt, ...) {
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  fprintf(stderr, "pfid %s: %s: %s\n", d->id, what, detail);
  pfid_records_log(d, what, detail);
}

/* ---- nodes --------------------------------------------------------------- */

static size_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (size_t)h;
}

/* The slot of `name` in the index: its node's, or the empty one where it
 * would go. */
static size_t ix_slot(const struct pfi_pfid *d, const char *name) {
  size_t m = d->ix_cap - 1, i = name_hash(name) & m;
  while (d->node_ix[i] && strcmp(d->node[d->node_ix[i] - 1].name, name) != 0)
    i = (i + 1) & m;
  return i;
}

/* Makes room for one more node in the index (rebuilt at twice the size). */
static int ix_grow(struct pfi_pfid *d) {
  if (d->ix_cap >= 2 * (d->n_nodes + 1))
    return 0;
  size_t cap = d->ix_cap ? d->ix_cap * 2 : 128;
  size_t *ix = calloc(cap, sizeof *ix);
  if (!ix)
    return -1;
  free(d->node_ix);
  d->node_ix = ix;
  d->ix_cap = cap;
  for (size_t k = 0; k < d->n_nodes; k++)
    ix[ix_slot(d, d->node[k].name)] = k + 1;
  return 0;
}

static struct pfid_node *node_get(struct pfi_pfid *d, const char *name,
                                  int create) {
  if (d->ix_cap) {
    size_t i = ix_slot(d, name);
    if (d->node_ix[i])
      return &d->node[d->node_ix[i] - 1];
  }
  if (!create || d->n_nodes >= 200000 || ix_grow(d) < 0)
    return NULL;
  if (d->n_nodes == d->cap_nodes) {
    size_t nc = d->cap_nodes ? d->cap_nodes * 2 : 64;
    struct pfid_node *nn = realloc(d->node, nc * sizeof *nn);
    if (!nn)
      return NULL;
    d->node = nn;
    d->cap_nodes = nc;
  }
  struct pfid_node *n = &d->node[d->n_nodes];
  memset(n, 0, sizeof *n);
  snprintf(n->name, sizeof n->name, "%s", name);
  d->node_ix[ix_slot(d, n->name)] = ++d->n_nodes;
  n->restore = 1;
  n->stale = 1;
  return n;
}

struct pfid_node *pfid_node_find(struct pfi_pfid *d, const char *name) {
  return node_get(d, name, 0);
}

int pfid_node_suspect(const struct pfid_node *n, double mono) {
  return n->refused && mono - n->suspect_mono <= PFID_SUSPECT_S;
}

/* Refuses node n's telemetry: counted, the node suspect, its first refusal
 * after a quiet PFID_SUSPECT_S logged (not every message of a flood).
 * Called with d->mu held; *log set to the line to log after it. */
static void tel_refuse(struct pfid_node *n, double mono, const char *why,
                       char *log, size_t nlog) {
  if (!pfid_node_suspect(n, mono))
    snprintf(log, nlog, "node %s: %.180s", n->name, why);
  snprintf(n->suspect, sizeof n->suspect, "%.180s", why);
  n->suspect_mono = mono;
  n->refused++;
}

/* One telemetry message from subject pfi.telemetry.<node>. A node speaks
 * only for itself, on its own subject, at most PFID_TEL_RATE messages a
 * second (counted before decoding: a flood costs a lookup each), about the
 * GPUs it registered, within their physical bounds; anything else is
 * refused and not believed (docs/fleet.md "Trust"). */
static void take_telemetry(struct pfi_pfid *d, const char *subj,
                           const char *buf, size_t len,
                           struct pfi_fleet_telemetry *t) {
  struct pfi_error e;
  const char *pre = "pfi.telemetry.";
  const char *name = subj + strlen(pre);
  if (strncmp(subj, pre, strlen(pre)) != 0 || !pfi_fleet_name_ok(name)) {
    d->bad_tel++;
    return;
  }
  char log[256] = "", alert[256] = "";
  double mono = pfid_mono();
  pthread_mutex_lock(&d->mu);
  struct pfid_node *n = node_get(d, name, 1);
  if (!n) {
    pthread_mutex_unlock(&d->mu);
    return;
  }
  if (!n->tb_mono) {
    n->tb_tokens = PFID_TEL_BURST;
    n->tb_mono = mono;
  }
  n->tb_tokens += (mono - n->tb_mono) * PFID_TEL_RATE;
  if (n->tb_tokens > PFID_TEL_BURST)
    n->tb_tokens = PFID_TEL_BURST;
  n->tb_mono = mono;
  if (n->tb_tokens < 1) {
    d->tel_rate++;
    tel_refuse(n, mono, "telemetry above the rate limit (refused)", log,
               sizeof log);
    pthread_mutex_unlock(&d->mu);
    if (log[0])
      pfid_log(d, "suspect", "%s", log);
    return;
  }
  n->tb_tokens -= 1;
  pthread_mutex_unlock(&d->mu);
  if (pfi_fleet_telemetry_decode(buf, len, t, &e) < 0 ||
      strcmp(name, t->node) != 0) {
    d->bad_tel++;
    return;
  }
  int plausible = pfi_fleet_telemetry_plausible(t, &e) == 0;
  uint64_t sig = pfi_fleet_telemetry_gpu_sig(t);
  pthread_mutex_lock(&d->mu);
  if (plausible && n->registered && sig != n->gpu_sig) {
    plausible = 0;
    snprintf(e.msg, sizeof e.msg,
             "telemetry of %s: its GPUs (count, uuids, ranges) are not the "
             "ones it registered",
             t->node);
  }
  if (plausible && n->seq && t->seq_applied > n->seq &&
      t->seq_applied - n->seq > PFI_FLEET_SEQ_JUMP_MAX) {
    plausible = 0;
    snprintf(e.msg, sizeof e.msg,
             "telemetry of %s: seq_applied %llu more than %llu above ours",
             t->node, (unsigned long long)t->seq_applied,
             (unsigned long long)PFI_FLEET_SEQ_JUMP_MAX);
  }
  if (!plausible) {
    d->tel_implausible++;
    tel_refuse(n, mono, e.msg, log, sizeof log);
  } else {
    if (!n->registered) {
      n->registered = 1;
      n->gpu_sig = sig;
    }
    if (d->leader && t->seq_applied > n->seq) {
      /* An assignment above ours was applied: one not ours (a forgery
       * through the bucket, another pfid) or ours from before the bucket
       * was lost. Our next one continues above it, or it would be
       * ignored. */
      snprintf(alert, sizeof alert,
               "node %s applied sequence %llu, above ours (%llu): continuing "
               "from it",
               n->name, (unsigned long long)t->seq_applied,
               (unsigned long long)n->seq);
      n->seq = n->adopted_seq = t->seq_applied;
      d->seq_adopted++;
    }
    n->tel = *t;
    n->have_tel = 1;
    n->seen_mono = mono;
  }
  pthread_mutex_unlock(&d->mu);
  if (log[0])
    pfid_log(d, "suspect", "%s", log);
  if (alert[0])
    pfid_log(d, "seq", "%s", alert);
}

/* ---- publishing ----------------------------------------------------------
 * A period's assignments are written to the bucket together (one pipelined
 * batch of compare-and-sets, pfi_nats_kv_cas_batch), each on the key's
 * revision pfid last wrote: a write that loses means another pfid leads. */

/* One node's assignment on its way. */
struct pfid_pub {
  struct pfid_node *n;
  struct pfi_fleet_assign a;
  const char *kind;
  int need;  /* after it is written: 1 sets need_seq, 2 clears it, 0 keeps */
  char key[PFI_FLEET_NAME_MAX + 16];
  char *buf; /* its encoding, len bytes */
  size_t len;
};

/* Builds the assignment to `n` (restore when caps is NULL) into p: during
 * event ev, held by an agent that loses the controller until ev_end_s. */
static int pub_prepare(struct pfi_pfid *d, struct pfid_node *n,
                       const uint32_t *caps, unsigned ng,
                       const struct pfi_fleet_event *ev, double ev_end_s,
                       const char *kind, struct pfid_pub *p,
                       struct pfi_error *err) {
  struct pfi_fleet_assign *a = &p->a;
  memset(a, 0, sizeof *a);
  p->n = n;
  p->kind = kind;
  p->need = 0;
  p->buf = NULL;
  snprintf(a->node, sizeof a->node, "%s", n->name);
  snprintf(a->leader, sizeof a->leader, "%s", d->id);
  a->seq = n->seq + 1;
  a->issued_s = pfid_wall();
  a->lease_s = d->o.lease_s;
  if (ev) {
    snprintf(a->event, sizeof a->event, "%s", ev->id);
    a->event_end_s = ev_end_s; /* the stretch's end, not ev's alone */
    /* Agents refuse an end more than PFI_FLEET_EVENT_AHEAD_MAX_S ahead:
     * a longer stretch is carried forward by the next assignments (an hour
     * inside the bound, for the agents' clocks). */
    if (a->event_end_s > a->issued_s + PFI_FLEET_EVENT_AHEAD_MAX_S - 3600)
      a->event_end_s = a->issued_s + PFI_FLEET_EVENT_AHEAD_MAX_S - 3600;
  }
  a->restore = caps == NULL;
  a->n = caps ? ng : 0;
  if (a->restore)
    n->reason[0] = 0;
  snprintf(a->reason, sizeof a->reason, "%s",
           a->restore                  ? "restore"
           : n->reason[0]              ? n->reason
           : strcmp(kind, "refresh") ? kind
           : ev                        ? "event"
                                       : "recovery");
  if (caps)
    memcpy(a->cap_mw, caps, ng * sizeof *caps);
  char buf[4096];
  int len = pfi_fleet_assign_encode(a, buf, sizeof buf, err);
  if (len < 0)
    return len;
  if (!(p->buf = malloc((size_t)len + 1)))
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  memcpy(p->buf, buf, (size_t)len + 1);
  p->len = (size_t)len;
  snprintf(p->key, sizeof p->key, "assign.%s", n->name);
  return 0;
}

/* Writes p alone, waiting for the answer, after the batch's write of it
 * lost: the revision moved. Our own write whose answer was lost (a server
 * stopped after storing it) moved it too: adopt it when the value is ours,
 * with a sequence number continuing from it; anyone else's means we are
 * fenced. Returns 0 (the revision in *rev), PFI_ESTATE or PFI_EIO. */
static int pub_write_sync(struct pfi_pfid *d, struct pfid_pub *p,
                          uint64_t *rev, struct pfi_error *err) {
  struct pfid_node *n = p->n;
  int rc = n->rev ? pfi_nats_kv_update(d->nc, p->key, p->buf, p->len, n->rev,
                                       rev, err)
                  : pfi_nats_kv_create(d->nc, p->key, p->buf, p->len, rev, err);
  if (rc == PFI_EBUSY)
    rc = PFI_ESTATE;
  if (rc == PFI_ESTATE) {
    char *val = NULL;
    size_t vlen = 0;
    struct pfi_fleet_assign cur;
    if (pfi_nats_kv_get(d->nc, p->key, &val, &vlen, rev, NULL) == 1 &&
        pfi_fleet_assign_decode(val, vlen, &cur, NULL) == 0 &&
        strcmp(cur.leader, d->id) == 0 && d->leader) {
      n->rev = *rev;
      if (cur.seq >= p->a.seq) {
        p->a.seq = cur.seq + 1;
        char buf[4096];
        int len = pfi_fleet_assign_encode(&p->a, buf, sizeof buf, err);
        char *nb = len < 0 ? NULL : realloc(p->buf, (size_t)len + 1);
        if (len < 0) {
          free(val);
          return len;
        }
        if (!nb) {
          free(val);
          return pfi_error_set(err, PFI_ENOMEM, "out of memory");
        }
        memcpy(nb, buf, (size_t)len + 1);
        p->buf = nb;
        p->len = (size_t)len;
      }
      rc = pfi_nats_kv_update(d->nc, p->key, p->buf, p->len, n->rev, rev, err);
    }
    free(val);
  }
  return rc;
}

/* p was written at revision rev: the node's state follows, and the record
 * when the caps changed. */
static void pub_done(struct pfi_pfid *d, struct pfid_pub *p, uint64_t rev) {
  struct pfid_node *n = p->n;
  const struct pfi_fleet_assign *a = &p->a;
  int changed = a->restore != n->restore || a->n != n->n ||
                (!a->restore &&
                 memcmp(a->cap_mw, n->caps, a->n * sizeof *a->cap_mw) != 0);
  n->seq = a->seq;
  n->rev = rev;
  n->restore = a->restore;
  n->n = a->n;
  if (!a->restore)
    memcpy(n->caps, a->cap_mw, a->n * sizeof *a->cap_mw);
  if (p->need == 1)
    n->need_seq = n->seq;
  else if (p->need == 2)
    n->need_seq = 0;
  d->published++;
  if (changed)
    pfid_records_assign(d, a, p->kind);
}

/* At most this many writes await their answers at once. */
#define PFID_PUB_WINDOW 256

/* Writes the k prepared assignments (pipelined) and frees their buffers.
 * A node whose write failed keeps its state (the next period tries again);
 * one whose answer was lost adopts its own write then. Returns 0, or
 * PFI_ESTATE when another pfid wrote an assignment (fenced: step down). */
static int pub_all(struct pfi_pfid *d, struct pfid_pub *p, size_t k,
                   struct pfi_error *err) {
  struct pfi_nats_kv_op *op = calloc(k ? k : 1, sizeof *op);
  size_t *idx = calloc(k ? k : 1, sizeof *idx);
  int fenced = 0;
  if (!op || !idx) {
    pfi_error_set(err, PFI_ENOMEM, "out of memory");
    k = 0;
  }
  /* The records of the period's assignments in one transaction. */
  pfid_records_begin(d);
  size_t n_unsent = k;
  for (size_t i = 0; i < k; i++)
    idx[i] = i;
  /* Rounds: a batch stops sending at a lost write; when that write was our
   * own (adopted) the rest go in the next round. */
  while (n_unsent > 0 && !fenced && pfi_nats_connected(d->nc)) {
    for (size_t j = 0; j < n_unsent; j++) {
      struct pfid_pub *q = &p[idx[j]];
      op[j] = (struct pfi_nats_kv_op){q->key, q->buf, q->len, q->n->rev, 0, 0};
    }
    if (pfi_nats_kv_cas_batch(d->nc, op, n_unsent, PFID_PUB_WINDOW, err) < 0)
      break;
    size_t left = 0;
    for (size_t j = 0; j < n_unsent; j++) {
      struct pfid_pub *q = &p[idx[j]];
      uint64_t rev = op[j].rev;
      int rc = op[j].rc;
      if (rc == PFI_ESTATE && !fenced)
        rc = pub_write_sync(d, q, &rev, err);
      if (rc == 0)
        pub_done(d, q, rev);
      else if (rc == PFI_ESTATE)
        fenced = 1;
      else if (rc == PFI_EINTR)
        idx[left++] = idx[j];
    }
    if (left == n_unsent)
      break; /* nothing was sent */
    n_unsent = left;
  }
  pfid_records_end(d); /* held in memory when they cannot be written */
  for (size_t i = 0; i < k; i++)
    free(p[i].buf);
  free(op);
  free(idx);
  return fenced ? PFI_ESTATE : 0;
}

/* ---- leadership ---------------------------------------------------------- */

/* Loads every node's newest assignment from the bucket (a new leader
 * continues their sequence numbers and caps: no cap a user could see
 * changes at a takeover). */
static int load_assignments(struct pfi_pfid *d, struct pfi_error *err) {
  char **keys = NULL;
  size_t nk = 0;
  int rc = pfi_nats_kv_keys(d->nc, "assign.", &keys, &nk, err);
  if (rc < 0)
    return rc;
  /* A node without a key has none to compare and set on (the bucket made
   * again after it was lost): its next write creates it. */
  pthread_mutex_lock(&d->mu);
  for (size_t i = 0; i < d->n_nodes; i++)
    d->node[i].rev = 0;
  pthread_mutex_unlock(&d->mu);
  for (size_t i = 0; i < nk && rc == 0; i++) {
    char *val = NULL;
    size_t len = 0;
    uint64_t rev = 0;
    struct pfi_fleet_assign a;
    int r = pfi_nats_kv_get(d->nc, keys[i], &val, &len, &rev, err);
    if (r < 0) {
      rc = r;
      break;
    }
    if (r == 1 && pfi_fleet_assign_decode(val, len, &a, NULL) == 0 &&
        strcmp(keys[i] + 7, a.node) == 0) {
      pthread_mutex_lock(&d->mu);
      struct pfid_node *n = node_get(d, a.node, 1);
      if (n)
        pfid_node_from_bucket(n, &a, rev);
      /* An assignment its agent has not applied (not yet, or refused: one
       * written by another holder of the bucket's credentials) is taken
       * no higher than the limits the agent reports: a decrease stands, a
       * raise it never applied does not. */
      unsigned lowered = 0;
      if (n && n->have_tel && n->tel.seq_applied < a.seq && !a.restore &&
          n->tel.n == a.n)
        for (unsigned g = 0; g < a.n; g++)
          if (n->tel.gpu[g].cap_mw && n->tel.gpu[g].cap_mw < n->caps[g]) {
            n->caps[g] = n->tel.gpu[g].cap_mw;
            lowered++;
          }
      pthread_mutex_unlock(&d->mu);
      if (lowered)
        pfid_log(d, "leader",
                 "node %s: assignment %llu in the bucket not applied (the "
                 "agent at %llu): %u caps taken at the agent's lower limits",
                 a.node, (unsigned long long)a.seq,
                 (unsigned long long)n->tel.seq_applied, lowered);
    } else if (r == 1 && pfi_fleet_name_ok(keys[i] + 7)) {
      /* Not an assignment (written by another holder of the bucket's
       * credentials): its revision, so that ours replaces it. */
      pthread_mutex_lock(&d->mu);
      struct pfid_node *n = node_get(d, keys[i] + 7, 0);
      if (n)
        n->rev = rev;
      pthread_mutex_unlock(&d->mu);
    }
    free(val);
  }
  pfi_nats_keys_free(keys, nk);
  return rc;
}

static int lease_value(struct pfi_pfid *d, char *buf, size_t n) {
  return snprintf(buf, n, "{\"id\":\"%s\",\"t\":%.3f}", d->id, pfid_wall());
}

/* Keeps or takes the lead. The lease is the key "leader": the leader
 * rewrites it every period by compare-and-set on its own revision; a
 * standby that sees the revision unchanged for leader_lease_s (its own
 * clock: no clocks are compared) takes it by compare-and-set on that
 * revision. Only one of two racing standbys can win. */
static void leadership(struct pfi_pfid *d) {
  char val[160];
  int len = lease_value(d, val, sizeof val);
  struct pfi_error e;
  uint64_t rev = 0;
  if (d->leader) {
    int rc = pfi_nats_kv_update(d->nc, "leader", val, (size_t)len,
                                d->leader_rev, &rev, &e);
    if (rc == 0) {
      d->leader_rev = rev;
    } else if (rc == PFI_ESTATE) {
      d->leader = 0;
      d->cas_lost++;
      pfid_ctl_close(d);
      pfid_log(d, "standby", "lease taken by another pfid");
    }
    return; /* a NATS outage: keep trying; the CAS fences us if we lost */
  }
  char *cur = NULL;
  int r = pfi_nats_kv_get(d->nc, "leader", &cur, NULL, &rev, &e);
  free(cur);
  if (r < 0)
    return;
  double now = pfid_mono();
  int take = 0;
  if (r == 0) {
    take = pfi_nats_kv_create(d->nc, "leader", val, (size_t)len, &rev, &e) == 0;
  } else if (rev != d->seen_rev) {
    d->seen_rev = rev;
    d->seen_rev_mono = now;
  } else if (now - d->seen_rev_mono >= d->o.leader_lease_s) {
    take = pfi_nats_kv_update(d->nc, "leader", val, (size_t)len, rev, &rev,
                              &e) == 0;
  }
  if (!take)
    return;
  d->leader_rev = rev;
  if (load_assignments(d, &e) < 0) {
    /* Without the bucket's sequence numbers we could not publish: give
     * the lease back by letting it lapse. */
    pfid_log(d, "standby", "cannot load assignments: %s", e.msg);
    return;
  }
  /* The previous leader's module state: the event it was in and its
   * baseline (pfid_ctl.c: a recovery it left unfinished goes on). */
  char *cs = NULL;
  size_t cl = 0;
  d->have_ctl_state = 0;
  if (pfi_nats_kv_get(d->nc, "ctl", &cs, &cl, NULL, &e) == 1) {
    if (pfi_fleet_ctl_state_decode(cs, cl, &d->ctl_state, &e) == 0)
      d->have_ctl_state = 1;
    else
      pfid_log(d, "leader", "control state in the bucket: %s", e.msg);
  }
  free(cs);
  d->takeover_check = 1;
  d->leader = 1;
  d->takeovers++;
  d->leader_since_mono = now;
  /* Raises wait until every node confirms the assignment it holds from
   * the previous leader (pfid_node_from_bucket), which may be a decrease
   * not yet applied. */
  d->pending_raise = 1;
  pfid_log(d, "leader", "took the lease (revision %llu)",
           (unsigned long long)rev);
}

/* ---- the bucket lost ------------------------------------------------------
 * A server that lost its JetStream store (its disk, a restart on an empty
 * one) has no bucket: every write fails and the API answers 503. pfid makes
 * it again and writes back what it holds: the events, the tiers set
 * through the API, the control module's state and, leading, its lease; the
 * nodes' keys are created by the next assignments, whose sequence numbers
 * continue from the highest each agent reports (take_telemetry). */
static void bucket_check(struct pfi_pfid *d) {
  struct pfi_error e;
  int r = pfi_nats_kv_ensure(d->nc, &e);
  if (r <= 0)
    return;
  size_t ne, nt;
  struct pfi_fleet_event *ev = malloc(sizeof d->ev);
  struct pfi_fleet_tier *tier = malloc(sizeof d->tier);
  struct pfi_fleet_ctl_state cs;
  int have_cs;
  pthread_mutex_lock(&d->mu);
  ne = ev ? d->n_ev : 0;
  nt = tier ? d->n_tier : 0;
  if (ne)
    memcpy(ev, d->ev, ne * sizeof *ev);
  if (nt)
    memcpy(tier, d->tier, nt * sizeof *tier);
  cs = d->ctl_state;
  have_cs = d->have_ctl_state;
  for (size_t i = 0; i < d->n_nodes; i++)
    d->node[i].rev = 0;
  d->bucket_recreated++;
  d->bucket_recreated_t = pfid_wall();
  pthread_mutex_unlock(&d->mu);
  size_t back = 0, failed = 0;
  char buf[4096], key[PFI_FLEET_NAME_MAX + 16];
  for (size_t i = 0; i < ne; i++) {
    int len = pfi_fleet_event_encode(&ev[i], buf, sizeof buf, &e);
    snprintf(key, sizeof key, "event.%s", ev[i].id);
    if (len >= 0 && pfi_nats_kv_put(d->nc, key, buf, (size_t)len, NULL, &e) == 0)
      back++;
    else
      failed++;
  }
  for (size_t i = 0; i < nt; i++) {
    int len = pfi_fleet_tier_encode(&tier[i], buf, sizeof buf, &e);
    snprintf(key, sizeof key, "tier.%s", tier[i].job);
    if (len >= 0 && pfi_nats_kv_put(d->nc, key, buf, (size_t)len, NULL, &e) == 0)
      back++;
    else
      failed++;
  }
  if (have_cs) {
    int len = pfi_fleet_ctl_state_encode(&cs, buf, sizeof buf, &e);
    if (len >= 0 && pfi_nats_kv_put(d->nc, "ctl", buf, (size_t)len, NULL, &e) == 0)
      back++;
    else
      failed++;
  }
  free(ev);
  free(tier);
  pfid_log(d, "bucket",
           "the bucket " PFI_NATS_BUCKET " was lost (the server's JetStream "
           "store): made it again, %zu events, %zu tiers%s written back "
           "(%zu failed); assignments continue from the agents' sequence "
           "numbers",
           ne, nt, have_cs ? " and the control state" : "", failed);
  (void)back;
  if (!d->leader)
    return;
  /* Our lease, now a new key: created, or another pfid took it first. */
  char val[160];
  int len = lease_value(d, val, sizeof val);
  uint64_t rev = 0;
  if (pfi_nats_kv_create(d->nc, "leader", val, (size_t)len, &rev, &e) == 0) {
    d->leader_rev = rev;
  } else {
    d->leader = 0;
    pfid_ctl_close(d);
    pfid_log(d, "standby", "the lease in the made-again bucket: %s", e.msg);
  }
}

/* ---- events -------------------------------------------------------------- */

/* keys: the bucket's keys that start with "event.". */
/* The events pfid keeps when the bucket holds more than PFID_MAX_EVENTS
 * (keys are never deleted: a bridge books one event per interval, so a
 * long program passes 64): those not yet over first, the soonest to start
 * first, then the ones over, the most recently ended first. */
static double ev_now; /* for the comparison; pfid's loop alone sorts */
static int event_keep_cmp(const void *a, const void *b) {
  const struct pfi_fleet_event *x = a, *y = b;
  int xo = !x->cancelled && x->end_s > ev_now;
  int yo = !y->cancelled && y->end_s > ev_now;
  if (xo != yo)
    return yo - xo;
  if (xo)
    return (x->start_s > y->start_s) - (x->start_s < y->start_s);
  return (x->end_s < y->end_s) - (x->end_s > y->end_s);
}

static void load_events(struct pfi_pfid *d, char **keys, size_t nk) {
  struct pfi_error e;
  struct pfi_fleet_event *ev = calloc(nk ? nk : 1, sizeof *ev);
  size_t n = 0;
  if (!ev) {
    pfid_log(d, "events", "out of memory: the events are not re-read");
    return;
  }
  for (size_t i = 0; i < nk; i++) {
    if (strncmp(keys[i], "event.", 6) != 0)
      continue;
    char *val = NULL;
    size_t len = 0;
    if (pfi_nats_kv_get(d->nc, keys[i], &val, &len, NULL, &e) == 1 &&
        pfi_fleet_event_decode(val, len, &ev[n], NULL) == 0)
      n++;
    free(val);
  }
  if (n > PFID_MAX_EVENTS) {
    ev_now = pfid_wall();
    qsort(ev, n, sizeof *ev, event_keep_cmp);
    const struct pfi_fleet_event *x = &ev[PFID_MAX_EVENTS];
    static size_t logged; /* once per count, not every period */
    if (!x->cancelled && x->end_s > ev_now && logged != n && (logged = n))
      pfid_log(d, "events",
               "%zu events in the bucket, %d kept: events not yet over are "
               "left out (the first starts at %.3f)",
               n, PFID_MAX_EVENTS, x->start_s);
    n = PFID_MAX_EVENTS;
  }
  pthread_mutex_lock(&d->mu);
  memcpy(d->ev, ev, n * sizeof *ev);
  d->n_ev = n;
  pthread_mutex_unlock(&d->mu);
  free(ev);
}

const double pfid_period_le[13] = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                   0.05,  0.1,    0.25,  0.5,  1,
                                   2.5,   5,      10};

/* The events in force at `now` (booked, not cancelled, start <= now < end)
 * decide together: the lowest target wins, compared as the GPU targets
 * gt[i] they become this period (event_targets) (docs/grid.md's rule across
 * sources: an operator's looser event inside a grid event raises nothing);
 * at equal targets the one that started last names it. Returns that event,
 * or NULL outside every event. *end_s: the end of the continuous stretch of
 * booked events covering now (overlapping or touching: the bridge's
 * back-to-back spans, an operator's event inside or after a grid event),
 * the time to which an agent that loses the controller holds its caps. */
static const struct pfi_fleet_event *
active_event(struct pfi_pfid *d, double now, const double *gt, double *end_s) {
  const struct pfi_fleet_event *best = NULL;
  double end = now, best_w = 0;
  for (size_t i = 0; i < d->n_ev; i++) {
    const struct pfi_fleet_event *e = &d->ev[i];
    if (e->cancelled || !(e->start_s <= now && now < e->end_s))
      continue;
    if (e->end_s > end)
      end = e->end_s;
    /* Like with like: each target as the GPU target it becomes now. */
    if (!best || gt[i] < best_w ||
        (gt[i] == best_w && e->start_s > best->start_s)) {
      best = e;
      best_w = gt[i];
    }
  }
  /* Extends the stretch by every booked event that starts at or before its
   * end and lasts beyond it, until none does (at most n_ev rounds). */
  for (int more = best != NULL; more;) {
    more = 0;
    for (size_t i = 0; i < d->n_ev; i++) {
      const struct pfi_fleet_event *e = &d->ev[i];
      if (!e->cancelled && e->start_s <= end && e->end_s > end) {
        end = e->end_s;
        more = 1;
      }
    }
  }
  *end_s = best ? end : 0;
  return best;
}

/* ---- the control step ---------------------------------------------------- */

/* The caps a node is at now: its assignment, or outside one the limits it
 * reports (its recorded originals). */
static void current_caps(const struct pfid_node *n, uint32_t *c) {
  for (unsigned i = 0; i < n->tel.n; i++)
    c[i] = !n->restore && n->n == n->tel.n ? n->caps[i] : n->tel.gpu[i].cap_mw;
}

void pfid_node_from_bucket(struct pfid_node *n, const struct pfi_fleet_assign *a,
                           uint64_t rev) {
  n->seq = a->seq;
  n->rev = rev;
  n->restore = a->restore;
  n->n = a->n;
  memcpy(n->caps, a->cap_mw, sizeof n->caps);
  n->need_seq = a->restore ? 0 : a->seq;
}

/* Decreases published with need_seq are confirmed when the agent applied
 * that sequence number and every limit reads back at or below it. */
int pfid_confirmed(const struct pfid_node *n) {
  if (!n->need_seq)
    return 1;
  if (n->tel.seq_applied < n->need_seq || n->tel.n != n->n)
    return 0;
  for (unsigned i = 0; i < n->n; i++)
    if (n->tel.gpu[i].cap_mw > n->caps[i])
      return 0;
  return 1;
}

/* Increases wait while any node's decrease is unconfirmed, a stale
 * node's too: it may not have applied it, and the control module counts a
 * silent GPU at the cap it decided (the decrease), not at the higher limit
 * it may still enforce. Only raises wait: decreases and lease refreshes go
 * on, and the event's end restores every node. */
int pfid_raises_wait(const struct pfid_node *node, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!pfid_confirmed(&node[i]))
      return 1;
  return 0;
}

int pfid_phase(int pending_raise, int unconfirmed, int any_down, int any_up,
               int raise_waited, int *with_down) {
  int wait = pending_raise && unconfirmed;
  *with_down = !wait && !unconfirmed && any_down && any_up &&
               raise_waited >= PFID_RAISE_WAIT_MAX;
  if (wait)
    return PFID_PUB_HOLD;
  /* A period that only cut, then one that only raises: the raise waits
   * for the cut's confirmation too (before, it went out at once, and a
   * job across two nodes could be raised on one while the other had not
   * applied its cut). */
  if ((any_down && !*with_down) || (any_up && unconfirmed))
    return PFID_PUB_DOWN;
  return PFID_PUB_WANT;
}

/* The nodes' state for the meter chain (docs/fleet.md "Levels"): every
 * node with telemetry, a stale one at its last GPU power (it still draws,
 * and the control module counts its GPUs), its other power from its
 * node-power reading (pfi_fleet_node_other_w). Fills d->node_w, d->meter_w
 * and, for each event in force, gt[i] (its GPU target), sf[i] (its
 * shortfall at its level when infeasible, else 0). Called with d->mu held. */
static void event_targets(struct pfi_pfid *d, double now, double mono,
                          double *gt, double *sf) {
  int any = d->have_meter;
  for (size_t i = 0; i < d->n_ev; i++) {
    gt[i] = d->ev[i].target_w;
    sf[i] = 0;
    any |= d->ev[i].level != PFI_LEVEL_GPU;
  }
  d->node_w = d->meter_w = NAN;
  if (!any)
    return; /* GPU targets only: nothing to convert */
  double *gw = calloc(d->n_nodes ? d->n_nodes : 1, sizeof *gw);
  double *ow = calloc(d->n_nodes ? d->n_nodes : 1, sizeof *ow);
  size_t nn = 0;
  for (size_t i = 0; gw && ow && i < d->n_nodes; i++) {
    const struct pfid_node *n = &d->node[i];
    if (!n->have_tel || !n->tel.n)
      continue;
    double g, o, age;
    int fresh = pfid_node_power(n, mono, &g, &o, &age);
    gw[nn] = g;
    ow[nn++] = pfi_fleet_node_other_w(&d->meter, o, fresh == 1);
  }
  if (gw && ow && d->have_meter &&
      pfi_meter_levels(&d->meter, gw, ow, nn, NULL, &d->node_w, &d->meter_w,
                       NULL) < 0)
    d->node_w = d->meter_w = NAN;
  for (size_t i = 0; i < d->n_ev; i++) {
    const struct pfi_fleet_event *e = &d->ev[i];
    if (e->cancelled || !(e->start_s <= now && now < e->end_s) ||
        e->level == PFI_LEVEL_GPU)
      continue;
    struct pfi_error err;
    int rc = gw && ow
                 ? pfi_fleet_event_gpu_target(&d->meter, gw, ow, nn, e->level,
                                              e->target_w, &gt[i], &sf[i], &err)
                 : pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    if (rc < 0) {
      /* No node to convert over (nothing to cap), or out of memory: the
       * lowest GPU target there can be, so that no looser event wins. */
      gt[i] = 0;
      sf[i] = NAN;
    }
  }
  free(gw);
  free(ow);
}

static int control_step(struct pfi_pfid *d, struct pfi_error *err) {
  double now = pfid_wall(), mono = pfid_mono();
  int rc = 0;
  pthread_mutex_lock(&d->mu);
  double ev_end = 0, gt[PFID_MAX_EVENTS], sf[PFID_MAX_EVENTS];
  event_targets(d, now, mono, gt, sf);
  const struct pfi_fleet_event *evp = active_event(d, now, gt, &ev_end);
  struct pfi_fleet_event ev;
  if (evp) {
    /* The controller works in GPU power: the target as it became now. An
     * infeasible one asks the least there is (the module's floors hold,
     * and it reports the target infeasible). */
    size_t i = (size_t)(evp - d->ev);
    ev = *evp;
    ev.target_w = gt[i] > 1e-3 ? gt[i] : 1e-3;
    ev.level = PFI_LEVEL_GPU;
    d->level = evp->level;
    d->stated_w = evp->target_w;
    d->infeasible = evp->level != PFI_LEVEL_GPU && !(gt[i] > 0);
    d->shortfall_w = d->infeasible ? sf[i] : 0;
    if (d->infeasible && strcmp(d->infeasible_ev, evp->id) != 0) {
      if (isfinite(sf[i]))
        pfid_log(d, "infeasible",
                 "event %s: the %s target %.1f W is below what the nodes "
                 "draw with no GPU power: short by %.1f W",
                 evp->id, pfi_fleet_level_name(evp->level), evp->target_w,
                 sf[i]);
      else
        pfid_log(d, "infeasible",
                 "event %s: the %s target %.1f W: no node reports, nothing "
                 "to convert it over",
                 evp->id, pfi_fleet_level_name(evp->level), evp->target_w);
    }
  } else {
    d->level = PFI_LEVEL_GPU;
    d->stated_w = d->shortfall_w = 0;
    d->infeasible = 0;
  }
  /* Logged once an event is infeasible (again). */
  snprintf(d->infeasible_ev, sizeof d->infeasible_ev, "%s",
           d->infeasible ? evp->id : "");
  snprintf(d->event, sizeof d->event, "%s", evp ? ev.id : "");
  d->target_w = evp ? ev.target_w : 0;
  double power_w = 0;
  /* Liveness changes: the bucket's node.<name> keys written in one
   * pipelined batch, their log rows in one transaction. */
  struct live {
    char key[PFI_FLEET_NAME_MAX + 8], val[96];
  } *lv = NULL;
  struct pfi_nats_kv_op *lop = NULL;
  size_t nl = 0;
  for (size_t i = 0; i < d->n_nodes; i++) {
    struct pfid_node *n = &d->node[i];
    int stale = !n->have_tel || mono - n->seen_mono > d->o.stale_s;
    if (stale != n->stale && n->have_tel) {
      if (!lv && (lv = calloc(d->n_nodes, sizeof *lv)))
        lop = calloc(d->n_nodes, sizeof *lop);
      if (lop) {
        snprintf(lv[nl].key, sizeof lv[nl].key, "node.%s", n->name);
        int len = snprintf(lv[nl].val, sizeof lv[nl].val,
                           "{\"stale\":%s,\"t\":%.3f}",
                           stale ? "true" : "false", now);
        lop[nl] = (struct pfi_nats_kv_op){lv[nl].key, lv[nl].val, (size_t)len,
                                          PFI_NATS_KV_ANY, 0, 0};
        nl++;
      }
    }
    n->stale = stale;
    for (unsigned g = 0; n->have_tel && !stale && g < n->tel.n; g++)
      if (n->tel.gpu[g].power_w >= 0)
        power_w += n->tel.gpu[g].power_w;
  }
  d->power_w = power_w;
  if (nl) {
    /* Disconnected, the writes would only wait for the timeout. */
    if (pfi_nats_connected(d->nc))
      pfi_nats_kv_cas_batch(d->nc, lop, nl, PFID_PUB_WINDOW, NULL);
    pfid_records_begin(d);
    for (size_t k = 0; k < nl; k++)
      pfid_log(d, strstr(lv[k].val, "true") ? "stale" : "live", "node %s",
               lv[k].key + 5);
    pfid_records_end(d);
  }
  free(lv);
  free(lop);
  uint32_t(*want)[PFI_FLEET_MAX_GPUS] =
      calloc(d->n_nodes ? d->n_nodes : 1, sizeof *want);
  if (!want) {
    pthread_mutex_unlock(&d->mu);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  /* The control module decides during an event and its recovery. */
  int on = pfid_ctl_period(d, evp ? &ev : NULL, want, err);
  if (on < 0) {
    pfid_log(d, "controller", "%s", err->msg);
    pfid_ctl_close(d);
    on = 0;
    if (evp) {
      /* Nothing new this period: the caps in force stay (leases kept). */
      for (size_t i = 0; i < d->n_nodes; i++)
        if (d->node[i].have_tel)
          current_caps(&d->node[i], want[i]);
      on = 1;
    }
  }
  if (!on) {
    /* Outside an event every node gets its limits back. */
    d->pending_raise = 0;
    d->budget_w = 0;
    /* With the connection down the period publishes nothing (the agents
     * hold or restore by themselves). */
    struct pfid_pub *pub = calloc(d->n_nodes ? d->n_nodes : 1, sizeof *pub);
    size_t k = 0;
    for (size_t i = 0; pub && i < d->n_nodes; i++) {
      struct pfid_node *n = &d->node[i];
      if (!n->restore && n->seq &&
          pub_prepare(d, n, NULL, 0, NULL, 0, "restore", &pub[k], err) == 0)
        k++;
    }
    if (pub && pfi_nats_connected(d->nc))
      rc = pub_all(d, pub, k, err);
    else
      for (size_t i = 0; pub && i < k; i++)
        free(pub[i].buf);
    free(pub);
    free(want);
    pthread_mutex_unlock(&d->mu);
    return rc == PFI_ESTATE ? rc : 0;
  }
  /* A node the module does not know yet (it joined during the event)
   * keeps what it has until the next rebuild. */
  for (size_t i = 0; i < d->n_nodes; i++) {
    int zero = 1;
    for (unsigned g = 0; g < d->node[i].tel.n; g++)
      zero &= want[i][g] == 0;
    if (zero && d->node[i].have_tel)
      current_caps(&d->node[i], want[i]);
  }
  const struct pfi_fleet_event *pev = evp ? &ev : NULL;
  /* No target in force (the recovery after an event): caps only rise. A
   * cap the module holds under the one a node has (its reading back of a
   * cap a GPU rounds down) is never sent as a cut. */
  for (size_t i = 0; !pev && i < d->n_nodes; i++) {
    if (!d->node[i].have_tel)
      continue;
    uint32_t cur[PFI_FLEET_MAX_GPUS];
    current_caps(&d->node[i], cur);
    for (unsigned g = 0; g < d->node[i].tel.n; g++)
      if (want[i][g] < cur[g])
        want[i][g] = cur[g];
  }
  /* A node known only from the bucket (an assignment of the previous
   * leader) that has not reported within the stale time since we took
   * the lead is gone: its assignment does not hold the raises back. */
  if (pfid_mono() - d->leader_since_mono > d->o.stale_s)
    for (size_t i = 0; i < d->n_nodes; i++)
      if (!d->node[i].have_tel)
        d->node[i].need_seq = 0;
  int unconfirmed = pfid_raises_wait(d->node, d->n_nodes);
  int wait = d->pending_raise && unconfirmed;
  /* Phase 1 (decreases) or phase 2 (the rest), or a lease refresh of the
   * caps in force while decreases are unconfirmed. */
  int any_down = 0, any_up = 0;
  uint32_t(*p1)[PFI_FLEET_MAX_GPUS] =
      calloc(d->n_nodes ? d->n_nodes : 1, sizeof *p1);
  for (size_t i = 0; p1 && i < d->n_nodes; i++) {
    struct pfid_node *n = &d->node[i];
    if (n->stale || !n->have_tel || !n->tel.n)
      continue;
    uint32_t cur[PFI_FLEET_MAX_GPUS];
    current_caps(n, cur);
    for (unsigned g = 0; g < n->tel.n; g++) {
      p1[i][g] = want[i][g] < cur[g] ? want[i][g] : cur[g];
      any_down |= want[i][g] < cur[g];
      any_up |= want[i][g] > cur[g];
    }
  }
  /* Raises held back behind new decreases period after period (a job cut
   * a little every period, a deadline's floor falling as its tokens build
   * up) would wait for as long as the event lasts: a contract's release
   * with them. Once the earlier decreases are confirmed and raises have
   * waited PFID_RAISE_WAIT_MAX periods, they go out with the period's
   * decreases (the control module made them with its own decreases shown
   * in the realized draw: control.md "Two phases"). */
  int with_down;
  int mode = pfid_phase(d->pending_raise, unconfirmed, any_down, any_up,
                        d->raise_waited, &with_down);
  if (any_down && any_up && !with_down)
    d->raise_waited++;
  else
    d->raise_waited = 0;
  struct pfid_pub *pub =
      p1 ? calloc(d->n_nodes ? d->n_nodes : 1, sizeof *pub) : NULL;
  size_t k = 0;
  for (size_t i = 0; pub && i < d->n_nodes; i++) {
    struct pfid_node *n = &d->node[i];
    if (!n->have_tel || !n->tel.n)
      continue;
    if (n->stale) {
      /* Refresh the lease of what it holds, in case it still hears us. */
      if (!n->restore &&
          pub_prepare(d, n, n->caps, n->n, pev, ev_end, "refresh", &pub[k],
                      err) == 0)
        k++;
      continue;
    }
    uint32_t cur[PFI_FLEET_MAX_GPUS];
    current_caps(n, cur);
    const uint32_t *caps = mode == PFID_PUB_HOLD   ? cur
                           : mode == PFID_PUB_DOWN ? p1[i]
                                                   : want[i];
    int down = 0;
    for (unsigned g = 0; g < n->tel.n; g++)
      down |= caps[g] < cur[g];
    int up = 0;
    for (unsigned g = 0; g < n->tel.n; g++)
      up |= caps[g] > cur[g];
    if (pub_prepare(d, n, caps, n->tel.n, pev, ev_end,
                    down ? "cut"
                    : up ? (pev ? "raise" : "recovery")
                         : "refresh",
                    &pub[k], err) == 0)
      /* Decreases confirmed, the wanted caps out: nothing awaited. */
      pub[k++].need = down ? 1 : mode == PFID_PUB_WANT && !unconfirmed ? 2 : 0;
  }
  /* All of the period's writes are answered before it ends: a raise of a
   * later period never overtakes this one's decreases. */
  if (pub && pfi_nats_connected(d->nc))
    rc = pub_all(d, pub, k, err);
  else
    for (size_t i = 0; pub && i < k; i++)
      free(pub[i].buf);
  free(pub);
  if (!wait)
    d->pending_raise = any_down && any_up;
  free(p1);
  free(want);
  d->steps++;
  pthread_mutex_unlock(&d->mu);
  return rc == PFI_ESTATE ? rc : 0;
}

/* ---- open / run / close -------------------------------------------------- */

/* The API's tokens: --tokens (a secret file of NAME ROLE TOKEN lines) and
 * --token-file's one, named "token-file" with role admin. A file that
 * cannot be read or parsed is bad input (exit 2). */
static int api_tokens(struct pfi_pfid *d, const struct pfi_pfid_opts *o,
                      struct pfi_error *err) {
  size_t cap = 64 * 1024;
  char *text = NULL;
  int rc = 0;
  if (o->tokens_file) {
    if (!(text = malloc(cap)))
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    int len = pfi_read_secret_file(o->tokens_file, text, cap, err);
    if (len < 0)
      rc = len;
    else
      rc = pfi_api_tokens_parse(text, (size_t)len, o->tokens_file, &d->tokens,
                                &d->n_tokens, err);
    memset(text, 0, cap);
    free(text);
    if (rc < 0)
      return rc;
    d->tokens_on = 1;
  }
  if (d->token[0]) {
    struct pfi_api_token *t = calloc(d->n_tokens + 1, sizeof *t);
    if (!t)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    if (d->n_tokens)
      memcpy(t, d->tokens, d->n_tokens * sizeof *t);
    for (size_t i = 0; i < d->n_tokens; i++)
      if (strcmp(d->tokens[i].name, "token-file") == 0 ||
          strcmp(d->tokens[i].token, d->token) == 0) {
        pfi_api_tokens_free(t, d->n_tokens + 1);
        return pfi_error_set(err, PFI_EPARSE,
                             "%s: token '%s' has the name or the token of "
                             "--token-file's",
                             o->tokens_file, d->tokens[i].name);
      }
    snprintf(t[d->n_tokens].name, sizeof t->name, "token-file");
    t[d->n_tokens].role = PFI_ROLE_ADMIN;
    snprintf(t[d->n_tokens].token, sizeof t->token, "%s", d->token);
    pfi_api_tokens_free(d->tokens, d->n_tokens);
    d->tokens = t;
    d->n_tokens++;
  }
  return 0;
}

int pfi_pfid_open(struct pfi_pfid **out, const struct pfi_pfid_opts *o,
                  struct pfi_error *err) {
  struct pfi_pfid *d = calloc(1, sizeof *d);
  int rc;
  if (!d)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  pthread_mutex_init(&d->mu, NULL);
  d->o = *o;
  if (!(d->o.period_s > 0))
    d->o.period_s = 1;
  if (!(d->o.lease_s > 0))
    d->o.lease_s = 5;
  if (!(d->o.leader_lease_s > 0))
    d->o.leader_lease_s = 3;
  if (!(d->o.stale_s > 0))
    d->o.stale_s = 3;
  if (!o->id || !pfi_fleet_name_ok(o->id)) {
    rc = pfi_error_set(err, PFI_EINVAL,
                       "pfid id '%s': expected 1..63 letters, digits, _ or -",
                       o->id ? o->id : "");
    goto fail;
  }
  snprintf(d->id, sizeof d->id, "%s", o->id);
  if (!o->records) {
    rc = pfi_error_set(err, PFI_EINVAL, "no records file");
    goto fail;
  }
  if (o->token_file &&
      (rc = pfi_read_secret(o->token_file, d->token, sizeof d->token, err)) < 0)
    goto fail;
  if ((rc = api_tokens(d, o, err)) < 0)
    goto fail;
  d->o.nats.bucket = 1;
  pfi_meter_config_init(&d->meter);
  d->node_w = d->meter_w = NAN;
  if (o->meter_config) {
    /* A file that cannot be read or parsed is bad input (exit 2). */
    if ((rc = pfi_fleet_meter_config_load(o->meter_config, &d->meter, err)) <
        0) {
      if (rc != PFI_ENOMEM && err)
        err->code = rc = PFI_EPARSE;
      goto fail;
    }
    d->have_meter = 1;
  }
  if ((rc = pfid_capacity_open(d, err)) < 0 ||
      (rc = pfid_records_open(d, err)) < 0 ||
      (rc = pfi_nats_open(&d->nc, &d->o.nats, err)) < 0 ||
      (rc = pfi_nats_subscribe(d->nc, "pfi.telemetry.*", &d->tel, err)) < 0)
    goto fail;
  if (o->api_listen &&
      (rc = pfi_http_start_tls(&d->http, o->api_listen, &o->api_limits,
                               &o->api_tls, pfid_api, d, err)) < 0)
    goto fail;
  pfid_log(d, "start", "standby; records %s", o->records);
  *out = d;
  return 0;
fail:
  pfi_pfid_close(d);
  return rc;
}

unsigned pfi_pfid_api_port(const struct pfi_pfid *d) {
  return d->http ? pfi_http_port(d->http) : 0;
}

int pfi_pfid_api_tls(const struct pfi_pfid *d) {
  return d->http ? pfi_http_tls_mode(d->http) : 0;
}

int pfi_pfid_run(struct pfi_pfid *d, volatile sig_atomic_t *stop,
                 struct pfi_error *err) {
  struct pfi_fleet_telemetry *t = malloc(sizeof *t);
  if (!t)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  double next = pfid_mono();
  while (!*stop) {
    double left;
    /* Waits in steps of at most 50 ms for an event submitted through the
     * API, which starts the period at once. */
    while (!*stop && (left = next - pfid_mono()) > 0) {
      if (__atomic_exchange_n(&d->wake, 0, __ATOMIC_ACQ_REL)) {
        next = pfid_mono();
        break;
      }
      char *buf = NULL, subj[128];
      size_t len = 0;
      struct pfi_error e;
      int r = pfi_nats_next(d->tel, left < 0.05 ? left : 0.05, &buf, &len,
                            subj, sizeof subj, &e);
      if (r == 1)
        take_telemetry(d, subj, buf, len, t);
      else if (r < 0)
        usleep(50000);
      free(buf);
    }
    __atomic_store_n(&d->wake, 0, __ATOMIC_RELEASE); /* this period's */
    next += d->o.period_s;
    if (next < pfid_mono())
      next = pfid_mono() + d->o.period_s;
    double t_work = pfid_mono();
    pfid_clock_check(d);
    /* Rows held since a write failed (a full file system), written once
     * they can be. */
    pfid_records_flush(d);
    leadership(d);
    /* Events and tiers set through the API (either pfid's). A listing
     * that fails keeps the ones known. */
    char **keys = NULL;
    size_t nk = 0;
    if (pfi_nats_kv_keys(d->nc, "event.", &keys, &nk, NULL) == 0)
      load_events(d, keys, nk);
    else if (pfi_nats_connected(d->nc))
      bucket_check(d); /* the listing fails: is the bucket lost? */
    pfi_nats_keys_free(keys, nk);
    keys = NULL;
    nk = 0;
    if (pfi_nats_kv_keys(d->nc, "tier.", &keys, &nk, NULL) == 0)
      pfid_load_tiers(d, keys, nk);
    pfi_nats_keys_free(keys, nk);
    if (!d->leader)
      continue;
    struct pfi_error e;
    if (control_step(d, &e) == PFI_ESTATE) {
      /* Another pfid wrote an assignment: it leads now. */
      d->leader = 0;
      d->cas_lost++;
      pfid_ctl_close(d);
      pfid_log(d, "standby", "fenced: %s", e.msg);
    }
    double w = pfid_mono() - t_work;
    pthread_mutex_lock(&d->mu);
    d->period_s[d->n_periods % PFID_PERIODS] = w;
    d->n_periods++;
    d->period_sum_s += w;
    unsigned b = 0;
    while (b < 13 && w > pfid_period_le[b])
      b++;
    d->period_hist[b]++;
    pthread_mutex_unlock(&d->mu);
  }
  free(t);
  return 0;
}

void pfi_pfid_close(struct pfi_pfid *d) {
  if (!d)
    return;
  pfi_http_stop(d->http);
  pfi_nats_unsubscribe(d->tel);
  pfi_nats_close(d->nc);
  pfid_records_close(d);
  pfi_db_close(d->db);
  pfid_ctl_close(d);
  pfid_capacity_close(d);
  pthread_mutex_destroy(&d->mu);
  free(d->node);
  free(d->node_ix);
  pfi_api_tokens_free(d->tokens, d->n_tokens);
  memset(d->token, 0, sizeof d->token);
  free(d);
}
