/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * A small, fast CSV reader (RFC 4180 plus what real files carry): a header
 * row, quoted fields with "" escapes and embedded commas or newlines, CRLF or
 * LF line ends, a UTF-8 byte-order mark, blank lines (skipped), and spaces
 * around unquoted fields (trimmed).
 *
 * Two interfaces over one parser:
 *  - streaming: pfi_csv_open() then pfi_csv_next() record by record (large
 *    files: the whole file is held in one buffer, fields point into it);
 *  - table: pfi_table_load() keeps every cell, for small files (features).
 * Every error carries file, line and column (1-based, in bytes).
 */
#ifndef PFI_CSV_H
#define PFI_CSV_H

#include <stddef.h>

#include "pfi/error.h"

struct pfi_csv {
  char *name;   /* file name for messages ("<stdin>" for "-"); owned */
  char *buf;    /* whole input, NUL-terminated; owned */
  size_t len;   /* bytes in buf */
  size_t pos;   /* parse position */
  long line;    /* line number at pos */
  long linepos; /* offset of the start of that line */
  /* The current record: nf fields, f[i] NUL-terminated, at line fline[i]
   * and column fcol[i] of the input. Valid until the next pfi_csv_next(). */
  size_t nf, fcap;
  char **f;
  long *fline, *fcol;
  size_t *flen;  /* strlen(f[i]), known without a scan */
  long rec_line; /* line where the current record starts */
  /* Header (copied at open). */
  size_t nheader;
  char **header;
  /* Bytes mapped at buf when the file is mapped rather than read (a large
   * regular file); 0 when buf is allocated. */
  size_t map_len;
};

/*
 * Opens `path` ("-" reads standard input) and reads its header row. A
 * regular file of 1 MiB or more is mapped (private: the reader's writes
 * stay in this process) instead of read into a buffer of its own, which
 * spares copying and zeroing it; the bytes, the checks and the errors are
 * those of pfi_read_file().
 * Returns 0, or PFI_ENOTFOUND (cannot open), PFI_EIO (cannot read),
 * PFI_EPARSE (no header, bad quote, a NUL byte anywhere in the input: a
 * binary file), PFI_ENOMEM. On failure nothing needs releasing.
 */
int pfi_csv_open(struct pfi_csv *csv, const char *path, struct pfi_error *err);

/* Same as pfi_csv_open() on `len` bytes of memory (copied); `name` is used in
 * messages. */
int pfi_csv_open_mem(struct pfi_csv *csv, const char *name, const char *data,
                     size_t len, struct pfi_error *err);

/* Reads the next record. Returns 1 (a record), 0 (end of input) or a
 * negative error (PFI_EPARSE for an unterminated quote, PFI_ENOMEM). */
int pfi_csv_next(struct pfi_csv *csv, struct pfi_error *err);

/* Index of the header column named `name` (exact match after trimming), or
 * -1 when absent. */
int pfi_csv_find(const struct pfi_csv *csv, const char *name);

/*
 * Parses field `idx` of the current record as a finite double. `what` names
 * the field in messages. Errors (PFI_EPARSE, located at the field): field
 * missing from a short record, empty, not a number, NaN or infinite.
 */
int pfi_csv_double(const struct pfi_csv *csv, int idx, const char *what,
                   double *out, struct pfi_error *err);

/*
 * Writes the header names `header[0..n)` into buf as "a, b, c" for a
 * message that says which columns a file has (NUL-terminated; names that
 * do not fit become ", ... (N more)"; an empty header is "(none)").
 * Returns buf.
 */
char *pfi_csv_columns(const char *const *header, size_t n, char *buf,
                      size_t cap);

/* Field `idx` of the current record, or NULL when the record is short. */
const char *pfi_csv_field(const struct pfi_csv *csv, int idx);

/* 0, or PFI_EIO when the mapped file lost pages while it was read (another
 * process truncated it: the bytes past its new end read as NUL). A reader
 * that parses csv->buf itself calls it after its parse and reports this
 * error in place of any it met; pfi_csv_next() calls it first. */
int pfi_csv_lost(const struct pfi_csv *csv, struct pfi_error *err);

/* Releases everything pfi_csv_open() allocated. Safe on a zeroed struct. */
void pfi_csv_close(struct pfi_csv *csv);

/*
 * Parses a whole string as a finite double (leading/trailing spaces allowed).
 * Returns 0 or PFI_EPARSE (empty, trailing garbage, NaN, infinity).
 */
int pfi_parse_double(const char *s, double *out);

/* A whole CSV file in memory: every cell a NUL-terminated copy. */
struct pfi_table {
  char *name;    /* owned */
  size_t ncols;  /* header width */
  size_t nrows;  /* data rows */
  char **header; /* ncols names; owned */
  char **cells;  /* nrows * ncols; NULL where a record was short; owned */
  long *line;    /* nrows: input line of each row */
  long *col;     /* nrows * ncols: input column of each cell (0 if absent) */
};

/* Loads `path` ("-" = standard input). Records longer than the header are an
 * error (PFI_EPARSE at the extra field), and so is a table of short records
 * under a wide header that would need far more memory than the input
 * (more than (4 len + 2^20) / ncols rows; no file of full records has that
 * many). Release with pfi_table_release(). */
int pfi_table_load(struct pfi_table *t, const char *path,
                   struct pfi_error *err);

/* Same from memory. */
int pfi_table_load_mem(struct pfi_table *t, const char *name, const char *data,
                       size_t len, struct pfi_error *err);

/* Column index of `name`, or -1. */
int pfi_table_find(const struct pfi_table *t, const char *name);

/* A column the caller needs is not in t's header: sets PFI_EPARSE located
 * at t's line 1 with the printf-style message followed by "; the header has
 * " and the columns it has (pfi_csv_columns()). Returns PFI_EPARSE. */
int pfi_table_missing(const struct pfi_table *t, struct pfi_error *err,
                      const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Cell (row, col) or NULL when absent. */
const char *pfi_table_cell(const struct pfi_table *t, size_t row, size_t col);

/* Cell as a finite double; errors as pfi_csv_double(), located at the cell. */
int pfi_table_double(const struct pfi_table *t, size_t row, size_t col,
                     double *out, struct pfi_error *err);

void pfi_table_release(struct pfi_table *t);

/* Longest line pfi_read_file() accepts, bytes (without its line end). */
#define PFI_LINE_MAX (1 << 20)

/* Reads a whole file ("-" = standard input) into a NUL-terminated heap
 * buffer the caller frees with free(). A NUL byte or a line longer than
 * PFI_LINE_MAX is refused as soon as it is read (PFI_EPARSE located at its
 * line and column), so an endless input such as /dev/zero costs bounded
 * memory. Returns 0, PFI_ENOTFOUND (cannot open), PFI_EIO (read error),
 * PFI_EPARSE or PFI_ENOMEM. */
int pfi_read_file(const char *path, char **out, size_t *len,
                  struct pfi_error *err);

#endif
