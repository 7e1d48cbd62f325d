/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The trace store's helpers that do not speak SQLite: the time stamps,
 * the generated text of the samples table, the WAL file check and the
 * read-only URI, the sweep lock (store.c holds every SQLite call).
 */
#include <errno.h>
#include <fcntl.h>
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

/* The samples table has one column per telemetry field, generated from
 * PFI_FIELD_MAP so that a new field gets a column. A row per GPU and
 * instant with a validity bitmask is several times faster to write than a
 * row per field, and a field never valid costs one NULL. */
char *pfi__store_samples_ddl(void) {
  size_t cap = 4096;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  size_t o = (size_t)snprintf(s, cap,
                              "CREATE TABLE IF NOT EXISTS samples(run_id "
                              "INTEGER NOT NULL, gpu INTEGER NOT NULL, t_s "
                              "REAL NOT NULL, valid INTEGER NOT NULL");
  for (int f = 0; f < PFI_FIELD__COUNT; f++)
    o += (size_t)snprintf(s + o, cap - o, ", %s REAL", pfi_field_name(f));
  snprintf(s + o, cap - o, ", PRIMARY KEY(run_id, t_s, gpu)) WITHOUT ROWID;");
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

/* The tables other than samples (whose columns are generated). */
const char *const pfi__store_schema_sql =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT "
    "NULL);"
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, job TEXT NOT "
    "NULL, arch TEXT, task TEXT, cap_w REAL NOT NULL, gpus INTEGER NOT NULL,"
    " source TEXT NOT NULL, state TEXT NOT NULL, t_start_s REAL, t_end_s "
    "REAL, exit_status INTEGER, command TEXT, started_utc TEXT);"
    "CREATE INDEX IF NOT EXISTS runs_job_cap ON runs(job, cap_w);"
    "CREATE TABLE IF NOT EXISTS steps(run_id INTEGER NOT NULL, t_s REAL NOT "
    "NULL, job_t_s REAL, tokens REAL, tokens_per_s REAL, step REAL, loss "
    "REAL, mfu REAL);"
    "CREATE INDEX IF NOT EXISTS steps_run ON steps(run_id, t_s);"
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

void pfi__store_runs_sql(unsigned which, char *sql, size_t n) {
  const char *counts =
      (which & PFI_RUNS_COUNTS)
          ? "(SELECT count(*) FROM samples s WHERE s.run_id = r.id), "
            "(SELECT count(*) FROM steps p WHERE p.run_id = r.id)"
          : "0, 0";
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

void pfi__store_samples_sql(int gpu, char *sql, size_t n) {
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
