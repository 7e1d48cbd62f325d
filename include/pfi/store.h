/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The trace store: one SQLite database (WAL mode) per campaign, holding the
 * runs of a sweep, the telemetry samples of every GPU, the job's throughput
 * steps, every cap change and restore, and the pfi version and seed. The
 * schema is documented in docs/sweep.md.
 *
 * Writers batch rows between pfi_store_begin() and pfi_store_commit() (one
 * transaction per sampling interval), so a run interrupted at any moment
 * leaves a consistent store; readers (pfi trace ...) can open the database
 * while a sweep writes it, because WAL lets readers and one writer coexist.
 *
 * The cap ledger is the hardware-safety record: before a sweep changes any
 * cap it calls pfi_store_caps_record(), which commits every listed GPU's
 * current cap. The ledger rows stay until the caps are restored, so a pfi
 * killed with SIGKILL leaves behind exactly what the next invocation needs
 * to put the GPUs back (see pfi_sweep_recover() in sweep.h).
 */
#ifndef PFI_STORE_H
#define PFI_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/device.h"
#include "pfi/error.h"

struct pfi_store;

/* Flags of pfi_store_open(). */
#define PFI_STORE_CREATE 1u   /* create the file and schema when absent */
#define PFI_STORE_READONLY 2u /* open for reading only */

/*
 * Opens (and with PFI_STORE_CREATE creates) the store at `path`. Returns 0,
 * PFI_EIO (cannot open), PFI_EDB (not a pfi store, or an SQLite error, with
 * SQLite's message) or PFI_ENOMEM. Close with pfi_store_close().
 */
int pfi_store_open(struct pfi_store **st, const char *path, unsigned flags,
                   struct pfi_error *err);
/* Closes; rolls back an open transaction. Safe with NULL. */
void pfi_store_close(struct pfi_store *st);

/* The path the store was opened with (owned by the store). */
const char *pfi_store_path(const struct pfi_store *st);

/* Key/value metadata (pfi_version, seed, source, backend ...). `get`
 * returns 1 when found (value copied into buf, truncated to n), 0 when
 * absent, or PFI_EDB. */
int pfi_store_meta_set(struct pfi_store *st, const char *key, const char *value,
                       struct pfi_error *err);
int pfi_store_meta_get(struct pfi_store *st, const char *key, char *buf,
                       size_t n, struct pfi_error *err);

/* Batches: every add below between begin and commit lands atomically. */
int pfi_store_begin(struct pfi_store *st, struct pfi_error *err);
int pfi_store_commit(struct pfi_store *st, struct pfi_error *err);
int pfi_store_rollback(struct pfi_store *st);

/* Provenance of a run's data. */
#define PFI_SOURCE_EMULATED "emulated"
#define PFI_SOURCE_MEASURED "measured"

/* Run states. A run is "running" from begin to end; "complete" runs are
 * skipped when a sweep is resumed; "failed" (job crashed, readback
 * mismatch) and "interrupted" (signal, or found running after a crash) are
 * run again. */
#define PFI_RUN_RUNNING "running"
#define PFI_RUN_COMPLETE "complete"
#define PFI_RUN_FAILED "failed"
#define PFI_RUN_INTERRUPTED "interrupted"

struct pfi_run_info {
  int64_t id;        /* assigned by pfi_store_run_begin() */
  char job[128];     /* job name (group id, or the command's name) */
  char arch[32];     /* "dense", "moe"; empty when unknown */
  char task[32];     /* "pt", "ft"; empty when unknown */
  double cap_w;      /* per-GPU cap of the run, W */
  unsigned gpus;     /* GPU count of the job */
  char source[16];   /* PFI_SOURCE_* */
  char state[16];    /* PFI_RUN_* */
  double t_start_s;  /* device clock at the start, s */
  double t_end_s;    /* device clock at the end, s (0 while running) */
  int exit_status;   /* the job's exit status; -1 when unknown */
  char command[512]; /* the job's command line, for the record */
};

/* Inserts a run in state "running" (committed at once unless a batch is
 * open); sets info->id. */
int pfi_store_run_begin(struct pfi_store *st, struct pfi_run_info *info,
                        struct pfi_error *err);
/* Sets a run's final state, end time and exit status. */
int pfi_store_run_end(struct pfi_store *st, int64_t run_id, const char *state,
                      double t_end_s, int exit_status, struct pfi_error *err);
