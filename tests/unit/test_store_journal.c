/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The trace store's samples journal (FILE-samples, docs/sweep.md): batches
 * of samples and steps committed as frames, merged into the database, read
 * by readers before they are merged; a writer killed with SIGKILL, a torn
 * last frame, a damaged frame in the middle. Expected values are computed
 * here from the loop that wrote them, and rows counted through SQLite
 * directly. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "pfi/store.h"
#include "testutil.h"

static char dir[64];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/pfi-test-journal-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *buf, size_t n, const char *name) {
  snprintf(buf, n, "%s/%s", dir, name);
}

static long long sql_int(const char *path, const char *sql) {
  sqlite3 *db;
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  long long v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

static long long file_size(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 ? (long long)sb.st_size : -1;
}

enum { GPUS = 4 };

/* The value of field f of GPU g at interval k of run r: distinct for each,
 * exact in binary. */
static double value(int r, int k, unsigned g, int f) {
  return 1000.0 * r + k + 0.25 * g + 0.0625 * f;
}

/* Field mask of GPU g at interval k: GPU 3 reports no temperature on odd
 * intervals. */
static uint32_t mask(int k, unsigned g) {
  uint32_t all = (1u << PFI_FIELD__COUNT) - 1;
  return (g == 3 && k % 2) ? all & ~(1u << PFI_FIELD_TEMP) : all;
}

/* Interval k of run `run` (the r-th run), one batch: the GPUs' samples and
 * one step whose loss is missing on every third. */
static void interval(struct pfi_store *st, int64_t run, int r, int k) {
  struct pfi_error err;
  assert_int_equal(pfi_store_begin(st, &err), 0);
  for (unsigned g = 0; g < GPUS; g++) {
    struct pfi_sample s;
    memset(&s, 0, sizeof s);
    s.t_s = 5.0 * k;
    s.valid = mask(k, g);
    for (int f = 0; f < PFI_FIELD__COUNT; f++)
      s.v[f] = value(r, k, g, f);
    assert_int_equal(pfi_store_add_sample(st, run, g, &s, &err), 0);
  }
  struct pfi_step sp = {5.0 * k, 5.0 * k,           1e6 * k, 100.0 * r + k,
                        k,       k % 3 ? 2.0 : NAN, NAN};
  assert_int_equal(pfi_store_add_step(st, run, &sp, &err), 0);
  assert_int_equal(pfi_store_commit(st, &err), 0);
}

static int64_t begin_run(struct pfi_store *st, int r) {
  struct pfi_error err;
  struct pfi_run_info ri;
  memset(&ri, 0, sizeof ri);
  snprintf(ri.job, sizeof ri.job, "job-%d", r);
  snprintf(ri.source, sizeof ri.source, "emulated");
  ri.cap_w = 300 + r;
  ri.gpus = GPUS;
  assert_int_equal(pfi_store_run_begin(st, &ri, &err), 0);
  return ri.id;
}

/* Checks every sample and step of run `run` (the r-th) against the values
 * written for intervals 1..n, through the store's iterators. */
static void check_run(struct pfi_store *st, int64_t run, int r, int n) {
  struct pfi_error err;
  struct pfi_store_iter *it;
  assert_int_equal(
      pfi_store_samples_open(st, run, PFI_STORE_ALL_GPUS, &it, &err), 0);
  struct pfi_store_sample s;
  int got = 0, rc;
  while ((rc = pfi_store_samples_next(it, &s, &err)) == 1) {
    int k = got / GPUS + 1;
    unsigned g = (unsigned)(got % GPUS);
    ASSERT_EQ_INT(s.t_s, 5.0 * k);
    ASSERT_EQ_INT(s.gpu, g);
    ASSERT_EQ_INT(s.valid, mask(k, g));
    for (int f = 0; f < PFI_FIELD__COUNT; f++)
      if (s.valid >> f & 1u)
        assert_true(s.v[f] == value(r, k, g, f));
    got++;
  }
  ASSERT_EQ_INT(rc, 0);
  ASSERT_EQ_INT(got, n * GPUS);
  pfi_store_iter_close(it);
  assert_int_equal(pfi_store_steps_open(st, run, &it, &err), 0);
  struct pfi_store_step sp;
  got = 0;
  while ((rc = pfi_store_steps_next(it, &sp, &err)) == 1) {
    got++;
    ASSERT_EQ_INT(sp.t_s, 5.0 * got);
    assert_true(sp.tokens_per_s == 100.0 * r + got);
  }
  ASSERT_EQ_INT(rc, 0);
  ASSERT_EQ_INT(got, n);
  pfi_store_iter_close(it);
}

/* The same campaign through the journal and straight into SQLite: the
 * same rows, counted in the files. */
static void round_trip(void **state) {
  (void)state;
  char pj[128], pd[128], jf[160];
  path_of(pj, sizeof pj, "journal.db");
  path_of(pd, sizeof pd, "direct.db");
  snprintf(jf, sizeof jf, "%s-samples", pj);
  struct pfi_store *sj, *sd;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&sj, pj, PFI_STORE_CREATE, &err), 0);
  assert_int_equal(pfi_store_open(&sd, pd, PFI_STORE_CREATE, &err), 0);
  /* Merged every 7 frames (and never by age) here; none for the other. */
  assert_int_equal(pfi_store_journal_policy(sj, 7, 1e9, &err), 0);
  assert_int_equal(pfi_store_journal_policy(sd, 0, 0, &err), 0);
  const int runs = 3, n = 40;
  for (int r = 1; r <= runs; r++) {
    int64_t a = begin_run(sj, r), b = begin_run(sd, r);
    for (int k = 1; k <= n; k++) {
      interval(sj, a, r, k);
      interval(sd, b, r, k);
    }
    if (r < runs) {
      assert_int_equal(
          pfi_store_run_end(sj, a, PFI_RUN_COMPLETE, 5.0 * n, 0, &err), 0);
      assert_int_equal(
          pfi_store_run_end(sd, b, PFI_RUN_COMPLETE, 5.0 * n, 0, &err), 0);
    }
  }
  assert_true(file_size(jf) > 0); /* frames not yet merged */
  assert_int_equal(file_size(pd) > 0, 1);
  char dj[160];
  snprintf(dj, sizeof dj, "%s-samples", pd);
  assert_int_equal(file_size(dj), -1); /* no journal without one */
  /* A reader beside the writer sees the frames not yet merged. */
  struct pfi_store *rd;
  assert_int_equal(pfi_store_open(&rd, pj, PFI_STORE_READONLY, &err), 0);
  for (int r = 1; r <= runs; r++)
    check_run(rd, r, r, n);
  pfi_store_close(rd);
  /* The writer reading its own store merges first. */
  for (int r = 1; r <= runs; r++) {
    check_run(sj, r, r, n);
    check_run(sd, r, r, n);
  }
  pfi_store_close(sj);
  pfi_store_close(sd);
  assert_int_equal(file_size(jf), -1); /* merged and removed at close */
  const char *count =
      "SELECT (SELECT coalesce(sum(gpus), 0) FROM samples) * 1000000 + "
      "(SELECT count(*) FROM steps)";
  long long want = (long long)runs * n * GPUS * 1000000 + runs * n;
  ASSERT_EQ_INT(sql_int(pj, count), want);
  ASSERT_EQ_INT(sql_int(pd, count), want);
  /* The rows, byte for byte. */
  const char *rows = "SELECT count(*) FROM samples a JOIN d.samples b USING "
                     "(run_id, t_s) WHERE a.data = b.data AND a.gpus = b.gpus "
                     "AND a.gpu_first = b.gpu_first";
  char sql[512];
  snprintf(sql, sizeof sql, "ATTACH '%s' AS d", pd);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(pj, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(db, rows, -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  ASSERT_EQ_INT(sqlite3_column_int64(q, 0), (long long)runs * n);
  sqlite3_finalize(q);
  const char *steps =
      "SELECT count(*) FROM steps a JOIN d.steps b USING (run_id, t_s, seq) "
      "WHERE a.tokens_per_s = b.tokens_per_s AND a.job_t_s IS b.job_t_s AND "
      "a.tokens IS b.tokens AND a.step IS b.step AND a.loss IS b.loss AND "
      "a.mfu IS b.mfu";
  assert_int_equal(sqlite3_prepare_v2(db, steps, -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  ASSERT_EQ_INT(sqlite3_column_int64(q, 0), (long long)runs * n);
  sqlite3_finalize(q);
  sqlite3_close(db);
}

/* A writer that commits intervals 1..n of one run, telling the parent
 * after each commit returned, then waits to be killed. */
static void writer_child(const char *p, int n, size_t frames, int fd) {
  struct pfi_store *st;
  struct pfi_error err;
  if (pfi_store_open(&st, p, PFI_STORE_CREATE, &err) < 0 ||
      pfi_store_journal_policy(st, frames, 1e9, &err) < 0)
    _exit(3);
  int64_t run = begin_run(st, 1);
  for (int k = 1; k <= n; k++) {
    interval(st, run, 1, k);
    if (write(fd, &k, sizeof k) != sizeof k)
      _exit(4);
  }
  for (;;)
    pause();
}

/* Runs writer_child, kills it with SIGKILL after `after` acknowledged
 * commits (all of them when after >= n); returns the last acknowledged. */
static int killed_writer(const char *p, int n, int after, size_t frames) {
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pfd[0]);
    writer_child(p, n, frames, pfd[1]);
  }
  close(pfd[1]);
  int k, last = 0;
  while (last < after && read(pfd[0], &k, sizeof k) == sizeof k)
    last = k;
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  /* Any commit that returned before the kill counts. */
  while (read(pfd[0], &k, sizeof k) == sizeof k)
    last = k;
  close(pfd[0]);
  assert_true(WIFSIGNALED(status));
  return last;
}

/* Every interval whose commit returned is there after a SIGKILL, once. */
static void killed(void **state) {
  (void)state;
  const int n = 60;
  for (int after = 5; after <= n; after += 11) {
    char p[128], jf[160];
    char name[32];
    snprintf(name, sizeof name, "killed-%d.db", after);
    path_of(p, sizeof p, name);
    snprintf(jf, sizeof jf, "%s-samples", p);
    int last = killed_writer(p, n, after, 8);
    assert_true(last >= after);
    /* The commit the kill came after may have returned without the
     * parent hearing of it: one interval more, never fewer. */
    /* A reader first: the frames are read, nothing is merged or made. */
    struct pfi_store *st;
    struct pfi_error err;
    assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
    struct pfi_store_iter *it;
    struct pfi_store_run run;
    assert_int_equal(
        pfi_store_runs_open(st, PFI_RUNS_ALL | PFI_RUNS_COUNTS, &it, &err), 0);
    assert_int_equal(pfi_store_runs_next(it, &run, &err), 1);
    int have = (int)(run.samples / GPUS);
    assert_true(have == last || have == last + 1);
    ASSERT_EQ_INT(run.samples, (long long)have * GPUS);
    ASSERT_EQ_INT(run.steps, have);
    pfi_store_iter_close(it);
    check_run(st, 1, 1, have);
    last = have;
    pfi_store_close(st);
    /* A writer merges them. */
    assert_int_equal(pfi_store_open(&st, p, 0, &err), 0);
    ASSERT_EQ_INT(file_size(jf), 0);
    pfi_store_close(st);
    assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
    check_run(st, 1, 1, last);
    pfi_store_close(st);
    ASSERT_EQ_INT(sql_int(p, "SELECT sum(gpus) FROM samples"),
                  (long long)last * GPUS);
    ASSERT_EQ_INT(sql_int(p, "SELECT count(*) FROM steps"), last);
  }
}

/* A crash after the merge's commit and before the journal was emptied:
 * the frames merged again change nothing. */
static void merged_twice(void **state) {
  (void)state;
  char p[128], jf[160], keep[170];
  path_of(p, sizeof p, "twice.db");
  snprintf(jf, sizeof jf, "%s-samples", p);
  snprintf(keep, sizeof keep, "%s.keep", jf);
  int last = killed_writer(p, 20, 20, 1000);
  ASSERT_EQ_INT(last, 20);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", jf, keep);
  assert_int_equal(system(cmd), 0);
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, p, 0, &err), 0);
  pfi_store_close(st);
  assert_int_equal(rename(keep, jf), 0);
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
  check_run(st, 1, 1, 20);
  pfi_store_close(st);
  assert_int_equal(pfi_store_open(&st, p, 0, &err), 0);
  check_run(st, 1, 1, 20);
  pfi_store_close(st);
  ASSERT_EQ_INT(sql_int(p, "SELECT sum(gpus) FROM samples"), 20 * GPUS);
  ASSERT_EQ_INT(sql_int(p, "SELECT count(*) FROM steps"), 20);
}

