/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The trace store's helpers that do not speak SQLite: the time stamps,
 * the generated text of the samples table, the WAL file check and the
 * read-only URI, the sweep lock (the other store*.c files hold every SQLite call).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "pfi/store.h"
#include "pfi/trace.h"

void pfi__store_utc_now(char *buf, size_t n) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The samples and steps tables.
 * Schema 2: a row per run and instant holding every GPU's sample packed
 * (store.h), and steps keyed by run, time and order of addition in one
 * b-tree. A commit per sampling interval then writes one samples row, not
 * one per GPU, and a steps row without a second index: what bounds a
 * sweep's recording is the pages each commit rewrites, not the values.
 * Schema 1: one column per telemetry field, generated from PFI_FIELD_MAP,
 * a row per GPU and instant with a validity bitmask; steps indexed by
 * (run_id, t_s). */
char *pfi__store_samples_ddl(int schema) {
  size_t cap = 4096;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  if (schema >= 2) {
    snprintf(s, cap,
             "CREATE TABLE IF NOT EXISTS samples(run_id INTEGER NOT NULL, t_s "
             "REAL NOT NULL, gpus INTEGER NOT NULL, gpu_first INTEGER NOT "
             "NULL, data BLOB NOT NULL, PRIMARY KEY(run_id, t_s));"
             "CREATE TABLE IF NOT EXISTS steps(run_id INTEGER NOT NULL, t_s "
             "REAL NOT NULL, seq INTEGER NOT NULL, job_t_s REAL, tokens REAL, "
             "tokens_per_s REAL, step REAL, loss REAL, mfu REAL, PRIMARY "
             "KEY(run_id, t_s, seq)) WITHOUT ROWID;");
    return s;
  }
  size_t o = (size_t)snprintf(s, cap,
                              "CREATE TABLE IF NOT EXISTS samples(run_id "
                              "INTEGER NOT NULL, gpu INTEGER NOT NULL, t_s "
                              "REAL NOT NULL, valid INTEGER NOT NULL");
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    o += (size_t)snprintf(s + o, cap - o, ", %s REAL", pfi_field_name(f));
  snprintf(s + o, cap - o,
           ", PRIMARY KEY(run_id, t_s, gpu)) WITHOUT ROWID;"
           "CREATE TABLE IF NOT EXISTS steps(run_id INTEGER NOT NULL, t_s "
           "REAL NOT NULL, job_t_s REAL, tokens REAL, tokens_per_s REAL, step "
           "REAL, loss REAL, mfu REAL);"
           "CREATE INDEX IF NOT EXISTS steps_run ON steps(run_id, t_s);");
  return s;
}

char *pfi__store_samples_insert_sql(void) {
  size_t cap = 4096;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  size_t o = (size_t)snprintf(
      s, cap, "INSERT OR REPLACE INTO samples(run_id, gpu, t_s, valid");
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    o += (size_t)snprintf(s + o, cap - o, ", %s", pfi_field_name(f));
  o += (size_t)snprintf(s + o, cap - o, ") VALUES(?,?,?,?");
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    o += (size_t)snprintf(s + o, cap - o, ",?");
  snprintf(s + o, cap - o, ")");
  return s;
}

/* ---- the samples blob ------------------------------------------------- */

static void put_u32le(unsigned char *p, uint32_t x) {
  p[0] = (unsigned char)x;
  p[1] = (unsigned char)(x >> 8);
  p[2] = (unsigned char)(x >> 16);
  p[3] = (unsigned char)(x >> 24);
}

