/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: the grid side's decoders on one input: OpenADR 3 event
 * arrays and webhook notifications (also a JSON string holding one, and
 * snake_case keys: corpus notification_reference*.json), schedule files,
 * meter configurations and BMC (DCMI) power readings. Every span accepted must be a non-empty
 * interval with a finite limit >= 0; every located error must carry a
 * line and column >= 1. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/eventlog.h"
#include "pfi/flexcap.h"
#include "pfi/meter.h"
#include "pfi/openadr.h"
#include "pfi/timeline.h"

static void check(const struct pfi_timeline *tl) {
  for (size_t i = 0; i < tl->n; i++)
    if (!(tl->spans[i].end_s > tl->spans[i].start_s) ||
        !isfinite(tl->spans[i].limit_w) || tl->spans[i].limit_w < 0)
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, 1767225600);
  cfg.baseline_w = 1e6;
  struct pfi_timeline tl, res;
  pfi_timeline_init(&tl);
  pfi_timeline_init(&res);
  struct pfi_error err;
  if (pfi_oadr_decode_events("fuzz", s, size, &cfg, &tl, NULL, &err) >= 0) {
    check(&tl);
    /* One level per resolution, as the caller converts first. */
    for (size_t i = 0; i < tl.n; i++)
      tl.spans[i].level = PFI_LEVEL_METER;
    if (pfi_timeline_resolve(&tl, &res, &err) >= 0)
      check(&res);
  }
  char id[PFI_TIMELINE_ID_MAX];
  int del;
  tl.n = 0;
  if (pfi_oadr_decode_notification(s, size, &cfg, &tl, id, &del, &err) >= 0)
    check(&tl);
  tl.n = 0;
  int rc = pfi_schedule_load_mem("fuzz.csv", s, size, 1000, &tl, &err);
  if (rc == PFI_EPARSE && (err.line < 1 || err.column < 1))
    abort();
  if (rc >= 0)
    check(&tl);
  struct pfi_meter_config mc;
  rc = pfi_meter_config_load_mem("fuzz.conf", s, size, &mc, &err);
  if (rc == PFI_EPARSE && (err.line < 1 || err.column < 1))
    abort();
  if (rc == 0) {
    double g[2] = {100, 200}, lim;
    if (pfi_meter_gpu_limit(&mc, g, NULL, 2, PFI_LEVEL_METER, 5000, &lim,
                            &err) == 0 &&
        !(isfinite(lim) && lim >= 0))
      abort();
  }
  struct pfi_tier *tiers;
  size_t nt;
  rc = pfi_tiers_load_mem("fuzz.csv", s, size, &tiers, &nt, &err);
  if (rc == PFI_EPARSE && (err.line < 1 || err.column < 1))
    abort();
  if (rc == 0) {
    for (size_t i = 0; i < nt; i++)
      if (!(tiers[i].max_loss >= 0 && tiers[i].max_loss <= 1))
        abort();
    free(tiers);
  }
  /* An event log: series before the first '|', jobs after it. */
  const char *bar = memchr(s, '|', size);
  if (bar) {
    struct pfi_eventlog log;
    if (pfi_eventlog_load_mem(&log, s, (size_t)(bar - s), bar + 1,
                              size - (size_t)(bar - s) - 1, &err) == 0) {
      if (!(log.ev0 > 0 && log.ev1 > log.ev0 && log.ev1 <= log.n) ||
          !isfinite(log.baseline_w))
        abort();
      pfi_eventlog_release(&log);
    }
  }
  double w;
  if (pfi_dcmi_parse(s, size, &w, &err) == 0 && !(isfinite(w) && w >= 0))
    abort();
  char buf[64];
  size_t k = size < 63 ? size : 63;
  memcpy(buf, s, k);
  buf[k] = 0;
  int64_t t;
  double d;
  int forever;
  pfi_time_parse_rfc3339(buf, &t, &err);
  pfi_duration_parse_iso8601(buf, &d, &forever, &err);
  pfi_timeline_release(&tl);
  pfi_timeline_release(&res);
  return 0;
}