/* The byte offsets of the journal's frames, from their length fields. */
static int frame_offsets(const char *jf, long *off, int max, long *size) {
  FILE *f = fopen(jf, "rb");
  assert_non_null(f);
  unsigned char h[32];
  long o = 0;
  int k = 0;
  while (k < max && fseek(f, o, SEEK_SET) == 0 && fread(h, 1, 32, f) == 32) {
    assert_memory_equal(h, "PFIJ", 4);
    off[k++] = o;
    o += 32 +
         ((long)h[8] | (long)h[9] << 8 | (long)h[10] << 16 | (long)h[11] << 24);
  }
  fclose(f);
  *size = o;
  return k;
}

static void poke(const char *jf, long at) {
  FILE *f = fopen(jf, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, at, SEEK_SET), 0);
  int c = fgetc(f);
  assert_int_equal(fseek(f, at, SEEK_SET), 0);
  fputc(c ^ 0x40, f);
  fclose(f);
}

/* The last frame cut short (a write the kill interrupted) is dropped; a
 * damaged frame with frames after it is an error at its byte. */
static void torn_and_damaged(void **state) {
  (void)state;
  char p[128], jf[160];
  path_of(p, sizeof p, "torn.db");
  snprintf(jf, sizeof jf, "%s-samples", p);
  ASSERT_EQ_INT(killed_writer(p, 6, 6, 1000), 6);
  long off[16], size;
  ASSERT_EQ_INT(frame_offsets(jf, off, 16, &size), 6);
  ASSERT_EQ_INT(size, file_size(jf));
  /* Damage frame 3's payload. */
  poke(jf, off[2] + 40);
  struct pfi_store *st;
  struct pfi_error err;
  char want[64];
  snprintf(want, sizeof want, "byte %ld: ", off[2]);
  for (int ro = 0; ro < 2; ro++) {
    assert_int_equal(pfi_store_open(&st, p, ro ? PFI_STORE_READONLY : 0, &err),
                     PFI_EPARSE);
    assert_string_equal(err.file, jf);
    if (!strstr(err.msg, want))
      fprintf(stderr, "message: %s\n", err.msg);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "checksum"));
  }
  poke(jf, off[2] + 40); /* mended */
  /* Cut inside the last frame: five intervals left. */
  assert_int_equal(truncate(jf, off[5] + 50), 0);
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
  check_run(st, 1, 1, 5);
  pfi_store_close(st);
  assert_int_equal(pfi_store_open(&st, p, 0, &err), 0);
  check_run(st, 1, 1, 5);
  pfi_store_close(st);
  ASSERT_EQ_INT(sql_int(p, "SELECT sum(gpus) FROM samples"), 5 * GPUS);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long sz = ftell(f);
  assert_true(sz > 0);
  rewind(f);
  unsigned char *b = malloc((size_t)sz);
  assert_non_null(b);
  assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  *n = (size_t)sz;
  return b;
}