static uint32_t get_u32le(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void put_f64le(unsigned char *p, double v) {
  uint64_t x;
  memcpy(&x, &v, sizeof x);
  put_u32le(p, (uint32_t)x);
  put_u32le(p + 4, (uint32_t)(x >> 32));
}

static double get_f64le(const unsigned char *p) {
  uint64_t x = (uint64_t)get_u32le(p) | (uint64_t)get_u32le(p + 4) << 32;
  double v;
  memcpy(&v, &x, sizeof v);
  return v;
}

size_t pfi_store_blob_entry_size(uint32_t valid) {
  return 8 + 8 * (size_t)__builtin_popcount(valid);
}

size_t pfi_store_blob_put(unsigned char *out, unsigned gpu, uint32_t valid,
                          const double *v) {
  put_u32le(out, gpu);
  put_u32le(out + 4, valid);
  size_t o = 8;
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    if (valid >> f & 1u) {
      put_f64le(out + o, v[f]);
      o += 8;
    }
  return o;
}

int pfi_store_blob_next(const unsigned char *b, size_t n, size_t *off,
                        int64_t prev_gpu, struct pfi_store_sample *out,
                        const char **why) {
  size_t o = *off;
  if (o >= n)
    return 0;
  if (n - o < 8) {
    *why = "truncated GPU entry (fewer than 8 bytes left)";
    return -1;
  }
  uint32_t gpu = get_u32le(b + o), valid = get_u32le(b + o + 4);
  if ((int64_t)gpu <= prev_gpu) {
    *why = "GPU index not above the previous entry's";
    return -1;
  }
  if (valid >> PFI_FIELD__COUNT) {
    *off = o + 4;
    *why = "validity mask names an unknown field";
    return -1;
  }
  if (n - o - 8 < 8 * (size_t)__builtin_popcount(valid)) {
    *off = o + 8;
    *why = "truncated values (fewer than the validity mask names)";
    return -1;
  }
  size_t q = o + 8;
  for (int f = 0; f < PFI_FIELD__COUNT; f++) {
    if (!(valid >> f & 1u)) {
      out->v[f] = NAN;
      continue;
    }
    double v = get_f64le(b + q);
    if (!isfinite(v)) {
      *off = q;
      *why = "value not finite";
      return -1;
    }
    out->v[f] = v;
    q += 8;
  }
  out->gpu = gpu;
  out->valid = valid;
  *off = q;
  return 1;
}

int pfi__store_wal_empty(const char *path) {
  char *w = malloc(strlen(path) + 5);
  if (!w)
    return 0;
  sprintf(w, "%s-wal", path);
  struct stat sb;
  int r = stat(w, &sb);
  int e = errno;
  free(w);
  return (r == 0 && sb.st_size == 0) || (r != 0 && e == ENOENT);
}

/* "file:PATH?immutable=1" with the URI's special characters escaped.
 * Returns a malloc'd string or NULL. */
char *pfi__store_immutable_uri(const char *path) {
  size_t n = strlen(path);
  char *u = malloc(3 * n + 32);
  if (!u)
    return NULL;
  size_t k = (size_t)sprintf(u, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if (*p == '%' || *p == '?' || *p == '#' || *p < 0x20)
      k += (size_t)sprintf(u + k, "%%%02X", *p);
    else
      u[k++] = (char)*p;
  }
  strcpy(u + k, "?immutable=1");
  return u;
}

int pfi__store_lock(struct pfi_store *st, struct pfi_error *err) {
  if (*pfi__store_lock_fd(st) >= 0)
    return 0;
  int fd = open(pfi_store_path(st), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return pfi_error_set(err, PFI_EIO, "%s: %s", pfi_store_path(st),
                         strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    if (e == EWOULDBLOCK)
      return pfi_error_set(err, PFI_EBUSY,
                           "%s: another pfi is sweeping with this store",
                           pfi_store_path(st));
    return pfi_error_set(err, PFI_EIO, "%s: lock: %s", pfi_store_path(st),
                         strerror(e));
  }
  *pfi__store_lock_fd(st) = fd;
  return 0;
}

void pfi__store_unlock(struct pfi_store *st) {
  if (*pfi__store_lock_fd(st) >= 0) {
    close(*pfi__store_lock_fd(st)); /* closing the descriptor drops the flock */
    *pfi__store_lock_fd(st) = -1;
  }
}

/* The tables other than samples and steps (pfi__store_samples_ddl). */
const char *const pfi__store_schema_sql =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT "
    "NULL);"
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, job TEXT NOT "
    "NULL, arch TEXT, task TEXT, cap_w REAL NOT NULL, gpus INTEGER NOT NULL,"
    " source TEXT NOT NULL, state TEXT NOT NULL, t_start_s REAL, t_end_s "
    "REAL, exit_status INTEGER, command TEXT, started_utc TEXT);"
    "CREATE INDEX IF NOT EXISTS runs_job_cap ON runs(job, cap_w);"
    "CREATE TABLE IF NOT EXISTS cap_events(id INTEGER PRIMARY KEY, run_id "
    "INTEGER, gpu INTEGER NOT NULL, action TEXT NOT NULL, mw INTEGER NOT "
    "NULL, t_s REAL, utc TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS cap_ledger(backend TEXT NOT NULL, gpu "
    "INTEGER NOT NULL, params TEXT NOT NULL, uuid TEXT NOT NULL, cap_mw "
    "INTEGER NOT NULL, recorded_utc TEXT NOT NULL, PRIMARY KEY(backend, "
    "gpu));"
    /* Node power (store.h), its own table beside the samples. */
    "CREATE TABLE IF NOT EXISTS node_power(run_id INTEGER NOT NULL, t_s "
    "REAL NOT NULL, gpu_w REAL, other_w REAL, node_w REAL NOT NULL, source "
    "TEXT NOT NULL, PRIMARY KEY(run_id, t_s)) WITHOUT ROWID;";

void pfi__store_runs_sql(unsigned which, int schema, char *sql, size_t n) {
  const char *counts =
      !(which & PFI_RUNS_COUNTS) ? "0, 0"
      : schema >= 2
          ? "(SELECT coalesce(sum(s.gpus), 0) FROM samples s WHERE s.run_id "
            "= r.id), (SELECT count(*) FROM steps p WHERE p.run_id = r.id)"
          : "(SELECT count(*) FROM samples s WHERE s.run_id = r.id), "
            "(SELECT count(*) FROM steps p WHERE p.run_id = r.id)";
  snprintf(sql, n,
           "SELECT r.id, r.job, coalesce(r.arch, ''), coalesce(r.task, ''), "
           "r.cap_w, r.gpus, r.source, r.state, r.exit_status, r.t_start_s, "
           "r.t_end_s, %s FROM runs r %s",
           counts,
           (which & 0xffu) == PFI_RUNS_NEWEST_COMPLETE
               ? "WHERE r.state = 'complete' AND r.id IN (SELECT max(id) FROM "
                 "runs WHERE state = 'complete' GROUP BY job, cap_w) ORDER BY "
                 "r.job, r.cap_w"
               : "ORDER BY r.id");
}

void pfi__store_samples_sql(int gpu, int schema, char *sql, size_t n) {
  if (schema >= 2) {
    /* The GPU is picked while the rows' entries are read; the first GPU
     * of the run (the lowest of any row's first) is the last column. */
    snprintf(sql, n,
             "SELECT t_s, data, gpus, %s FROM samples WHERE run_id = ?1 "
             "ORDER BY t_s",
             gpu == PFI_STORE_FIRST_GPU
                 ? "(SELECT min(gpu_first) FROM samples WHERE run_id = ?1)"
                 : "NULL");
    return;
  }
  char where[160];
  if (gpu == PFI_STORE_FIRST_GPU)
    snprintf(where, sizeof where,
             "run_id = ?1 AND gpu = (SELECT min(gpu) FROM samples WHERE "
             "run_id = ?1)");
  else if (gpu >= 0)
    snprintf(where, sizeof where, "run_id = ?1 AND gpu = %d", gpu);
  else
    snprintf(where, sizeof where, "run_id = ?1");
  size_t o = (size_t)snprintf(sql, n, "SELECT run_id, gpu, t_s, valid");
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    o += (size_t)snprintf(sql + o, n - o, ", %s",
                          pfi_field_name((enum pfi_field)f));
  snprintf(sql + o, n - o, " FROM samples WHERE %s ORDER BY t_s, gpu", where);
}
