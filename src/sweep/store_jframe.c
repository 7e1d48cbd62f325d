/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The samples journal's frames (FILE-samples beside a schema-2 store,
 * docs/sweep.md): their checksum and their decoder, which reads bytes of a
 * file anyone may have edited. No SQLite here; store_journal.c writes the
 * frames and merges them into the database.
 *
 * A frame, all little-endian: a header of 32 bytes (magic "PFIJ", version
 * uint8 = 1, three bytes 0, payload length uint32, header check uint32
 * = the low half of the hash of bytes 0..11 and 16..23, sequence number
 * uint64, hash uint64 of bytes 0..23 and the payload), then the payload:
 * records one after another,
 *   samples row (kind 1): kind uint8, 3 bytes 0, gpus uint32, length
 *     uint32, run int64, t_s double, then the row's data (the samples blob
 *     of store.h, `gpus` entries in ascending GPU order);
 *   step (kind 2): kind uint8, mask uint8 (bit i: value i present), 2 bytes
 *     0, seq int64, run int64, t_s double, then one double per set bit of
 *     job_t_s, tokens, tokens_per_s, step, loss, mfu;
 *   node power (kind 3): kind uint8, mask uint8 (bit 0: gpu_w, bit 1:
 *     other_w present), source length uint8 (1..32), 1 byte 0, node_w
 *     double, run int64, t_s double, then gpu_w and other_w as the mask
 *     says, then the source's characters (printable ASCII).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "pfi/store.h"
#include "store_int.h"

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t x;
  memcpy(&x, p, sizeof x);
  return x;
#else
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
#endif
}

static double getf(const unsigned char *p) {
  uint64_t x = get64(p);
  double v;
  memcpy(&v, &x, sizeof v);
  return v;
}

void pfi__jput32(unsigned char *p, uint32_t x) {
  p[0] = (unsigned char)x;
  p[1] = (unsigned char)(x >> 8);
  p[2] = (unsigned char)(x >> 16);
  p[3] = (unsigned char)(x >> 24);
}

void pfi__jput64(unsigned char *p, uint64_t x) {
  pfi__jput32(p, (uint32_t)x);
  pfi__jput32(p + 4, (uint32_t)(x >> 32));
}

void pfi__jputf(unsigned char *p, double v) {
  uint64_t x;
  memcpy(&x, &v, sizeof x);
  pfi__jput64(p, x);
}

/* A 64-bit hash over four lanes of eight bytes (a torn or damaged frame,
 * not an adversary, is what it detects). */
static uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }

uint64_t pfi__jhash(const unsigned char *p, size_t n, uint64_t h) {
  const uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full;
  uint64_t a = h + k1 + k2, b = h + k2, c = h, d = h - k1;
  size_t len = n;
  for (; n >= 32; p += 32, n -= 32) {
    a = rotl(a + get64(p) * k2, 31) * k1;
    b = rotl(b + get64(p + 8) * k2, 31) * k1;
    c = rotl(c + get64(p + 16) * k2, 31) * k1;
    d = rotl(d + get64(p + 24) * k2, 31) * k1;
  }
  h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18);
  for (; n >= 8; p += 8, n -= 8)
    h = rotl(h ^ rotl(get64(p) * k2, 31) * k1, 27) * k1 + k2;
  uint64_t w = 0;
  for (size_t i = 0; i < n; i++)
    w |= (uint64_t)p[i] << (8 * i);
  h ^= (w ^ len) * k1;
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

static uint32_t header_check(const unsigned char *h) {
  unsigned char b[20];
  memcpy(b, h, 12);
  memcpy(b + 12, h + 16, 8);
  return (uint32_t)pfi__jhash(b, sizeof b, 0x5046494A);
}

void pfi__jframe_seal(unsigned char *f, size_t payload, uint64_t seq) {
  memcpy(f, PFI_JOURNAL_MAGIC, 4);
  f[4] = PFI_JOURNAL_VERSION;
  f[5] = 0;
  f[6] = f[7] = 0;
  pfi__jput32(f + 8, (uint32_t)payload);
  pfi__jput64(f + 16, seq);
  pfi__jput32(f + 12, header_check(f));
  uint64_t h = pfi__jhash(f, 24, 0);
  pfi__jput64(f + 24, pfi__jhash(f + PFI_JOURNAL_HEADER, payload, h));
}

/* Checks (fn NULL) or delivers the records of one frame's payload; with
 * `trust` (frames this process wrote) a row's data is not decoded. */
