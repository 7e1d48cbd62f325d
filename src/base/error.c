/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "pfi/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void pfi_error_clear(struct pfi_error *err) {
  if (!err)
    return;
  err->code = 0;
  err->file[0] = '\0';
  err->line = 0;
  err->column = 0;
  err->msg[0] = '\0';
}

static void set_file(struct pfi_error *err, const char *file) {
  if (file) {
    snprintf(err->file, sizeof err->file, "%s", file);
  } else {
    err->file[0] = '\0';
  }
}

int pfi_error_set(struct pfi_error *err, int code, const char *fmt, ...) {
  if (!err)
    return code;
  va_list ap;
  err->code = code;
  set_file(err, NULL);
  err->line = 0;
  err->column = 0;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return code;
}

int pfi_error_setloc(struct pfi_error *err, int code, const char *file,
                     long line, long column, const char *fmt, ...) {
  if (!err)
    return code;
  va_list ap;
  err->code = code;
  set_file(err, file);
  err->line = line;
  err->column = column;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return code;
}

char *pfi_error_format(const struct pfi_error *err, char *buf, size_t n) {
  if (n == 0)
    return buf;
  if (!err) {
    snprintf(buf, n, "unknown error");
    return buf;
  }
  const char *msg = err->msg[0] ? err->msg : pfi_strerror(err->code);
  if (err->file[0] && err->line > 0 && err->column > 0)
    snprintf(buf, n, "%s:%ld:%ld: %s", err->file, err->line, err->column, msg);
  else if (err->file[0] && err->line > 0)
    snprintf(buf, n, "%s:%ld: %s", err->file, err->line, msg);
  else if (err->file[0])
    snprintf(buf, n, "%s: %s", err->file, msg);
  else
    snprintf(buf, n, "%s", msg);
  return buf;
}

const char *pfi_strerror(int code) {
  switch (code) {
  case PFI_OK:
    return "success";
#define PFI__ERR_STR(name, val, desc)                                          \
  case PFI_E##name:                                                            \
    return desc;
    PFI_ERRNO_MAP(PFI__ERR_STR)
#undef PFI__ERR_STR
  default:
    return "unknown error";
  }
}

const char *pfi_err_name(int code) {
  switch (code) {
  case PFI_OK:
    return "PFI_OK";
#define PFI__ERR_NAME(name, val, desc)                                         \
  case PFI_E##name:                                                            \
    return "PFI_E" #name;
    PFI_ERRNO_MAP(PFI__ERR_NAME)
#undef PFI__ERR_NAME
  default:
    return "PFI_E?";
  }
}
