/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: the decoder of the trace store's samples journal
 * (FILE-samples beside a schema-2 store, docs/sweep.md), which a writer
 * and every reader of the store read from a file anyone may have edited.
 * Aborts when it reads past the input, delivers a record of a frame it
 * then rejects, delivers a record that breaks the format (a samples row
 * whose entries do not decode or are not as many as it says, a value not
 * finite), reports valid frames beyond the input, or an error without a
 * reason or beyond the input, or ends without an error where a whole valid
 * frame numbered above the last one it read (above 0 where it read none)
 * lies after its end (the bytes after a pass of a reused journal are
 * older frames; a newer one means damage before it).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/store.h"

struct seen {
  const uint8_t *b;
  size_t n;
  size_t records;
};

static int check(void *ctx, uint64_t seq, const struct pfi_store_jrec *r) {
  struct seen *s = ctx;
  (void)seq;
  s->records++;
  if (r->kind == PFI_JREC_SAMPLES) {
    if (r->data < s->b || r->len > s->n ||
        r->data + r->len > s->b + s->n || isnan(r->t_s))
      abort();
    size_t off = 0;
    int64_t prev = -1;
    long long k = 0;
    struct pfi_store_sample smp;
    const char *why = NULL;
    int g;
    while ((g = pfi_store_blob_next(r->data, r->len, &off, prev, &smp,
                                    &why)) == 1) {
      prev = smp.gpu;
      k++;
    }
    if (g != 0 || k != r->gpus || k == 0)
      abort();
  } else if (r->kind == PFI_JREC_STEP) {
    const double v[6] = {r->step.job_t_s, r->step.tokens, r->step.tokens_per_s,
                         r->step.step,    r->step.loss,   r->step.mfu};
    if (!isfinite(r->t_s) || r->seq < 1)
      abort();
    for (int i = 0; i < 6; i++)
      if (isinf(v[i]))
        abort();
  } else if (r->kind == PFI_JREC_NODE) {
    if (!isfinite(r->node.node_w) || r->node.node_w < 0 || !r->node.source ||
        strlen(r->node.source) < 1 || strlen(r->node.source) > 32 ||
        isinf(r->node.gpu_w) || isinf(r->node.other_w))
      abort();
  } else {
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct seen s = {data, size, 0};
  struct pfi_store_jscan sc;
  int r = pfi_store_journal_scan(data, size, check, &s, &sc);
  if (r == 0 && (sc.end > size || (sc.frames == 0 && sc.end != 0) ||
                 (sc.frames && sc.last_seq - sc.first_seq + 1 != sc.frames)))
    abort();
  /* No whole valid frame numbered above the last one read, after them. */
  if (r == 0) {
    int tried = 0;
    for (size_t p = sc.end; p + 32 <= size && tried < 64; p++) {
      if (memcmp(data + p, "PFIJ", 4) != 0)
        continue;
      tried++;
      struct pfi_store_jscan after;
      if (pfi_store_journal_scan(data + p, size - p, NULL, NULL, &after) ==
              0 &&
          after.frames && after.first_seq > (sc.frames ? sc.last_seq : 0))
        abort();
    }
  }
  if (r == -1 && (!sc.why || sc.bad_off >= size))
    abort();
  if (r != 0 && r != -1)
    abort();
  /* The same bytes without a callback: the same answer. */
  struct pfi_store_jscan again;
  if (pfi_store_journal_scan(data, size, NULL, NULL, &again) != r ||
      again.end != sc.end || again.frames != sc.frames)
    abort();
  return 0;
}