/* The command line recorded with the newest run of `job` (any state), into
 * cmd (n bytes, NUL-terminated, cut to fit). Returns 1 when the store holds
 * a run of the job, 0 when not, or PFI_EDB. */
int pfi_store_job_command(struct pfi_store *st, const char *job, char *cmd,
                          size_t n, struct pfi_error *err);
/* Looks up the newest complete run of (job, cap_w within 1e-6 W). Returns
 * 1 and sets *run_id when found, 0 when not, or PFI_EDB. */
int pfi_store_run_find_complete(struct pfi_store *st, const char *job,
                                double cap_w, int64_t *run_id,
                                struct pfi_error *err);
/* Marks every run still "running" as "interrupted" (after a crash). Returns
 * how many, or PFI_EDB. */
int pfi_store_runs_mark_interrupted(struct pfi_store *st,
                                    struct pfi_error *err);

/* Appends one GPU's telemetry sample (all fields, with the validity mask)
 * to a run. */
int pfi_store_add_sample(struct pfi_store *st, int64_t run_id, unsigned gpu,
                         const struct pfi_sample *s, struct pfi_error *err);

/* One throughput report of the job. Fields not reported are NaN. */
struct pfi_step {
  double t_s;          /* device clock when it was observed (aligned), s */
  double job_t_s;      /* the job's own timestamp, s; NaN when absent */
  double tokens;       /* cumulative tokens; NaN when absent */
  double tokens_per_s; /* throughput, tokens/s; NaN when absent */
  double step;         /* global step; NaN when absent */
  double loss;         /* NaN when absent */
  double mfu;          /* model FLOPs utilization 0..1; NaN when absent */
};

int pfi_store_add_step(struct pfi_store *st, int64_t run_id,
                       const struct pfi_step *s, struct pfi_error *err);

/*
 * Node power: one row per sampling instant of a run, in its own table
 * (node_power), beside the GPU samples. node_w is the DC power of the
 * node the sweep samples: its GPUs' power (gpu_w, the sum of the same
 * instant's samples) plus the rest (other_w), measured or emulated as
 * `source` says: "rapl" (CPU packages and DRAM through Linux powercap,
 * the interval ending at t_s; the node's other parts are not in it),
 * "emulated" (the emulator's host model, include/pfi/emu.h), "dcmi" (the
 * BMC's reading of the whole node at t_s, include/pfi/sensor.h's
 * pfi_bmc_read: node_w is that reading, on most servers the supplies'
 * input, and other_w = node_w - gpu_w).
 */
#define PFI_NODE_SOURCE_DCMI "dcmi"
#define PFI_NODE_SOURCE_RAPL "rapl"
#define PFI_NODE_SOURCE_EMULATED "emulated"
struct pfi_node_power {
  double t_s;
  double gpu_w, other_w, node_w;
  const char *source; /* PFI_NODE_SOURCE_* */
};
int pfi_store_add_node_power(struct pfi_store *st, int64_t run_id,
                             const struct pfi_node_power *np,
                             struct pfi_error *err);

/* Cap events: "record" (cap found before the sweep), "set", "readback",
 * "restore". `run_id` 0 when outside a run. */
int pfi_store_cap_event(struct pfi_store *st, int64_t run_id, unsigned gpu,
                        const char *action, uint32_t mw, double t_s,
                        struct pfi_error *err);

/* One row of the cap ledger: a GPU whose original cap must be restored. */
struct pfi_saved_cap {
  char backend[32]; /* backend name ("emu", "nvml") */
  char params[256]; /* backend parameters the sweep opened it with */
  unsigned gpu;     /* GPU index */
  char uuid[96];    /* GPU UUID when known, to check it is the same GPU */
  uint32_t cap_mw;  /* the cap before the sweep, mW */
};

/*
 * Records the current caps of `n` GPUs in the ledger and commits (the
 * function opens and commits its own transaction; it must not be called
 * inside a batch), with synchronous=FULL, then checkpoints the ledger into
 * the main database file (pfi_store_caps_sync). A GPU already in the ledger
 * keeps its older entry: after a crash its present cap is a sweep's cap, not
 * the original one.
 */
int pfi_store_caps_record(struct pfi_store *st,
                          const struct pfi_saved_cap *caps, size_t n,
                          struct pfi_error *err);
/* The ledger: *out is a malloc'd array of *n rows (caller frees). */
int pfi_store_caps_pending(struct pfi_store *st, struct pfi_saved_cap **out,
                           size_t *n, struct pfi_error *err);
