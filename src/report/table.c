/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Result tables: one structure, three renderings (CSV, JSON, HTML). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/report.h"

#define DEFAULT_DECIMALS 3

int pfi_rtable_init(struct pfi_rtable *t, const char *name, const char *title,
                    size_t ncols, const char *const *cols) {
  memset(t, 0, sizeof *t);
  if (ncols == 0 || !name)
    return PFI_EINVAL;
  t->name = strdup(name);
  t->title = strdup(title ? title : name);
  t->cols = calloc(ncols, sizeof *t->cols);
  t->decimals = calloc(ncols, sizeof *t->decimals);
  if (!t->name || !t->title || !t->cols || !t->decimals)
    goto fail;
  t->ncols = ncols;
  t->hidden_col = -1;
  for (size_t i = 0; i < ncols; i++) {
    t->cols[i] = strdup(cols[i]);
    if (!t->cols[i])
      goto fail;
    t->decimals[i] = DEFAULT_DECIMALS;
  }
  return 0;
fail:
  pfi_rtable_release(t);
  return PFI_ENOMEM;
}

void pfi_rtable_release(struct pfi_rtable *t) {
  if (t->cells)
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
      free(t->cells[i].s);
  free(t->cells);
  if (t->cols)
    for (size_t i = 0; i < t->ncols; i++)
      free(t->cols[i]);
  free(t->cols);
  free(t->decimals);
  free(t->name);
  free(t->title);
  memset(t, 0, sizeof *t);
}

void pfi_rtable_decimals(struct pfi_rtable *t, size_t col, int decimals) {
  if (col < t->ncols && decimals >= 0 && decimals <= 12)
    t->decimals[col] = decimals;
}

long pfi_rtable_add_row(struct pfi_rtable *t) {
  if (t->nrows == t->rows_cap) {
    size_t cap = t->rows_cap ? t->rows_cap * 2 : 16;
    /* The cell array's byte size must not wrap around. */
    if (cap < t->rows_cap ||
        cap > SIZE_MAX / t->ncols / sizeof(struct pfi_cell)) {
      t->failed = 1;
      return PFI_ENOMEM;
    }
    struct pfi_cell *c = realloc(t->cells, cap * t->ncols * sizeof *c);
    if (!c) {
      t->failed = 1;
      return PFI_ENOMEM;
    }
    t->cells = c;
    t->rows_cap = cap;
  }
  memset(t->cells + t->nrows * t->ncols, 0, t->ncols * sizeof *t->cells);
  for (size_t j = 0; j < t->ncols; j++)
    t->cells[t->nrows * t->ncols + j].dec = -1;
  return (long)t->nrows++;
}

static struct pfi_cell *cell(const struct pfi_rtable *t, size_t row,
                             size_t col) {
  if (row >= t->nrows || col >= t->ncols)
    return NULL;
  return &t->cells[row * t->ncols + col];
}

int pfi_rtable_set_num(struct pfi_rtable *t, size_t row, size_t col, double v) {
  struct pfi_cell *c = cell(t, row, col);
  if (!c)
    return PFI_EINVAL;
  free(c->s);
  c->s = NULL;
  c->dec = -1;
  if (isfinite(v)) {
    c->kind = PFI_CELL_NUM;
    c->v = v;
  } else {
    c->kind = PFI_CELL_NULL;
  }
  return 0;
}

int pfi_rtable_set_num_dec(struct pfi_rtable *t, size_t row, size_t col,
                           double v, int decimals) {
  int rc = pfi_rtable_set_num(t, row, col, v);
  if (rc == 0 && decimals >= 0 && decimals <= 12)
    cell(t, row, col)->dec = decimals;
  return rc;
}

/* Decimals a number cell is shown with. */
static int cell_dec(const struct pfi_rtable *t, const struct pfi_cell *c,
                    size_t col) {
  return c->dec >= 0 ? c->dec : t->decimals[col];
}

int pfi_rtable_set_str(struct pfi_rtable *t, size_t row, size_t col,
                       const char *s) {
  struct pfi_cell *c = cell(t, row, col);
  if (!c)
    return PFI_EINVAL;
  char *copy = NULL;
  if (s && !(copy = strdup(s))) {
    t->failed = 1;
    return PFI_ENOMEM;
  }
  free(c->s);
  c->s = copy;
  c->kind = s ? PFI_CELL_STR : PFI_CELL_NULL;
  return 0;
}

long pfi_rtable_col(const struct pfi_rtable *t, const char *name) {
  for (size_t i = 0; i < t->ncols; i++)
    if (strcmp(t->cols[i], name) == 0)
      return (long)i;
  return -1;
}

int pfi_rtable_get_num(const struct pfi_rtable *t, size_t row, size_t col,
                       double *v) {
  const struct pfi_cell *c = cell(t, row, col);
  if (!c || c->kind != PFI_CELL_NUM)
    return 0;
  *v = c->v;
  return 1;
}

/* The value a cell shows: rounded to the column's decimals, with negative
 * zero turned into zero so that "-0.000" never appears. */
