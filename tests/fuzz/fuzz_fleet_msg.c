/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the fleet's message decoders (assignments, telemetry with
 * the jobs' phases and announced pauses, events, tiers, the control state)
 * and the bounds checked after them (pfi_fleet_assign_check,
 * pfi_fleet_telemetry_plausible). Whatever a decoder accepts must satisfy its own checks and
 * survive an encode/decode round trip unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/fleet.h"
#include "pfi/transport.h"

static char out[PFI_FLEET_MSG_MAX + 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  struct pfi_error err;
  struct pfi_fleet_assign a, a2;
  if (pfi_fleet_assign_decode(s, size, &a, &err) == 0) {
    if (!pfi_fleet_name_ok(a.node) || a.seq == 0 || a.n > PFI_FLEET_MAX_GPUS ||
        (a.restore && a.n) || (!a.restore && !a.n))
      abort();
    int len = pfi_fleet_assign_encode(&a, out, sizeof out, &err);
    if (len < 0 || pfi_fleet_assign_decode(out, (size_t)len, &a2, &err) != 0 ||
        a2.seq != a.seq || a2.n != a.n ||
        memcmp(a2.cap_mw, a.cap_mw, sizeof a.cap_mw) != 0 ||
        a2.event_end_s != a.event_end_s || strcmp(a2.event, a.event) != 0)
      abort();
    /* The agent's bounds (fleet.h pfi_fleet_assign_check): a jump above
     * 2^24 or an end a week ahead is refused, whatever else it says. */
    int ck = pfi_fleet_assign_check(&a, 1, 1e9, &err);
    if ((a.seq > 1 + PFI_FLEET_SEQ_JUMP_MAX ||
         (a.event[0] && a.event_end_s > 1e9 + PFI_FLEET_EVENT_AHEAD_MAX_S)) !=
        (ck != 0))
      abort();
  }
  static struct pfi_fleet_telemetry t, t2;
  if (pfi_fleet_telemetry_decode(s, size, &t, &err) == 0) {
    if (t.n > PFI_FLEET_MAX_GPUS || t.n_jobs > PFI_FLEET_MAX_JOBS)
      abort();
    /* Node power: absent (< 0, no source) or in range with a source. */
    if (t.node_w >= 0 ? !(t.node_w <= 1e6 && t.node_age_s >= 0 &&
                          pfi_fleet_node_source_ok(t.node_source))
                      : t.node_source[0] != 0)
      abort();
    /* Plausible telemetry (pfid's bounds) has no GPU above its maximum
     * and the margin. */
    if (pfi_fleet_telemetry_plausible(&t, &err) == 0)
      for (unsigned i = 0; i < t.n; i++)
        if (t.gpu[i].power_w > t.gpu[i].max_mw / 1000.0 * 1.1 + 25 + 1e-9 ||
            t.gpu[i].max_mw > PFI_FLEET_GPU_MAX_MW)
          abort();
    (void)pfi_fleet_telemetry_gpu_sig(&t);
    int len = pfi_fleet_telemetry_encode(&t, out, sizeof out, &err);
    if (len > 0 &&
        (pfi_fleet_telemetry_decode(out, (size_t)len, &t2, &err) != 0 ||
         t2.n != t.n || t2.seq_applied != t.seq_applied ||
         t2.record_failed != t.record_failed ||
         t2.node_w != t.node_w || t2.node_age_s != t.node_age_s ||
         strcmp(t2.node_source, t.node_source) != 0 || t2.n_jobs != t.n_jobs))
      abort();
    /* A job's phase and announced pause: in range, and kept. */
    for (unsigned i = 0; i < t.n_jobs; i++) {
      const struct pfi_fleet_job *a = &t.job[i], *b = &t2.job[i];
      if (a->phase < -1 || a->phase > 3 || a->pause_in_s > 1e7 ||
          a->pause_len_s > 1e7 || a->end_in_s > 1e7)
        abort();
      if (len > 0 &&
          (b->phase != a->phase || b->pause_in_s != a->pause_in_s ||
           b->end_in_s != a->end_in_s ||
           (a->pause_in_s >= 0 && a->pause_len_s > 0 &&
            b->pause_len_s != a->pause_len_s)))
        abort();
    }
  }
  struct pfi_fleet_event e, e2;
  if (pfi_fleet_event_decode(s, size, &e, &err) == 0) {
    if (!(e.end_s > e.start_s) || !(e.target_w > 0))
      abort();
    int len = pfi_fleet_event_encode(&e, out, sizeof out, &err);
    if (len < 0 || pfi_fleet_event_decode(out, (size_t)len, &e2, &err) != 0 ||
        e2.end_s != e.end_s || e2.target_w != e.target_w)
      abort();
  }
  struct pfi_fleet_tier t3, t4;
  if (pfi_fleet_tier_decode(s, size, &t3, &err) == 0) {
    if (!pfi_fleet_name_ok(t3.job) || !(t3.max_loss >= 0 && t3.max_loss <= 1))
      abort();
    int len = pfi_fleet_tier_encode(&t3, out, sizeof out, &err);
    if (len < 0 || pfi_fleet_tier_decode(out, (size_t)len, &t4, &err) != 0 ||
        t4.max_loss != t3.max_loss || strcmp(t4.name, t3.name) != 0)
      abort();
  }
  struct pfi_fleet_ctl_state c, c2;
  if (pfi_fleet_ctl_state_decode(s, size, &c, &err) == 0) {
    if (!pfi_fleet_name_ok(c.event) || !(c.baseline_w >= 0) ||
        !(c.recovery_t0 >= 0))
      abort();
    int len = pfi_fleet_ctl_state_encode(&c, out, sizeof out, &err);
    if (len < 0 || pfi_fleet_ctl_state_decode(out, (size_t)len, &c2, &err) != 0 ||
        c2.baseline_w != c.baseline_w || c2.t_s != c.t_s ||
        c2.recovery_t0 != c.recovery_t0 || strcmp(c2.event, c.event) != 0)
      abort();
  }
  /* The server list: every URL it gives is non-empty, within the input,
   * with no comma and no space at either end. */
  static char list[1024], buf[1024];
  const char *url[PFI_NATS_SERVERS_MAX];
  size_t k = size < sizeof list - 1 ? size : sizeof list - 1;
  memcpy(list, data, k);
  list[k] = 0;
  int nu = pfi_nats_servers_split(list, buf, sizeof buf, url,
                                  PFI_NATS_SERVERS_MAX, &err);
  if (nu == 0 || nu > PFI_NATS_SERVERS_MAX)
    abort();
  for (int i = 0; i < nu; i++) {
    size_t m = strlen(url[i]);
    if (!m || url[i] < buf || url[i] + m > buf + sizeof buf ||
        strchr(url[i], ',') || url[i][0] == ' ' || url[i][m - 1] == ' ')
      abort();
    /* Each URL's host (the plain-text rule): within the buffer, not empty,
     * its length the answer. */
    char host[64];
    int hl = pfi_nats_url_host(url[i], host, sizeof host, &err);
    if (hl == 0 || hl >= (int)sizeof host ||
        (hl > 0 && strlen(host) != (size_t)hl))
      abort();
    if (hl > 0)
      (void)pfi_nats_host_loopback(host);
  }
  return 0;
}
