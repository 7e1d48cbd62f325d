/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Power-target timelines: what the grid (or a site operator) asks the
 * cluster to stay under, and when.
 *
 * A timeline is a list of spans [start_s, end_s) in Unix seconds, each with a
 * power limit in watts at one accounting level (GPU board power, node power,
 * or power at the facility meter). Spans come from several sources: OpenADR
 * 3 events (include/pfi/openadr.h), a plain schedule file, and the
 * controller's API. Overlaps are resolved by one rule, documented in
 * docs/grid.md and implemented by pfi_timeline_resolve():
 *
 *   1. Within one source, the span of the event with the higher priority
 *      wins (lower `priority` number, as OpenADR 3 defines it); at equal
 *      priority the later-scheduled event wins (larger `scheduled_s`, its
 *      creation or last modification time); at equal time the larger event
 *      id, and for one id twice (overlapping intervals of one event, or
 *      an id a VTN sent twice) the lower limit, so that the result never
 *      depends on input order.
 *   2. Across sources, the lowest limit wins at every instant (the most
 *      restrictive request is the one the site must honour).
 *
 * Also the time helpers the OpenADR decoder needs: RFC 3339 date-times and
 * ISO 8601 durations.
 */
#ifndef PFI_TIMELINE_H
#define PFI_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "pfi/error.h"

/* Where a limit applies. Converted between levels by include/pfi/meter.h. */
enum pfi_power_level {
  PFI_LEVEL_GPU = 0,   /* sum of GPU board power */
  PFI_LEVEL_NODE = 1,  /* DC power of the nodes (GPU + CPU + DRAM + rest) */
  PFI_LEVEL_METER = 2, /* power at the facility meter (PSU losses, PUE) */
};

enum pfi_target_source {
  PFI_SRC_OPENADR = 0,
  PFI_SRC_SCHEDULE = 1,
  PFI_SRC_API = 2,
};

/* Unix seconds standing for "no end" (OpenADR's P9999Y), year 9999. */
#define PFI_TIME_FOREVER INT64_C(253402300799)

#define PFI_TIMELINE_ID_MAX 128

struct pfi_target_span {
  int64_t start_s;     /* inclusive, Unix seconds (UTC) */
  int64_t end_s;       /* exclusive; PFI_TIME_FOREVER for no end */
  double limit_w;      /* power limit at `level`, W, finite and >= 0 */
  int level;           /* enum pfi_power_level */
  int source;          /* enum pfi_target_source */
  int priority;        /* lower number = higher priority (OpenADR 3 sec. 7.1) */
  int64_t scheduled_s; /* when the event was created/modified */
  char event[PFI_TIMELINE_ID_MAX]; /* event id (or schedule file:line) */
  char kind[32];     /* payload type that set it, e.g. IMPORT_CAPACITY_LIMIT */
  int64_t created_s; /* when the event was created (OpenADR createdDateTime:
                        the time it became known, the start of its notice);
                        0 unknown */
};

/* A growable array of spans. Caller-owned: zero it or call _init, then
 * _release. */
struct pfi_timeline {
  struct pfi_target_span *spans;
  size_t n, cap;
};

void pfi_timeline_init(struct pfi_timeline *tl);
void pfi_timeline_release(struct pfi_timeline *tl);
/* Appends a copy of *s. PFI_EINVAL for an empty or reversed span or a limit
 * that is not finite and >= 0; PFI_ENOMEM. */
int pfi_timeline_add(struct pfi_timeline *tl, const struct pfi_target_span *s,
                     struct pfi_error *err);

/*
 * Resolves overlaps by the rule at the top of this file into `out`
 * (initialized by the caller, emptied first): non-overlapping spans sorted
 * by start, adjacent pieces of the same winning span merged. All spans must
 * be at one `level` (PFI_EINVAL naming the two levels otherwise: convert
 * first). Returns the number of spans written or a negative code.
 */
int pfi_timeline_resolve(const struct pfi_timeline *in,
                         struct pfi_timeline *out, struct pfi_error *err);

/* The span of a resolved timeline in force at time t, or NULL. */
const struct pfi_target_span *pfi_timeline_at(const struct pfi_timeline *tl,
                                              int64_t t);

/*
 * Reads a schedule file: CSV with a header naming `start`, `end` and
 * `limit`, optional `level` (gpu|node|meter, default gpu) and `priority`.
 * start and end are RFC 3339 date-times or Unix seconds; limit is watts with
 * an optional unit suffix W, kW or MW ("750kW"), or a percentage of
 * `baseline_w` ("75%"; an error when baseline_w <= 0). Bad input: PFI_EPARSE
 * with file, line and column. Spans get source PFI_SRC_SCHEDULE and the
 * event name "FILE:LINE".
 */
int pfi_schedule_load(const char *path, double baseline_w,
                      struct pfi_timeline *out, struct pfi_error *err);
/* The same from memory; `name` is used in messages. */
int pfi_schedule_load_mem(const char *name, const char *data, size_t len,
                          double baseline_w, struct pfi_timeline *out,
                          struct pfi_error *err);

/*
 * Parses an RFC 3339 date-time ("2025-05-04T16:10:00-07:00",
 * "2025-05-04T23:10:00.5Z") or a bare date ("2025-05-04", midnight UTC) into
 * Unix seconds (fractions truncated toward minus infinity). A date-time
 * without an offset is read as UTC. Returns 0, or PFI_EPARSE / PFI_ERANGE
 * (years outside 0001-9999, fields out of range) with the column in
 * err->column (1-based).
 */
int pfi_time_parse_rfc3339(const char *s, int64_t *out, struct pfi_error *err);

/* Writes t as "YYYY-MM-DDTHH:MM:SSZ" into buf (at least 21 bytes). */
char *pfi_time_format_rfc3339(int64_t t, char *buf, size_t n);

/*
 * Parses an ISO 8601 duration as OpenADR 3 restricts it
 * ("-?P(nY)?(nM)?(nD|nW)?(T(nH)?(nM)?(n(.n)?S)?)?"): a year is 365 days and
 * a month 30 days (OpenADR advises against months). "P9999Y" sets
 * *forever = 1 (and *out to 9999 years of seconds). Returns 0 or
 * PFI_EPARSE/PFI_ERANGE with err->column.
 */
int pfi_duration_parse_iso8601(const char *s, double *out_s, int *forever,
                               struct pfi_error *err);

#endif
