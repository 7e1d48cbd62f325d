/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The trace store's parts (store.c: schema, open, meta; store_write.c: the
 * write path; store_read.c: the iterators; store_db.c: the tables of
 * dbtable.h; store_journal.c: the samples journal, store_jframe.c its
 * frames): the handle and the helpers they share. Only these files call
 * SQLite. */
#ifndef PFI_SWEEP_STORE_INT_H
#define PFI_SWEEP_STORE_INT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"
#include "pfi/store.h"

/* Bumped when the schema changes incompatibly: the schema new stores get.
 * 2: the samples of a run at one instant packed in one row (store.h);
 * 1: a row per GPU and instant, a column per field (still read and
 * written in its own layout). */
#define PFI_STORE_SCHEMA 2
#define PFI_STORE_SCHEMA_MIN 1

enum {
  ST_SAMPLE,
  ST_SAMPLE_GET,
  ST_SAMPLE_SET,
  ST_STEP,
  ST_STEP_SEQ,
  ST_BEGIN,
  ST_COMMIT,
  ST_EVENT,
  ST_RUN_BEGIN,
  ST_RUN_END,
  ST_STEP_IGNORE,
  ST_NODE,
  ST__COUNT
};

/* A sample added to a schema-2 store and not yet written: the rows are
 * written when the batch commits (or a reader of this connection needs
 * them), one per run and instant. */
struct pend {
  int64_t run;
  double t;
  uint32_t gpu, valid;
  size_t seq; /* order of addition: of two for one GPU, the later wins */
  double v[PFI_FIELD__COUNT];
};

/* Pending samples written at once within a batch beyond this many. */
#define PEND_MAX 65536

/* A step added to a batch bound for the journal, numbered. */
struct pstep {
  int64_t run, seq;
  struct pfi_step s;
};

/* Node power added to a batch bound for the journal. */
struct pnode {
  int64_t run;
  struct pfi_node_power np;
  char src[33];
};

/* The samples journal (store_journal.c, docs/sweep.md): FILE-samples. */
#define PFI_JOURNAL_SUFFIX "-samples"
#define PFI_JOURNAL_MAGIC "PFIJ"
#define PFI_JOURNAL_VERSION 1
#define PFI_JOURNAL_HEADER 32
/* Frames are merged into the database at this many, at this age of the
 * oldest (wall time), and at close. */
#define PFI_JOURNAL_FRAMES 256
#define PFI_JOURNAL_SECONDS 1.0
/* Merged frames stay in the file (a reader skips them by their number)
 * until it is this large; then the next frame is written at byte 0, over
 * them, and so on: the file's pages are reused in place, as SQLite reuses
 * its -wal's, neither freed nor allocated again. The frames after this
 * pass's are numbered below its first, and end the scan
 * (pfi__journal_walk). */
#define PFI_JOURNAL_KEEP_BYTES (4u << 20)

struct pfi_store {
  sqlite3 *db;
  char *path;
  int in_batch;
  int lock_fd;
  int schema; /* the file's: 1 or 2 */
  sqlite3_stmt *stmt[ST__COUNT];
  struct pend *pend;     /* schema 2: samples not yet written */
  size_t npend, cappend; /* ... how many, room */
  int pend_sorted;       /* pend[] in (run, t, gpu) order, no GPU twice */
  unsigned char *buf;    /* one row's data, being built */
  size_t capbuf;
  int64_t step_run, step_seq; /* schema 2: the last step's run and seq */
  /* The samples journal (schema 2 writers). */
  char *jpath;
  int jfd;      /* the journal, open and locked by this writer; -1 */
  int jmode;    /* 1: a batch of samples and steps only goes to the journal */
  int sql_open; /* in a batch: its SQLite transaction is begun */
  int jin_tx;   /* the frames are merged in the open transaction */
  unsigned char *jbuf; /* the frames not yet merged, as in the file */
  size_t jlen, jcap, jframes;
  size_t jfile; /* the file's length: merged frames, then jbuf's */
  double jt0;           /* wall time of the oldest of them */
  size_t jmax;          /* merged at this many frames */
  double jmax_s;        /* ... or at this age of the oldest */
  uint64_t jseq;        /* the last frame's sequence number */
  uint64_t jmerged;     /* frames up to this one are in the database */
  struct pstep *psteps; /* steps of the open batch, bound for the journal */
  size_t npsteps, cappsteps;
  struct pnode *pnodes; /* node power of the open batch, the same */
  size_t npnodes, cappnodes;
  unsigned char *fbuf; /* the frame being built */
  size_t fcap;
  struct pend *jpend; /* samples of frames being merged */
  size_t njpend, capjpend;
};

/* A failure of the storage (no room, an I/O error, no permission) is a
 * run-time failure, PFI_EIO; anything else SQLite says is PFI_EDB (not a
 * store, a corrupt one). */
