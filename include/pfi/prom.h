/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Prometheus text exposition (as served by dcgm-exporter) to telemetry
 * samples.
 *
 * The parser reads the text format line by line: `# HELP` / `# TYPE` and
 * other comments are skipped; a sample line is
 *   metric_name{label="value",...} value [timestamp_ms]
 * Metrics that are not DCGM fields pfi knows are skipped. A malformed line
 * does not stop the parse: it is counted, and its line number and reason
 * are kept (the first PFI_PROM_BAD_MAX of them). Field names of old and new
 * DCGM releases map to the same field (DCGM_FI_DEV_POWER_USAGE and
 * DCGM_FI_DEV_BOARD_POWER_WATTS are both power), and the host label may be
 * spelled `Hostname` or `hostname`. Units are converted to those of
 * include/pfi/device.h (energy mJ -> J, power-violation us -> s).
 */
#ifndef PFI_PROM_H
#define PFI_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/device.h"
#include "pfi/error.h"

/* The telemetry field a DCGM metric name maps to, or -1 for a metric pfi
 * does not use. *scale (may be NULL) receives the factor that converts the
 * exporter's unit to the field's unit. */
int pfi_prom_field(const char *metric, size_t len, double *scale);

/* One GPU of one scrape: its identity and the fields found for it. */
struct pfi_prom_gpu {
  char host[128];      /* Hostname/hostname label; empty when absent */
  int gpu;             /* gpu label (index) */
  char uuid[96];       /* UUID label; empty when absent */
  char model[96];      /* modelName label; empty when absent */
  struct pfi_sample s; /* fields with their validity bits; t_s from the
                          line timestamps when present, else 0 */
  long order;          /* 0-based rank of the GPU's first sample line in
                          the text (the order of appearance) */
};

#define PFI_PROM_BAD_MAX 16

struct pfi_prom_stats {
  long lines;     /* lines read */
  long samples;   /* sample lines parsed */
  long mapped;    /* of which a known DCGM field */
  long unknown;   /* of which skipped as unknown metrics */
  long nogpu;     /* known metrics without a usable gpu label, skipped */
  long malformed; /* malformed lines */
  int nbad;       /* entries used in bad[] */
  struct {
    long line, column;
    char msg[120];
  } bad[PFI_PROM_BAD_MAX]; /* the first malformed lines; past nbad unset */
};

/*
 * Parses `len` bytes of exposition text (need not be NUL-terminated). `name`
 * names the input in messages. On success returns the number of GPUs found
 * and sets *gpus to a malloc'd array of them (caller frees with free();
 * NULL when 0), sorted by (host, gpu); each GPU's `order` says where it
 * first appeared. Malformed lines are counted in
 * *stats (which may be NULL) and are not errors. Returns PFI_ENOMEM, or
 * PFI_EPARSE only for input that is not text at all (a NUL byte), located
 * at its line and column.
 */
int pfi_prom_parse(const char *name, const char *text, size_t len,
                   struct pfi_prom_gpu **gpus, struct pfi_prom_stats *stats,
                   struct pfi_error *err);

/* Fills `err` with the i-th malformed line of `stats` as a located
 * PFI_EPARSE (for printing "file:line:col: reason"). Returns the code. */
int pfi_prom_bad_error(const struct pfi_prom_stats *stats, int i,
                       const char *name, struct pfi_error *err);

/*
 * Scrapes `url` once with libcurl (timeout `timeout_s`) and parses the
 * body as above. Returns the GPU count, PFI_EIO when the request fails
 * (curl's message in err), or the parser's errors.
 */
int pfi_prom_scrape(const char *url, double timeout_s,
                    struct pfi_prom_gpu **gpus, struct pfi_prom_stats *stats,
                    struct pfi_error *err);

#endif