static double shown(double v, int decimals) {
  double scale = pow(10.0, decimals);
  double r = round(v * scale) / scale;
  if (!isfinite(r))
    r = v;
  return r == 0.0 ? 0.0 : r;
}

char *pfi_rtable_format(const struct pfi_rtable *t, size_t row, size_t col,
                        char *buf, size_t n) {
  const struct pfi_cell *c = cell(t, row, col);
  if (n == 0)
    return buf;
  buf[0] = '\0';
  if (!c)
    return buf;
  if (c->kind == PFI_CELL_NUM && fabs(c->v) >= 1e9)
    /* A magnitude of a billion or more (an out-of-sample R^2 of a model
     * extrapolating far, say) in fixed notation is a row of digits nobody
     * reads and may not fit a small buffer; four significant digits say
     * what matters. */
    snprintf(buf, n, "%.3e", c->v);
  else if (c->kind == PFI_CELL_NUM)
    snprintf(buf, n, "%.*f", cell_dec(t, c, col),
             shown(c->v, cell_dec(t, c, col)));
  else if (c->kind == PFI_CELL_STR)
    snprintf(buf, n, "%s", c->s);
  return buf;
}

static int csv_field(FILE *fp, const char *s) {
  if (strpbrk(s, ",\"\r\n") == NULL)
    return fputs(s, fp) < 0 ? -1 : 0;
  if (fputc('"', fp) == EOF)
    return -1;
  for (const char *p = s; *p; p++) {
    if (*p == '"' && fputc('"', fp) == EOF)
      return -1;
    if (fputc(*p, fp) == EOF)
      return -1;
  }
  return fputc('"', fp) == EOF ? -1 : 0;
}

static int write_csv(const struct pfi_rtable *t, const char *path,
                     struct pfi_error *err) {
  FILE *fp = fopen(path, "w");
  if (!fp)
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  int bad = 0;
  char buf[1024];
  for (size_t j = 0; j < t->ncols; j++) {
    bad |= j && fputc(',', fp) == EOF;
    bad |= csv_field(fp, t->cols[j]);
  }
  bad |= fputc('\n', fp) == EOF;
  for (size_t i = 0; i < t->nrows; i++) {
    for (size_t j = 0; j < t->ncols; j++) {
      bad |= j && fputc(',', fp) == EOF;
      bad |= csv_field(fp, pfi_rtable_format(t, i, j, buf, sizeof buf));
    }
    bad |= fputc('\n', fp) == EOF;
  }
  bad |= fclose(fp) != 0;
  if (bad)
    return pfi_error_set(err, PFI_EIO, "%s: write failed", path);
  return 0;
}

/* Length of the well-formed UTF-8 sequence at `p` (1..4), or 0. */
static size_t utf8_seq(const unsigned char *p) {
  if (p[0] < 0x80)
    return 1;
  if (p[0] >= 0xc2 && p[0] <= 0xdf)
    return (p[1] & 0xc0) == 0x80 ? 2 : 0;
  if (p[0] >= 0xe0 && p[0] <= 0xef) {
    /* No overlong forms (E0 80..9F) and no surrogates (ED A0..BF). */
    unsigned lo = p[0] == 0xe0 ? 0xa0 : 0x80, hi = p[0] == 0xed ? 0x9f : 0xbf;
    return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
  }
  if (p[0] >= 0xf0 && p[0] <= 0xf4) {
    unsigned lo = p[0] == 0xf0 ? 0x90 : 0x80, hi = p[0] == 0xf4 ? 0x8f : 0xbf;
    return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 &&
                   (p[3] & 0xc0) == 0x80
               ? 4
               : 0;
  }
  return 0;
}

/* A JSON string of `s`: json_string() refuses text that is not UTF-8, so
 * each byte that does not start a well-formed sequence becomes U+FFFD (the
 * replacement character); valid text is unchanged. NULL when out of
 * memory. */
static json_t *json_text(const char *s) {
  json_t *j = json_string(s);
  if (j)
    return j;
  size_t n = strlen(s);
  if (n > (SIZE_MAX - 1) / 3)
    return NULL;
  char *buf = malloc(3 * n + 1), *o = buf;
  if (!buf)
    return NULL;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    size_t k = utf8_seq(p);
    if (k) {
      memcpy(o, p, k);
      o += k;
      p += k;
    } else {
      memcpy(o, "\xef\xbf\xbd", 3);
      o += 3;
      p++;
    }
  }
  *o = '\0';
  j = json_string(buf);
  free(buf);
  return j;
}