/* Removes one GPU's ledger row once its cap is restored (and verified). */
int pfi_store_caps_clear(struct pfi_store *st, const char *backend,
                         unsigned gpu, struct pfi_error *err);
/* Checkpoints the ledger as it is now into the main database file (a full
 * WAL checkpoint, synced), so that a copy of that file alone holds it.
 * pfi_store_caps_record does it itself; call it after clearing rows.
 * Returns 0, or PFI_EDB when a reader's old snapshot kept the checkpoint
 * from completing (the ledger is still committed in the -wal). */
int pfi_store_caps_sync(struct pfi_store *st, struct pfi_error *err);

/* ---- reading: iterators over runs, samples and steps ----------------------
 *
 * The only way to read a store: no SQL outside the store's source. An
 * iterator is opened, stepped with its _next function (1: a row in *out,
 * 0: no more rows, or PFI_EDB / PFI_EIO with the message) and closed with
 * pfi_store_iter_close() (safe with NULL). Strings in a row belong to the
 * iterator and stay valid until its next step. Iterators may be nested
 * (the samples of each run while the runs are stepped).
 */
struct pfi_store_iter;

struct pfi_store_run {
  int64_t id;
  const char *job, *arch, *task, *state, *source; /* "" when absent */
  double cap_w;
  int gpus;
  int has_exit, exit_status;
  int has_t_start, has_t_end;
  double t_start_s, t_end_s;
  long long samples, steps; /* rows of the run (with PFI_RUNS_COUNTS) */
};

/* Which runs: every run by id, or the newest complete run of each (job,
 * cap) by job then cap (the runs the summaries use: a resumed sweep's
 * repeat replaces the earlier one). PFI_RUNS_COUNTS adds the counts. */
#define PFI_RUNS_ALL 0u
#define PFI_RUNS_NEWEST_COMPLETE 1u
#define PFI_RUNS_COUNTS 0x100u

int pfi_store_runs_open(struct pfi_store *st, unsigned which,
                        struct pfi_store_iter **it, struct pfi_error *err);
int pfi_store_runs_next(struct pfi_store_iter *it, struct pfi_store_run *out,
                        struct pfi_error *err);

/* A sample: bit f of `valid` is set when field f was read and stored (an
 * unsupported or failed reading is not valid, never 0); v[f] is NaN where
 * the bit is clear. */
struct pfi_store_sample {
  int64_t run_id;
  unsigned gpu;
  double t_s;
  uint32_t valid;
  double v[PFI_FIELD__COUNT];
};

/* The run's lowest-numbered GPU only (its local rank 0). */
#define PFI_STORE_FIRST_GPU (-1)
/* Every GPU of the run. */
#define PFI_STORE_ALL_GPUS (-2)

/* Samples of run `run_id` ordered by time, then GPU; `gpu` a GPU index or
 * one of the two constants above. */
int pfi_store_samples_open(struct pfi_store *st, int64_t run_id, int gpu,
                           struct pfi_store_iter **it, struct pfi_error *err);
int pfi_store_samples_next(struct pfi_store_iter *it,
                           struct pfi_store_sample *out, struct pfi_error *err);

/* Throughput reports of run `run_id` that carry a rate, by time. */
struct pfi_store_step {
  double t_s;
  double tokens_per_s;
};
int pfi_store_steps_open(struct pfi_store *st, int64_t run_id,
                         struct pfi_store_iter **it, struct pfi_error *err);
int pfi_store_steps_next(struct pfi_store_iter *it, struct pfi_store_step *out,
                         struct pfi_error *err);

/* Node power of run `run_id` by time (none in a store written before the
 * table existed: the iterator is then empty). Strings belong to the
 * iterator. */
int pfi_store_node_power_open(struct pfi_store *st, int64_t run_id,
                              struct pfi_store_iter **it,
                              struct pfi_error *err);
int pfi_store_node_power_next(struct pfi_store_iter *it,
                              struct pfi_node_power *out,
                              struct pfi_error *err);

void pfi_store_iter_close(struct pfi_store_iter *it);

