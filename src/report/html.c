/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The report's text buffer and HTML escaping. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/report.h"

void pfi_html_init(struct pfi_html *b) { memset(b, 0, sizeof *b); }

void pfi_html_release(struct pfi_html *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

char *pfi_html_detach(struct pfi_html *b) {
  char *s = b->s;
  int failed = b->failed;
  memset(b, 0, sizeof *b);
  if (failed) {
    free(s);
    return NULL;
  }
  return s ? s : strdup("");
}

int pfi_html_ok(const struct pfi_html *b) { return !b->failed; }

/* Makes room for `extra` more bytes plus the NUL. */
static int reserve(struct pfi_html *b, size_t extra) {
  if (b->failed)
    return PFI_ENOMEM;
  if (extra > (size_t)-1 / 2 - b->len) {
    b->failed = 1;
    return PFI_ENOMEM;
  }
  size_t need = b->len + extra + 1;
  if (need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need)
    cap *= 2;
  char *s = realloc(b->s, cap);
  if (!s) {
    b->failed = 1;
    return PFI_ENOMEM;
  }
  b->s = s;
  b->cap = cap;
  return 0;
}

int pfi_html_raw(struct pfi_html *b, const char *s, size_t n) {
  if (reserve(b, n))
    return PFI_ENOMEM;
  if (n)
    memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
  return 0;
}

int pfi_html_puts(struct pfi_html *b, const char *s) {
  return s ? pfi_html_raw(b, s, strlen(s)) : 0;
}

static int vappend(struct pfi_html *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    b->failed = 1;
    return PFI_ENOMEM;
  }
  if (reserve(b, (size_t)n))
    return PFI_ENOMEM;
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int pfi_html_printf(struct pfi_html *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vappend(b, fmt, ap);
  va_end(ap);
  return rc;
}

int pfi_html_text(struct pfi_html *b, const char *text) {
  if (!text)
    return 0;
  for (const char *p = text; *p; p++) {
    const char *ent = NULL;
    unsigned char c = (unsigned char)*p;
    switch (c) {
    case '&':
      ent = "&amp;";
      break;
    case '<':
      ent = "&lt;";
      break;
    case '>':
      ent = "&gt;";
      break;
    case '"':
      ent = "&quot;";
      break;
    case '\'':
      ent = "&#39;";
      break;
    default:
      /* Control bytes have no business in a page's text; dropping them
       * keeps the document well formed whatever a job is called. */
      if (c < 0x20 && c != '\t' && c != '\n')
        continue;
      if (c == 0x7f)
        continue;
    }
    int rc = ent ? pfi_html_puts(b, ent) : pfi_html_raw(b, p, 1);
    if (rc)
      return rc;
  }
  return 0;
}

int pfi_html_textf(struct pfi_html *b, const char *fmt, ...) {
  struct pfi_html tmp;
  pfi_html_init(&tmp);
  va_list ap;
  va_start(ap, fmt);
  int rc = vappend(&tmp, fmt, ap);
  va_end(ap);
  if (rc == 0)
    rc = pfi_html_text(b, tmp.s ? tmp.s : "");
  else
    b->failed = 1;
  pfi_html_release(&tmp);
  return rc;
}