static uint64_t le64(const unsigned char *p) {
  uint64_t x = 0;
  for (int i = 7; i >= 0; i--)
    x = x << 8 | p[i];
  return x;
}

/* Once its merged frames fill 4 MiB the journal is written again from
 * byte 0, over them: the frames of the earlier pass left after the new
 * ones (numbered below them, and cut at a frame's middle where the new
 * ones end) are not read, by readers or the next writer; a damaged frame
 * of the new pass with frames after it is still an error at its byte, and
 * its last frame damaged is dropped. */
static void reused(void **state) {
  (void)state;
  const int n = 7000; /* about 5 MiB of frames of 4 GPUs */
  char p[128], jf[160], keep[170];
  path_of(p, sizeof p, "reused.db");
  snprintf(jf, sizeof jf, "%s-samples", p);
  snprintf(keep, sizeof keep, "%s.keep", jf);
  ASSERT_EQ_INT(killed_writer(p, n, n, 64), n);
  size_t size;
  unsigned char *b = slurp(jf, &size);
  /* The file kept its pages: as long as the first pass, longer than the
   * frames at its start. */
  assert_true(size >= (size_t)4 << 20);
  struct pfi_store_jscan sc;
  ASSERT_EQ_INT(pfi_store_journal_scan(b, size, NULL, NULL, &sc), 0);
  assert_true(sc.first_seq > 1);
  ASSERT_EQ_INT(sc.last_seq, n);
  ASSERT_EQ_INT(sc.frames, n - sc.first_seq + 1);
  assert_true(sc.end < size);
  /* After them, frames of the first pass: whole ones numbered below the
   * new pass's first (read, they would be intervals of the past, or the
   * error of a frame numbered out of order), and no zero bytes at the
   * end of the new ones (read, a damaged header). */
  int stale = 0;
  for (size_t o = sc.end; o + 32 <= size; o++)
    if (!memcmp(b + o, "PFIJ", 4)) {
      uint64_t q = le64(b + o + 16);
      assert_true(q < sc.first_seq);
      stale++;
    }
  assert_true(stale > 100);
  assert_true(b[sc.end] != 0 || b[sc.end + 1] != 0 || b[sc.end + 2] != 0);
  long first_len = (long)(b[8] | b[9] << 8 | b[10] << 16 | (long)b[11] << 24);
  long second = 32 + first_len;
  /* The last frame's offset, walking the new pass by lengths. */
  long last = 0;
  for (long o = 0; o < (long)sc.end;) {
    last = o;
    o += 32 + (long)(b[o + 8] | b[o + 9] << 8 | b[o + 10] << 16 |
                     (long)b[o + 11] << 24);
  }
  free(b);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", jf, keep);
  assert_int_equal(system(cmd), 0);

  struct pfi_store *st;
  struct pfi_error err;
  /* Damage in the new pass's second frame: frames of it follow. */
  poke(jf, second + 40);
  char want[64];
  snprintf(want, sizeof want, "byte %ld: ", second);
  for (int ro = 0; ro < 2; ro++) {
    assert_int_equal(pfi_store_open(&st, p, ro ? PFI_STORE_READONLY : 0, &err),
                     PFI_EPARSE);
    assert_string_equal(err.file, jf);
    if (!strstr(err.msg, want))
      fprintf(stderr, "message: %s\n", err.msg);
    assert_non_null(strstr(err.msg, want));
  }
  poke(jf, second + 40); /* mended */

  /* The last frame damaged (a torn write over the old pass): dropped. */
  poke(jf, last + 40);
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
  check_run(st, 1, 1, n - 1);
  pfi_store_close(st);
  assert_int_equal(rename(keep, jf), 0);

  /* Whole: every interval once, for a reader, then the next writer. */
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
  check_run(st, 1, 1, n);
  pfi_store_close(st);
  assert_int_equal(pfi_store_open(&st, p, 0, &err), 0);
  check_run(st, 1, 1, n);
  pfi_store_close(st);
  ASSERT_EQ_INT(sql_int(p, "SELECT sum(gpus) FROM samples"),
                (long long)n * GPUS);
  ASSERT_EQ_INT(sql_int(p, "SELECT count(*) FROM steps"), n);
}

