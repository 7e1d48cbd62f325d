/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Error codes and the caller-supplied error struct.
 *
 * Every library function that can fail returns a negative code from the list
 * below (0 or a positive count on success) and, when `err` is not NULL, fills
 * it with a human-readable message and, for parsers, the file, line and
 * column of the fault. The library never prints and never exits.
 */
#ifndef PFI_ERROR_H
#define PFI_ERROR_H

#include <stddef.h>

/* X(name, value, description). Append only: values are part of the ABI. */
#define PFI_ERRNO_MAP(X)                                                       \
  X(NOMEM, -1, "out of memory")                                                \
  X(IO, -2, "input/output error")                                              \
  X(PARSE, -3, "malformed input")                                              \
  X(RANGE, -4, "value out of range")                                           \
  X(NOTSUP, -5, "operation not supported")                                     \
  X(NOPERM, -6, "permission denied")                                           \
  X(GPULOST, -7, "GPU is lost")                                                \
  X(UNINIT, -8, "backend not initialized")                                     \
  X(NOTFOUND, -9, "not found")                                                 \
  X(STATE, -10, "inconsistent state")                                          \
  X(INFEASIBLE, -11, "infeasible")                                             \
  X(NUMERIC, -12, "numerical failure")                                         \
  X(DB, -13, "trace store error")                                              \
  X(CHILD, -14, "child process failed")                                        \
  X(INTR, -15, "interrupted")                                                  \
  X(MISMATCH, -16, "value read back differs from value set")                   \
  X(INVAL, -17, "invalid argument")                                            \
  X(BUSY, -18, "resource busy")

enum pfi_errno {
  PFI_OK = 0,
#define PFI__ERR_ENUM(name, val, desc) PFI_E##name = (val),
  PFI_ERRNO_MAP(PFI__ERR_ENUM)
#undef PFI__ERR_ENUM
};

/* Size of the message buffer, including the terminating NUL. */
#define PFI_ERROR_MSG_MAX 512
#define PFI_ERROR_FILE_MAX 256

/*
 * Filled by a failing function. `line` and `column` are 1-based and 0 when
 * they do not apply; `file` is empty when no file is involved. The caller
 * owns the struct (usually on its stack); no heap memory is attached.
 */
struct pfi_error {
  int code;
  char file[PFI_ERROR_FILE_MAX];
  long line;
  long column;
  char msg[PFI_ERROR_MSG_MAX];
};

/* Resets `err` to "no error". Safe with NULL. */
void pfi_error_clear(struct pfi_error *err);

/* Sets code and a printf-style message; clears location. Returns `code`. */
int pfi_error_set(struct pfi_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets code, location and message. `file` may be NULL. Returns `code`. */
int pfi_error_setloc(struct pfi_error *err, int code, const char *file,
                     long line, long column, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/*
 * Writes "file:line:column: message" (location parts omitted when absent)
 * into buf (always NUL-terminated when n > 0). Returns buf.
 */
char *pfi_error_format(const struct pfi_error *err, char *buf, size_t n);

/* Static description of a code ("malformed input"); "unknown error" else. */
const char *pfi_strerror(int code);

/* Static symbolic name of a code ("PFI_EPARSE"); "PFI_E?" else. */
const char *pfi_err_name(int code);

#endif