static int records(const unsigned char *p, size_t n, size_t base, uint64_t seq,
                   int trust,
                   int (*fn)(void *, uint64_t, const struct pfi_store_jrec *),
                   void *ctx, struct pfi_store_jscan *out) {
  size_t o = 0;
  while (o < n) {
    struct pfi_store_jrec r;
    memset(&r, 0, sizeof r);
    size_t at = o;
    if (n - o < 28) {
      out->why = "truncated record";
      goto bad;
    }
    r.kind = p[o];
    r.run = (int64_t)get64(p + o + 12);
    r.t_s = getf(p + o + 20);
    if (r.kind == PFI_JREC_SAMPLES) {
      if (p[o + 1] || p[o + 2] || p[o + 3]) {
        out->why = "samples record: padding not zero";
        goto bad;
      }
      r.gpus = get32(p + o + 4);
      r.len = get32(p + o + 8);
      if (isnan(r.t_s)) {
        out->why = "samples record: time not a number";
        goto bad;
      }
      if (r.len > n - o - 28) {
        out->why = "samples record: data longer than the frame";
        goto bad;
      }
      r.data = p + o + 28;
      if (trust) {
        o += 28 + r.len;
        goto deliver;
      }
      size_t off = 0;
      int64_t prev = -1;
      long long k = 0;
      struct pfi_store_sample s;
      const char *why = NULL;
      int g;
      while ((g = pfi_store_blob_next(r.data, r.len, &off, prev, &s, &why)) ==
             1) {
        prev = s.gpu;
        k++;
      }
      if (g < 0) {
        at = o + 28 + off;
        out->why = why;
        goto bad;
      }
      if (k == 0 || k != r.gpus) {
        out->why = "samples record: GPU entries not as many as it says";
        goto bad;
      }
      o += 28 + r.len;
    } else if (r.kind == PFI_JREC_STEP) {
      unsigned mask = p[o + 1];
      if (mask >> 6 || p[o + 2] || p[o + 3]) {
        out->why = "step record: unknown value bits";
        goto bad;
      }
      r.seq = (int64_t)get64(p + o + 4);
      if (!isfinite(r.t_s) || r.seq < 1) {
        out->why = "step record: time not finite or sequence below 1";
        goto bad;
      }
      size_t need = 8 * (size_t)__builtin_popcount(mask);
      if (need > n - o - 28) {
        out->why = "step record: values beyond the frame";
        goto bad;
      }
      double *v[6] = {&r.step.job_t_s, &r.step.tokens, &r.step.tokens_per_s,
                      &r.step.step,    &r.step.loss,   &r.step.mfu};
      size_t q = o + 28;
      for (int i = 0; i < 6; i++) {
        *v[i] = NAN;
        if (mask >> i & 1u) {
          double x = getf(p + q);
          if (!isfinite(x)) {
            at = q;
            out->why = "step record: value not finite";
            goto bad;
          }
          *v[i] = x;
          q += 8;
        }
      }
      r.step.t_s = r.t_s;
      o = q;
    } else if (r.kind == PFI_JREC_NODE) {
      unsigned mask = p[o + 1];
      size_t sl = p[o + 2];
      if (mask >> 2 || p[o + 3] || sl < 1 || sl > 32) {
        out->why = "node power record: unknown bits or source length";
        goto bad;
      }
      r.node.node_w = getf(p + o + 4);
      if (isnan(r.t_s) || !isfinite(r.node.node_w) || r.node.node_w < 0) {
        out->why = "node power record: time or node power not valid";
        goto bad;
      }
      size_t q = o + 28, need = 8 * (size_t)__builtin_popcount(mask) + sl;
      if (need > n - o - 28) {
        out->why = "node power record: beyond the frame";
        goto bad;
      }
      r.node.gpu_w = r.node.other_w = NAN;
      double *v[2] = {&r.node.gpu_w, &r.node.other_w};
      for (int i = 0; i < 2; i++)
        if (mask >> i & 1u) {
          double x = getf(p + q);
          if (!isfinite(x)) {
            at = q;
            out->why = "node power record: value not finite";
            goto bad;
          }
          *v[i] = x;
          q += 8;
        }
      for (size_t i = 0; i < sl; i++)
        if (p[q + i] < 0x21 || p[q + i] > 0x7e) {
          at = q + i;
          out->why = "node power record: source not printable";
          goto bad;
        }
      memcpy(r.node_source, p + q, sl);
      r.node_source[sl] = 0;
      r.node.t_s = r.t_s;
      r.node.source = r.node_source;
      o = q + sl;
    } else {
      out->why = "unknown record kind";
      goto bad;
    }
  deliver:
    if (fn) {
      int rc = fn(ctx, seq, &r);
      if (rc < 0)
        return rc;
    }
    continue;
  bad:
    out->bad_off = base + at;
    return -1;
  }
  return 0;
}

