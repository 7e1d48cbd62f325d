/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's state, shared by its control loop (pfid.c) and API (api.c). */
#ifndef PFI_FLEET_PFID_INT_H
#define PFI_FLEET_PFID_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "pfi/fleet.h"
#include "pfi/http.h"
#include "pfi/pfid.h"

#define PFID_MAX_EVENTS 64

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
};

struct pfi_pfid {
  struct pfi_pfid_opts o;
  char id[PFI_FLEET_NAME_MAX];
  char token[256];
  struct pfi_nats *nc;
  struct pfi_nats_sub *tel;
  sqlite3 *db;
  struct pfi_http *http;
  pthread_mutex_t mu; /* everything below, against the API's thread */
  struct pfid_node *node;
  size_t n_nodes, cap_nodes;
  struct pfi_fleet_event ev[PFID_MAX_EVENTS];
  size_t n_ev;
  int leader;
  uint64_t leader_rev;            /* our lease's revision while leader */
  uint64_t seen_rev;              /* standby: the lease revision last seen */
  double seen_rev_mono;           /* standby: when it changed */
  double leader_since_mono;       /* leader: when we took over */
  int pending_raise;              /* increases wait for the decreases */
  char event[PFI_FLEET_NAME_MAX]; /* the active event, "" when none */
  double target_w, power_w, budget_w;
  unsigned long steps, published, cas_lost, takeovers, bad_tel;
};

/* Records one row of the leadership/fleet log (what, detail). */
void pfid_log(struct pfi_pfid *d, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The HTTP API's handler (api.c). */
void pfid_api(void *arg, const struct pfi_http_req *rq,
              struct pfi_http_resp *rs);
double pfid_wall(void);
double pfid_mono(void);

#endif