int pfi__store_sqlite_code(int src);
/* Runs `sql` on db (the file at `path`): 0, or the error with its message. */
int pfi__store_exec_db(sqlite3 *db, const char *path, const char *sql,
                       struct pfi_error *err);
/* The same, tried again every 10 ms while SQLite answers busy without
 * waiting itself, up to 10 s: a new database's change into WAL takes an
 * exclusive lock that SQLite does not wait for (the busy timeout does not
 * apply), so of writers opening one new database at once (concurrent
 * sweeps, two daemons on one records file) all but one failed with
 * "database is locked" (unit.test_store concurrent_create). */
int pfi__store_exec_db_waiting(sqlite3 *db, const char *path, const char *sql,
                               struct pfi_error *err);
/* The same on the store's connection. */
int pfi__store_exec(struct pfi_store *st, const char *sql,
                    struct pfi_error *err);
/* Binds v, or NULL when it is not finite. */
void pfi__store_bind_opt(sqlite3_stmt *q, int i, double v);
/* Schema 2: writes the samples added and not yet written (store_write.c). */
int pfi__store_flush_samples(struct pfi_store *st, struct pfi_error *err);
/* Writes pending samples p[0..n) (sorted when `sorted`, else sorted
 * here), a row per run and instant, merged into a row already there. */
int pfi__store_flush_pend(struct pfi_store *st, struct pend *p, size_t n,
                          int sorted, struct pfi_error *err);
/* Bytes room for the row of pending samples [a, b); writes it at out (the
 * later of two for one GPU kept), *gpus entries; returns its length. */
size_t pfi__store_row_room(const struct pend *a, const struct pend *b);
size_t pfi__store_row_put(unsigned char *out, const struct pend *a,
                          const struct pend *b, long long *gpus);
int pfi__store_pend_cmp(const void *a, const void *b);
/* Binds and runs the insert of step s as number seq of run (q: ST_STEP or
 * ST_STEP_IGNORE of a schema-2 store). */
int pfi__store_put_step(struct pfi_store *st, sqlite3_stmt *q, int64_t run,
                        int64_t seq, const struct pfi_step *s,
                        struct pfi_error *err);
/* Binds and runs the INSERT OR REPLACE of node power np (q: ST_NODE, or
 * the same statement on another table). */
int pfi__store_put_node(struct pfi_store *st, sqlite3_stmt *q, int64_t run,
                        const struct pfi_node_power *np, struct pfi_error *err);

/* The journal (store_journal.c). At open: a writer merges what a writer
 * before it left; a reader reads the frames not yet merged beside the
 * database (temporary tables in memory, shadowing samples and steps). */
int pfi__journal_open(struct pfi_store *st, int readonly,
                      struct pfi_error *err);
/* Commits the open batch (samples and steps only) as one frame. */
int pfi__journal_commit(struct pfi_store *st, struct pfi_error *err);
/* Before any write other than a batch's samples and steps, and before this
 * connection reads: in a batch, begins its transaction and merges the
 * frames and the batch's steps into it; outside, merges the frames in a
 * transaction of their own. */
int pfi__store_sql(struct pfi_store *st, struct pfi_error *err);
/* After the transaction that merged the frames committed: the next frame
 * goes after them, or at byte 0 over them once the file holds
 * PFI_JOURNAL_KEEP_BYTES. */
int pfi__journal_merged(struct pfi_store *st, struct pfi_error *err);
/* At close: merges what is left, removes the empty journal. */
void pfi__journal_close(struct pfi_store *st);
/* Frame helpers (store_jframe.c). */
void pfi__jput32(unsigned char *p, uint32_t x);
void pfi__jput64(unsigned char *p, uint64_t x);
void pfi__jputf(unsigned char *p, double v);
uint64_t pfi__jhash(const unsigned char *p, size_t n, uint64_t h);
/* pfi_store_journal_scan; with `trust` (frames this process wrote and
 * keeps in memory) neither checksums nor rows are checked again. Where no
 * frame reads at the start, the bytes after are an earlier pass's (the end)
 * unless a frame numbered above `floor` lies in them (damage, an error):
 * the store passes its journal_seq, every earlier pass's frames being
 * merged; pfi_store_journal_scan 0. */
int pfi__journal_walk(const unsigned char *b, size_t n, int trust,
                      uint64_t floor,
                      int (*fn)(void *ctx, uint64_t seq,
                                const struct pfi_store_jrec *rec),
                      void *ctx, struct pfi_store_jscan *out);
void pfi__jframe_seal(unsigned char *f, size_t payload, uint64_t seq);

/* The located error of a samples row whose data cannot be read. */
int pfi__store_blob_error(const char *path, int64_t run, double t, size_t off,
                          size_t n, const char *why, struct pfi_error *err);

#endif