/* A listing of the directory: name, size and modification time of each
 * file, but the -shm (SQLite's shared memory of a WAL database, where any
 * reader marks what it reads, with or without a journal). */
static void listing(char *out, size_t n) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  size_t o = 0;
  out[0] = 0;
  char names[64][64];
  int k = 0;
  while ((e = readdir(d)) && k < 64)
    if (e->d_name[0] != '.' && !strstr(e->d_name, "-shm"))
      snprintf(names[k++], sizeof names[0], "%.63s", e->d_name);
  closedir(d);
  qsort(names, (size_t)k, sizeof names[0],
        (int (*)(const void *, const void *))strcmp);
  for (int i = 0; i < k; i++) {
    char p[200];
    snprintf(p, sizeof p, "%s/%.63s", dir, names[i]);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    o += (size_t)snprintf(out + o, n - o, "%s %lld %lld.%09ld\n", names[i],
                          (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
                          sb.st_mtim.tv_nsec);
  }
}

/* A reader of a store with frames writes nothing and makes no file. */
static void reader_writes_nothing(void **state) {
  (void)state;
  char p[128];
  path_of(p, sizeof p, "ro.db");
  ASSERT_EQ_INT(killed_writer(p, 9, 9, 1000), 9);
  char before[4096], after[4096];
  listing(before, sizeof before);
  assert_non_null(strstr(before, "ro.db-samples "));
  struct pfi_store *st;
  struct pfi_error err;
  assert_int_equal(pfi_store_open(&st, p, PFI_STORE_READONLY, &err), 0);
  check_run(st, 1, 1, 9);
  assert_true(pfi_store_field_max(st, PFI_FIELD_POWER) ==
              value(1, 9, GPUS - 1, PFI_FIELD_POWER));
  pfi_store_close(st);
  listing(after, sizeof after);
  assert_string_equal(before, after);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip),
      cmocka_unit_test(killed),
      cmocka_unit_test(merged_twice),
      cmocka_unit_test(torn_and_damaged),
      cmocka_unit_test(reader_writes_nothing),
      cmocka_unit_test(reused),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