/* ---- the samples blob (schema 2) --------------------------------------
 *
 * A schema-2 store keeps one row of the samples table per run and instant:
 * (run_id, t_s, gpus, gpu_first, data), where `data` holds the samples of
 * `gpus` GPUs in ascending GPU order, each as the GPU index (uint32), its
 * validity mask (uint32, bit f = field f of PFI_FIELD_MAP) and one IEEE-754
 * double per set bit in field order, all little-endian; `gpu_first` is the
 * first entry's GPU. Schema-1 stores (one row per GPU and instant, a column
 * per field) are read and written in their own layout.
 */

/* Bytes of one GPU's entry with validity mask `valid`. */
size_t pfi_store_blob_entry_size(uint32_t valid);
/* Writes the entry of `gpu` (v[f] for each set bit f of `valid`) at `out`
 * (pfi_store_blob_entry_size(valid) bytes); returns the bytes written. */
size_t pfi_store_blob_put(unsigned char *out, unsigned gpu, uint32_t valid,
                          const double *v);
/* Reads the entry at b[*off] of a blob of n bytes into out (gpu, valid, v
 * with NaN where not valid; run_id and t_s untouched) and advances *off.
 * `prev_gpu` is the previous entry's GPU, or -1 for the first. Returns 1,
 * 0 at the end of the blob, or -1 with *why saying what is wrong (a
 * truncated entry, GPUs not ascending, unknown field bits, a value not
 * finite) and *off at the faulty byte. Never reads outside b[0..n). */
int pfi_store_blob_next(const unsigned char *b, size_t n, size_t *off,
                        int64_t prev_gpu, struct pfi_store_sample *out,
                        const char **why);

/* ---- the samples journal (schema 2) -----------------------------------
 *
 * A writer appends the samples, steps and node power of each committed
 * batch that holds nothing else to FILE-samples, one frame a batch in one
 * write, and merges the frames into the database every 256 frames, every
 * second, before any other write and at close (docs/sweep.md: the format,
 * and what a commit guarantees). Readers read the frames not yet merged
 * too.
 */
/* When a writer merges its frames: at max_frames frames, or when the
 * oldest is max_seconds old (wall time), whichever first (defaults 256 and
 * 1 s); max_frames 0: no journal, every batch commits to SQLite (as a
 * second writer of a store does). Merges what the journal holds first. */
int pfi_store_journal_policy(struct pfi_store *st, size_t max_frames,
                             double max_seconds, struct pfi_error *err);

#define PFI_JREC_SAMPLES 1 /* a samples row of one run and instant */
#define PFI_JREC_STEP 2    /* one step */
#define PFI_JREC_NODE 3    /* node power of one run and instant */
struct pfi_store_jrec {
  int kind; /* PFI_JREC_* */
  int64_t run;
  double t_s;
  /* PFI_JREC_SAMPLES: the row's data (the samples blob above), len bytes,
   * gpus entries. */
  const unsigned char *data;
  size_t len;
  long long gpus;
  /* PFI_JREC_STEP: its number within the run, and the step (NaN where not
   * reported). */
  int64_t seq;
  struct pfi_step step;
  /* PFI_JREC_NODE: its source points to node_source. */
  struct pfi_node_power node;
  char node_source[33];
};
struct pfi_store_jscan {
  size_t end;                   /* bytes of the complete, valid frames */
  size_t frames;                /* how many */
  uint64_t first_seq, last_seq; /* their sequence numbers */
  size_t bad_off;               /* on -1: the byte of the damage */
  const char *why;              /* on -1: what is wrong */
};
/* Reads the frames of a journal's n bytes at b, calling fn (may be NULL)
 * for each record of each valid frame, in order; a frame's records are all
 * checked before any is delivered. Where the frames stop (a header that is
 * not a frame's, a frame numbered at or below the last one, one longer
 * than the input or failing its checksum: a write that did not complete,
 * or the older frames after the new ones of a journal reused in place),
 * the valid frames end, not an error, unless a frame header numbered above
 * the last frame read (above 0 where none reads) lies after it. Returns 0
 * (out->end, frames, sequence numbers), -1 when a damaged frame is
 * followed by such a frame (out->bad_off, out->why), or fn's negative
 * return. Never reads outside b[0..n). */
int pfi_store_journal_scan(const unsigned char *b, size_t n,
                           int (*fn)(void *ctx, uint64_t seq,
                                     const struct pfi_store_jrec *rec),
                           void *ctx, struct pfi_store_jscan *out);

/* The largest stored value of field `f` over every sample, or NaN when
 * there is none. */
double pfi_store_field_max(struct pfi_store *st, enum pfi_field f);

#endif