static int header_ok(const unsigned char *h) {
  return memcmp(h, PFI_JOURNAL_MAGIC, 4) == 0 && h[4] == PFI_JOURNAL_VERSION &&
         !h[5] && !h[6] && !h[7] && get32(h + 12) == header_check(h);
}

/* Whether a frame header that checks and is numbered above `after` lies in
 * b[from, n). The file is reused in place once merged (store_journal.c):
 * after the frames of this pass lie those of earlier passes, numbered
 * below every frame of this one, and the scan ends at them; a frame
 * numbered above the last one read means the frames stop at damage. */
static int newer_after(const unsigned char *b, size_t n, size_t from,
                       uint64_t after) {
  while (from < n && n - from >= PFI_JOURNAL_HEADER) {
    const unsigned char *m =
        memchr(b + from, PFI_JOURNAL_MAGIC[0], n - from - PFI_JOURNAL_HEADER + 1);
    if (!m)
      return 0;
    if (header_ok(m) && get64(m + 16) > after)
      return 1;
    from = (size_t)(m - b) + 1;
  }
  return 0;
}

int pfi__journal_walk(const unsigned char *b, size_t n, int trust,
                      uint64_t floor,
                      int (*fn)(void *ctx, uint64_t seq,
                                const struct pfi_store_jrec *rec),
                      void *ctx, struct pfi_store_jscan *out) {
  memset(out, 0, sizeof *out);
  size_t o = 0;
  while (o < n) {
    const unsigned char *h = b + o;
    size_t rest = n - o;
    const char *why;
    size_t at = o;
    if (rest < PFI_JOURNAL_HEADER)
      break; /* a torn header at the end */
    if (!header_ok(h)) {
      why = "frame header damaged (magic, version or header check)";
      goto stop; /* an earlier pass's bytes, or space no write filled */
    }
    size_t len = get32(h + 8);
    uint64_t seq = get64(h + 16);
    if (out->frames && seq <= out->last_seq) {
      at = o + 16; /* a frame of an earlier pass: the end of this one */
      why = "frame sequence number not one more than the previous";
      goto stop;
    }
    if (len > rest - PFI_JOURNAL_HEADER) {
      why = "frame longer than the file, and frames follow";
      goto stop; /* the last frame cut short: its write did not complete */
    }
    uint64_t hs = trust ? 0 : pfi__jhash(h, 24, 0);
    if (!trust &&
        pfi__jhash(h + PFI_JOURNAL_HEADER, len, hs) != get64(h + 24)) {
      why = "frame checksum does not match, and frames follow";
      goto stop; /* the last frame, damaged or cut short: dropped */
    }
    if (out->frames && seq != out->last_seq + 1) {
      out->bad_off = o + 16;
      out->why = "frame sequence number not one more than the previous";
      return -1;
    }
    /* Every record checked before any is delivered. */
    int rc = trust ? 0
                   : records(h + PFI_JOURNAL_HEADER, len,
                             o + PFI_JOURNAL_HEADER, seq, 0, NULL, NULL, out);
    if (rc == 0 && fn)
      rc = records(h + PFI_JOURNAL_HEADER, len, o + PFI_JOURNAL_HEADER, seq,
                   trust, fn, ctx, out);
    if (rc < 0)
      return rc;
    if (!out->frames)
      out->first_seq = seq;
    out->last_seq = seq;
    out->frames++;
    o += PFI_JOURNAL_HEADER + len;
    out->end = o;
    continue;
  stop:
    /* Where the frames stop, a frame numbered above the last one read
     * (above `floor` before any) means damage; none, the end. */
    if (!newer_after(b, n, o + 1, out->frames ? out->last_seq : floor))
      break;
    out->bad_off = at;
    out->why = why;
    return -1;
  }
  return 0;
}

int pfi_store_journal_scan(const unsigned char *b, size_t n,
                           int (*fn)(void *ctx, uint64_t seq,
                                     const struct pfi_store_jrec *rec),
                           void *ctx, struct pfi_store_jscan *out) {
  return pfi__journal_walk(b, n, 0, 0, fn, ctx, out);
}