static int write_json(const struct pfi_rtable *t, const char *path,
                      struct pfi_error *err) {
  int rc = 0;
  json_t *arr = json_array();
  if (!arr)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t i = 0; i < t->nrows && rc == 0; i++) {
    json_t *o = json_object();
    if (!o || json_array_append_new(arr, o)) {
      rc = PFI_ENOMEM;
      break;
    }
    for (size_t j = 0; j < t->ncols; j++) {
      const struct pfi_cell *c = cell(t, i, j);
      json_t *v;
      if (c->kind == PFI_CELL_NUM)
        v = cell_dec(t, c, j) == 0 ? json_integer((json_int_t)shown(c->v, 0))
                                   : json_real(shown(c->v, cell_dec(t, c, j)));
      else if (c->kind == PFI_CELL_STR)
        v = json_text(c->s);
      else
        v = json_null();
      if (!v) {
        rc = PFI_ENOMEM;
        break;
      }
      if (json_object_set_new(o, t->cols[j], v)) {
        rc = PFI_ENOMEM;
        break;
      }
    }
  }
  if (rc) {
    json_decref(arr);
    return pfi_error_set(err, rc, "out of memory");
  }
  /* Fifteen significant digits print the rounded values exactly as the
   * CSV shows them (e.g. 1.23, not 1.2299999999999999822). */
  if (json_dump_file(arr, path,
                     JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                         JSON_REAL_PRECISION(15)) != 0)
    rc = pfi_error_set(err, PFI_EIO, "%s: write failed", path);
  else {
    /* json_dump_file leaves the file without a final newline. */
    FILE *fp = fopen(path, "a");
    if (!fp || fputc('\n', fp) == EOF || fclose(fp) != 0)
      rc = pfi_error_set(err, PFI_EIO, "%s: write failed", path);
  }
  json_decref(arr);
  return rc;
}

int pfi_rtable_write(const struct pfi_rtable *t, const char *dir,
                     struct pfi_error *err) {
  if (t->failed)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  char path[4096];
  int w = snprintf(path, sizeof path, "%s/%s.csv", dir, t->name);
  if (w < 0 || (size_t)w >= sizeof path)
    return pfi_error_set(err, PFI_EINVAL, "output path too long: %s", dir);
  int rc = write_csv(t, path, err);
  if (rc)
    return rc;
  snprintf(path, sizeof path, "%s/%s.json", dir, t->name);
  return write_json(t, path, err);
}

static const char *col_class(const char *name) {
  size_t n = strlen(name);
  static const char pub[] = "_published";
  if (n >= sizeof pub - 1 && strcmp(name + n - (sizeof pub - 1), pub) == 0)
    return "pub";
  if (strncmp(name, "diff", 4) == 0)
    return "diff";
  return NULL;
}

int pfi_rtable_html(const struct pfi_rtable *t, struct pfi_html *b) {
  char buf[1024];
  /* The caption is a paragraph above the table rather than a <caption>:
   * a long caption must wrap at the page's width, not widen a narrow
   * table. */
  pfi_html_puts(b, "<p class=\"tabcap\">");
  pfi_html_text(b, t->title);
  /* Relative links to the files beside the page (no network). */
  pfi_html_puts(b, " <span class=\"file\">(<a href=\"");
  pfi_html_text(b, t->name);
  pfi_html_puts(b, ".csv\">");
  pfi_html_text(b, t->name);
  pfi_html_puts(b, ".csv</a>, <a href=\"");
  pfi_html_text(b, t->name);
  pfi_html_puts(b, ".json\">");
  pfi_html_text(b, t->name);
  pfi_html_puts(b, ".json</a>)</span></p>\n<table class=\"res\" id=\"tab-");
  pfi_html_text(b, t->name);
  pfi_html_puts(b, "\">\n<thead><tr>");
  for (size_t j = 0; j < t->ncols; j++) {
    if ((long)j == t->hidden_col)
      continue;
    const char *cls = col_class(t->cols[j]);
    pfi_html_printf(b, cls ? "<th class=\"%s\">" : "<th>", cls);
    pfi_html_text(b, t->cols[j]);
    pfi_html_puts(b, "</th>");
  }
  pfi_html_puts(b, "</tr></thead>\n<tbody>\n");
  for (size_t i = 0; i < t->nrows; i++) {
    pfi_html_puts(b, "<tr>");
    for (size_t j = 0; j < t->ncols; j++) {
      if ((long)j == t->hidden_col)
        continue;
      const struct pfi_cell *c = cell(t, i, j);
      const char *cls = col_class(t->cols[j]);
      const char *num = c->kind == PFI_CELL_NUM ? "num" : NULL;
      if (cls && num)
        pfi_html_printf(b, "<td class=\"%s %s\">", cls, num);
      else if (cls || num)
        pfi_html_printf(b, "<td class=\"%s\">", cls ? cls : num);
      else
        pfi_html_puts(b, "<td>");
      if (c->kind == PFI_CELL_NULL)
        pfi_html_puts(b, "&ndash;");
      else
        pfi_html_text(b, pfi_rtable_format(t, i, j, buf, sizeof buf));
      pfi_html_puts(b, "</td>");
    }
    pfi_html_puts(b, "</tr>\n");
  }
  pfi_html_puts(b, "</tbody></table>\n");
  return pfi_html_ok(b) ? 0 : PFI_ENOMEM;
}
