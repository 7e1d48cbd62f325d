/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Result tables (pfi/restab.h): one structure, four printers. */
#include "pfi/restab.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../base/huge.h"
#include "pfi/error.h"
#include "pfi/fmt.h"

int pfi_restab_init(struct pfi_restab *t, const struct pfi_restab_col *cols,
                    size_t ncols) {
  memset(t, 0, sizeof *t);
  if (!cols || ncols == 0)
    return PFI_EINVAL;
  t->cols = cols;
  t->ncols = ncols;
  t->term_null = "-";
  t->csv_null = "-";
  t->header = 1;
  t->json_prec = 12;
  return 0;
}

void pfi_restab_release(struct pfi_restab *t) {
  if (t->cells)
    for (size_t i = 0; i < t->nrows; i++)
      for (size_t j = 0; j < t->ncols; j++) {
        struct pfi_restab_cell *c = &t->cells[i * t->ncols + j];
        if (t->cols[j].kind == PFI_RESTAB_TEXT && c->set == 1)
          free(c->u.s);
      }
  free(t->cells);
  free(t->csv_text);
  free(t->title);
  for (size_t i = 0; i < t->nnotes; i++)
    free(t->notes[i]);
  free(t->notes);
  memset(t, 0, sizeof *t);
}

static void stream_row(struct pfi_restab *t);

void pfi_restab_csv_stream(struct pfi_restab *t, size_t rows) {
  if (t->nrows == 0) {
    t->csv_stream = 1;
    t->csv_rows = rows;
  }
}

int pfi_restab_row(struct pfi_restab *t) {
  if (t->csv_stream && t->nrows == 1) {
    /* The last row into text; its cells serve the next row. */
    stream_row(t);
    for (size_t j = 0; j < t->ncols; j++) {
      struct pfi_restab_cell *c = &t->cells[j];
      if (t->cols[j].kind == PFI_RESTAB_TEXT && c->set == 1)
        free(c->u.s);
    }
    memset(t->cells, 0, t->ncols * sizeof *t->cells);
    return t->failed ? PFI_ENOMEM : 0;
  }
  if (t->nrows == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    if (cap < t->cap || cap > SIZE_MAX / t->ncols / sizeof *t->cells) {
      t->failed = 1;
      return PFI_ENOMEM;
    }
    struct pfi_restab_cell *c = realloc(t->cells, cap * t->ncols * sizeof *c);
    if (!c) {
      t->failed = 1;
      return PFI_ENOMEM;
    }
    t->cells = c;
    t->cap = cap;
  }
  memset(t->cells + t->nrows * t->ncols, 0, t->ncols * sizeof *t->cells);
  t->nrows++;
  return 0;
}

/* The cell `col` of the last row when it is of `kind`, else NULL. */
static struct pfi_restab_cell *last(struct pfi_restab *t, size_t col,
                                    enum pfi_restab_kind kind) {
  if (t->nrows == 0 || col >= t->ncols || t->cols[col].kind != kind)
    return NULL;
  return &t->cells[(t->nrows - 1) * t->ncols + col];
}

/* The last row's text cell `col`, emptied (its owned copy freed), or NULL
 * when there is none. */
static struct pfi_restab_cell *text_cell(struct pfi_restab *t, size_t col) {
  struct pfi_restab_cell *c = last(t, col, PFI_RESTAB_TEXT);
  if (c && c->set == 1)
    free(c->u.s);
  if (c)
    c->set = 0;
  return c;
}

void pfi_restab_text(struct pfi_restab *t, size_t col, const char *s) {
  struct pfi_restab_cell *c = text_cell(t, col);
  if (!c || !s)
    return;
  if (!(c->u.s = strdup(s))) {
    t->failed = 1;
    return;
  }
  c->set = 1;
}

void pfi_restab_blank(struct pfi_restab *t, size_t col) {
  if (t->nrows == 0 || col >= t->ncols)
    return;
  struct pfi_restab_cell *c = &t->cells[(t->nrows - 1) * t->ncols + col];
  if (t->cols[col].kind == PFI_RESTAB_TEXT && c->set == 1)
    free(c->u.s);
  c->set = 2;
}

void pfi_restab_text_ref(struct pfi_restab *t, size_t col, const char *s) {
  struct pfi_restab_cell *c = text_cell(t, col);
  if (!c || !s)
    return;
  c->u.s = (char *)s; /* borrowed: never freed here */
  c->set = 3;
}

void pfi_restab_textf(struct pfi_restab *t, size_t col, const char *fmt, ...) {
  char buf[256], *p = buf;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->failed = 1;
    return;
  }
  if ((size_t)n >= sizeof buf) {
    if (!(p = malloc((size_t)n + 1))) {
      t->failed = 1;
      return;
    }
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  pfi_restab_text(t, col, p);
  if (p != buf)
    free(p);
}

void pfi_restab_num(struct pfi_restab *t, size_t col, double v) {
  struct pfi_restab_cell *c = last(t, col, PFI_RESTAB_NUM);
  if (!c)
    return;
  c->u.num = v;
  c->set = isfinite(v) != 0;
}

void pfi_restab_int(struct pfi_restab *t, size_t col, long long v) {
  struct pfi_restab_cell *c = last(t, col, PFI_RESTAB_INT);
  if (!c)
    return;
  c->u.i = v;
  c->set = 1;
}

int pfi_restab_title(struct pfi_restab *t, const char *title) {
  free(t->title);
  t->title = NULL;
  if (title && !(t->title = strdup(title))) {
    t->failed = 1;
    return PFI_ENOMEM;
  }
  return 0;
}

int pfi_restab_note(struct pfi_restab *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char **nn = n < 0 ? NULL : realloc(t->notes, (t->nnotes + 1) * sizeof *nn);
  if (!nn) {
    t->failed = 1;
    return PFI_ENOMEM;
  }
  t->notes = nn;
  if (!(nn[t->nnotes] = malloc((size_t)n + 1))) {
    t->failed = 1;
    return PFI_ENOMEM;
  }
  va_start(ap, fmt);
  vsnprintf(nn[t->nnotes], (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->nnotes++;
  return 0;
}

int pfi_restab_qty_digits(enum pfi_restab_qty q) {
  switch (q) {
  case PFI_RESTAB_Q_THROUGHPUT:
    return 4;
  case PFI_RESTAB_Q_POWER:
  case PFI_RESTAB_Q_ENERGY:
  case PFI_RESTAB_Q_SHARE:
  case PFI_RESTAB_Q_SECONDS:
  case PFI_RESTAB_Q_RATIO:
  case PFI_RESTAB_Q_CLOCK:
    return 3;
  case PFI_RESTAB_Q_TEMP:
    return 2;
  default:
    return 0;
  }
}

size_t pfi_restab_fmt_sig(char *buf, double v, int digits) {
  buf[0] = '\0';
  if (!isfinite(v))
    return 0;
  if (digits < 1)
    digits = 1;
  if (fabs(v) >= 1e15)
    return pfi_fmt_g(buf, v, digits);
  /* Decimals for `digits` significant digits: digits - 1 - the power of
   * ten of the leading digit, none below 0 (integer digits are all kept)
   * and at most 9. */
  int e = v == 0 ? 0 : (int)floor(log10(fabs(v)));
  int dec = digits - 1 - e;
  if (dec < 0)
    dec = 0;
  if (dec > 9)
    dec = 9;
  size_t n = pfi_fmt_fixed(buf, v, dec);
  /* Rounding may carry into a new leading digit (9.996 with 3 digits
   * reads "10.00"): one decimal fewer then. */
  if (dec > 0 && fabs(strtod(buf, NULL)) >= pow(10.0, e + 1))
    n = pfi_fmt_fixed(buf, v, dec - 1);
  /* Zero, and a value that rounds to zero in 9 decimals ("-0.000000000"),
   * read "0". */
  size_t sign = buf[0] == '-';
  if (strspn(buf + sign, "0.") == n - sign) {
    buf[0] = '0';
    buf[1] = '\0';
    n = 1;
  }
  return n;
}

/* pfi_restab_fmt_num(), returning the length. */
static size_t fmt_num(const struct pfi_restab_col *c, enum pfi_restab_format f,
                      double v, char *buf) {
  if (f == PFI_RESTAB_TERM && pfi_restab_qty_digits(c->qty) > 0)
    return pfi_restab_fmt_sig(buf, v, pfi_restab_qty_digits(c->qty));
  char style = c->style;
  int prec = c->prec;
  if (f != PFI_RESTAB_TERM && c->csv_style) {
    style = c->csv_style;
    prec = c->csv_prec;
  }
  buf[0] = '\0';
  if (!isfinite(v))
    return 0;
  if (style == 'f')
    return pfi_fmt_fixed(buf, v, prec);
  return pfi_fmt_g(buf, v, style ? prec : 6);
}

char *pfi_restab_fmt_num(const struct pfi_restab_col *c,
                         enum pfi_restab_format f, double v, char *buf) {
  fmt_num(c, f, v, buf);
  return buf;
}

/* The text of cell `c` of column `col` in format f, into buf (32 bytes),
 * or NULL for an empty cell. */
/* The text of number cell c (set, finite) of column col in format f into
 * buf (PFI_FMT_MAX bytes); returns its length. */
static size_t num_text(const struct pfi_restab_col *col,
                       const struct pfi_restab_cell *c,
                       enum pfi_restab_format f, char *buf) {
  if (col->kind == PFI_RESTAB_INT) {
    if (c->u.i >= 0 && c->u.i < 1000000000) {
      /* The common small count without snprintf: the same digits. */
      char d[12];
      int k = 0;
      long long v = c->u.i;
      do
        d[k++] = (char)('0' + v % 10);
      while ((v /= 10) > 0);
      for (int m = 0; m < k; m++)
        buf[m] = d[k - 1 - m];
      buf[k] = '\0';
      return (size_t)k;
    }
    int n = snprintf(buf, PFI_FMT_MAX, "%lld", c->u.i);
    return n > 0 ? (size_t)n : 0;
  }
  return fmt_num(col, f, c->u.num, buf);
}

/* The text of cell `c` of column `col` in format f, into buf (32 bytes),
 * or NULL for an empty cell. */
static const char *cell_text(const struct pfi_restab_col *col,
                             const struct pfi_restab_cell *c,
                             enum pfi_restab_format f, char *buf) {
  if (!c->set)
    return NULL;
  if (c->set == 2)
    return "";
  if (col->kind == PFI_RESTAB_TEXT)
    return c->u.s;
  num_text(col, c, f, buf);
  return buf;
}

static int shown(const struct pfi_restab_col *c, enum pfi_restab_format f) {
  return c->formats == 0 || (c->formats & (1u << f));
}

/* s as a quoted CSV field, quotes doubled. */
static void put_csv_quoted(FILE *fp, const char *s) {
  fputc('"', fp);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', fp);
    fputc(*s, fp);
  }
  fputc('"', fp);
}

void pfi_restab_put_csv(FILE *fp, const char *s) {
  if (!strpbrk(s, ",\"\r\n"))
    fputs(s, fp);
  else
    put_csv_quoted(fp, s);
}

void pfi_restab_put_name(FILE *fp, const char *s, int width) {
  int w = 0;
  for (; *s; s++, w++)
    fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, fp);
  for (; w < width; w++)
    fputc(' ', fp);
}

void pfi_restab_put_html(FILE *fp, const char *s) {
  for (; *s; s++)
    switch (*s) {
    case '&':
      fputs("&amp;", fp);
      break;
    case '<':
      fputs("&lt;", fp);
      break;
    case '>':
      fputs("&gt;", fp);
      break;
    case '"':
      fputs("&quot;", fp);
      break;
    case '\'':
      fputs("&#39;", fp);
      break;
    default:
      fputc(*s, fp);
    }
}

static void put_pad(FILE *fp, int n) {
  for (; n > 0; n--)
    fputc(' ', fp);
}

static int right(const struct pfi_restab_col *c) {
  return c->align == PFI_RESTAB_RIGHT ||
         (c->align == PFI_RESTAB_ALIGN_AUTO && c->kind != PFI_RESTAB_TEXT);
}

/* The terminal header of a column, "label [unit]", into buf. */
static const char *term_head(const struct pfi_restab_col *c, char *buf,
                             size_t n) {
  const char *l = c->label ? c->label : c->name;
  if (!c->unit)
    return l;
  snprintf(buf, n, "%s [%s]", l, c->unit);
  return buf;
}

/* One terminal cell: `s` in `w` bytes, padded unless it is the row's last
 * and left-aligned (no blanks at the ends of lines). */
static void put_term(FILE *fp, const struct pfi_restab_col *c, const char *s,
                     int w, int lastcol) {
  int len = (int)strlen(s);
  if (right(c)) {
    put_pad(fp, w - len);
    pfi_restab_put_name(fp, s, 0);
  } else {
    pfi_restab_put_name(fp, s, lastcol ? 0 : w);
  }
}

int pfi_restab_term_width(FILE *fp) {
  const char *e = getenv("COLUMNS");
  if (e && *e) {
    char *end;
    long v = strtol(e, &end, 10);
    if (*end == '\0' && v >= 20 && v <= 100000)
      return (int)v;
  }
  struct winsize ws;
  int fd = fp ? fileno(fp) : -1;
  if (fd >= 0 && isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 &&
      ws.ws_col > 0)
    return ws.ws_col;
  return PFI_RESTAB_WIDTH_DEFAULT;
}

/* The text of row i's cell in column j for the terminal (-1: the header). */
static const char *term_text(const struct pfi_restab *t, long i, size_t j,
                             char *buf, char *hb, size_t hn) {
  const struct pfi_restab_col *c = &t->cols[j];
  if (i < 0)
    return term_head(c, hb, hn);
  const char *s =
      cell_text(c, &t->cells[(size_t)i * t->ncols + j], PFI_RESTAB_TERM, buf);
  return s ? s : t->term_null;
}

/* Rows of t in the columns vis[0..nv) (widths w, by column). */
static void put_panel(const struct pfi_restab *t, FILE *fp, const size_t *vis,
                      size_t nv, const int *w) {
  char buf[PFI_FMT_MAX], hb[256];
  for (long i = t->header ? -1 : 0; i < (long)t->nrows; i++) {
    for (size_t k = 0; k < nv; k++) {
      const struct pfi_restab_col *c = &t->cols[vis[k]];
      if (k > 0)
        put_pad(fp, c->sep > 0 ? c->sep : 2);
      put_term(fp, c, term_text(t, i, vis[k], buf, hb, sizeof hb), w[vis[k]],
               k + 1 == nv);
    }
    fputc('\n', fp);
  }
}

/* Each row as a block of "header: value" lines, the values aligned, a
 * blank line between rows. */
static void put_records(const struct pfi_restab *t, FILE *fp,
                        const size_t *vis, size_t nv) {
  char buf[PFI_FMT_MAX], hb[256];
  int kw = 0;
  for (size_t k = 0; k < nv; k++) {
    int l = (int)strlen(term_head(&t->cols[vis[k]], hb, sizeof hb));
    if (l > kw)
      kw = l;
  }
  for (size_t i = 0; i < t->nrows; i++) {
    if (i > 0)
      fputc('\n', fp);
    for (size_t k = 0; k < nv; k++) {
      const char *h = term_head(&t->cols[vis[k]], hb, sizeof hb);
      pfi_restab_put_name(fp, h, 0);
      fputc(':', fp);
      put_pad(fp, kw - (int)strlen(h) + 1);
      pfi_restab_put_name(
          fp, term_text(t, (long)i, vis[k], buf, hb, sizeof hb), 0);
      fputc('\n', fp);
    }
  }
}

int pfi_restab_print_term(const struct pfi_restab *t, FILE *fp, int width) {
  size_t nc = t->ncols;
  int *w = calloc(nc, sizeof *w);
  size_t *vis = calloc(nc, sizeof *vis), *pv = calloc(nc, sizeof *pv);
  if (!w || !vis || !pv) {
    free(w);
    free(vis);
    free(pv);
    return PFI_ENOMEM;
  }
  char buf[PFI_FMT_MAX], hb[256];
  size_t nv = 0;
  long total = 0;
  for (size_t j = 0; j < nc; j++) {
    const struct pfi_restab_col *c = &t->cols[j];
    if (!shown(c, PFI_RESTAB_TERM))
      continue;
    vis[nv++] = j;
    w[j] = c->width;
    if (!c->fixed) {
      int hl = t->header ? (int)strlen(term_head(c, hb, sizeof hb)) : 0;
      if (hl > w[j])
        w[j] = hl;
      for (size_t i = 0; i < t->nrows; i++) {
        int l = (int)strlen(term_text(t, (long)i, j, buf, hb, sizeof hb));
        if (l > w[j])
          w[j] = l;
      }
      if (c->max_width > 0 && w[j] > c->max_width)
        w[j] = c->max_width > c->width ? c->max_width : c->width;
    }
    total += w[j] + (nv > 1 ? (c->sep > 0 ? c->sep : 2) : 0);
  }
  if (t->title)
    fprintf(fp, "%s\n", t->title);
  if (width <= 0 || total <= width || nv < 2 || !t->header) {
    put_panel(t, fp, vis, nv, w);
  } else {
    /* Panels: the first column, then as many of the next as fit. */
    int kw = w[vis[0]], fits = 1;
    for (size_t k = 1; k < nv && fits; k++) {
      const struct pfi_restab_col *c = &t->cols[vis[k]];
      fits = kw + (c->sep > 0 ? c->sep : 2) + w[vis[k]] <= width;
    }
    if (!fits) {
      put_records(t, fp, vis, nv);
    } else {
      size_t k = 1;
      while (k < nv) {
        size_t np = 0;
        long used = kw;
        pv[np++] = vis[0];
        while (k < nv) {
          const struct pfi_restab_col *c = &t->cols[vis[k]];
          long add = (c->sep > 0 ? c->sep : 2) + w[vis[k]];
          if (np > 1 && used + add > width)
            break;
          used += add;
          pv[np++] = vis[k++];
        }
        if (pv[1] != vis[1])
          fputc('\n', fp);
        put_panel(t, fp, pv, np, w);
      }
    }
  }
  free(w);
  free(vis);
  free(pv);
  if (t->nnotes) {
    fputc('\n', fp);
    for (size_t k = 0; k < t->nnotes; k++)
      fprintf(fp, "%s\n", t->notes[k]);
  }
  return 0;
}

/* CSV text being built: the streamed rows of a table, or a block of rows
 * being printed. */
struct csvbuf {
  char *p;
  size_t len, cap;
  int failed; /* out of memory: the text is short */
};

/* Room for `more` bytes at the end of b. */
static int csv_room(struct csvbuf *b, size_t more) {
  if (b->cap - b->len >= more)
    return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap - b->len < more) {
    if (cap > SIZE_MAX / 2) {
      b->failed = 1;
      return PFI_ENOMEM;
    }
    cap *= 2;
  }
  char *nb = realloc(b->p, cap);
  if (!nb) {
    b->failed = 1;
    return PFI_ENOMEM;
  }
  b->p = nb;
  b->cap = cap;
  return 0;
}

static void csv_put(struct csvbuf *b, const char *s, size_t n) {
  /* Nothing to add (an empty field first in the text): no copy to a
   * buffer that may not exist yet. */
  if (n > 0 && csv_room(b, n) == 0) {
    memcpy(b->p + b->len, s, n);
    b->len += n;
  }
}

/* s as a CSV field at the end of b: as pfi_restab_put_csv(), or quoted
 * when `quote`. */
static void csv_field(struct csvbuf *b, const char *s, int quote) {
  size_t n = strlen(s);
  if (!quote && !strpbrk(s, ",\"\r\n")) {
    csv_put(b, s, n);
    return;
  }
  /* At most every byte a quote, doubled, and the two around. */
  if (n > (SIZE_MAX - 2) / 2 || csv_room(b, 2 * n + 2) < 0)
    return;
  char *w = b->p + b->len;
  *w++ = '"';
  for (; *s; s++) {
    if (*s == '"')
      *w++ = '"';
    *w++ = *s;
  }
  *w++ = '"';
  b->len = (size_t)(w - b->p);
}

/* Row i of t's cells (-1: the header) as a CSV line at the end of b. */
static void csv_row(const struct pfi_restab *t, long i, struct csvbuf *b) {
  char buf[PFI_FMT_MAX];
  size_t nc = t->ncols;
  int first = 1;
  for (size_t j = 0; j < nc; j++) {
    const struct pfi_restab_col *c = &t->cols[j];
    if (!shown(c, PFI_RESTAB_CSV))
      continue;
    if (!first)
      csv_put(b, ",", 1);
    first = 0;
    if (i < 0) {
      csv_field(b, c->name, 0);
      continue;
    }
    const struct pfi_restab_cell *cl = &t->cells[(size_t)i * nc + j];
    if (cl->set == 1 && c->kind != PFI_RESTAB_TEXT && !c->csv_quote) {
      /* A number's text, straight into the line: it holds no comma,
       * quote or line end. */
      if (csv_room(b, PFI_FMT_MAX) == 0)
        b->len += num_text(c, cl, PFI_RESTAB_CSV, b->p + b->len);
      continue;
    }
    const char *s = cell_text(c, cl, PFI_RESTAB_CSV, buf);
    if (!s) {
      s = t->csv_null;
    } else if (c->kind != PFI_RESTAB_TEXT && cl->set != 2) {
      /* A number's text holds no comma, quote or line end. */
      if (c->csv_quote)
        csv_field(b, s, 1);
      else
        csv_put(b, s, strlen(s));
      continue;
    }
    csv_field(b, s, c->csv_quote && cl->set != 2);
  }
  csv_put(b, "\n", 1);
}

/* Streaming: the last row kept as cells into t's text. */
static void stream_row(struct pfi_restab *t) {
  struct csvbuf b = {t->csv_text, t->csv_len, t->csv_cap, 0};
  csv_row(t, 0, &b);
  if (b.len && t->csv_len == 0 && t->csv_rows > 1 &&
      b.len < SIZE_MAX / 2 / t->csv_rows) {
    /* The first row: room for the rest like it, and a quarter more (rows
     * differ in length), in one allocation; more is grown as usual. */
    size_t want = b.len * t->csv_rows + b.len * t->csv_rows / 4;
    if (want > b.cap) {
      char *nb = realloc(b.p, want);
      if (nb) {
        pfi__advise_huge(nb, want);
        b.p = nb;
        b.cap = want;
      }
    }
  }
  t->csv_text = b.p;
  t->csv_len = b.len;
  t->csv_cap = b.cap;
  if (b.failed)
    t->failed = 1;
}

/* Writes b's text to fp and empties it. */
static int csv_write(struct csvbuf *b, FILE *fp) {
  int rc = b->len && fwrite(b->p, 1, b->len, fp) != b->len ? PFI_EIO : 0;
  b->len = 0;
  return rc;
}

/* The header, the rows streamed, then the rows kept as cells, each built
 * in a buffer and written a block at a time. */
static int print_csv(const struct pfi_restab *t, FILE *fp) {
  struct csvbuf b = {NULL, 0, 0, 0};
  int rc = 0;
  if (t->header) {
    csv_row(t, -1, &b);
    rc = csv_write(&b, fp);
  }
  if (rc == 0 && t->csv_len &&
      fwrite(t->csv_text, 1, t->csv_len, fp) != t->csv_len)
    rc = PFI_EIO;
  for (size_t i = 0; rc == 0 && i < t->nrows && !b.failed; i++) {
    csv_row(t, (long)i, &b);
    if (b.len >= ((size_t)1 << 16) || i + 1 == t->nrows)
      rc = csv_write(&b, fp);
  }
  free(b.p);
  return b.failed ? PFI_ENOMEM : rc;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629), or 0. */
static size_t utf8_seq(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  size_t len;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF)
    len = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0;
    else if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90;
    else if (c == 0xF4)
      hi = 0x8F;
  } else
    return 0;
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (size_t k = 2; k < len; k++)
    if (s[k] < 0x80 || s[k] > 0xBF)
      return 0;
  return len;
}

char *pfi_restab_utf8_fix(const char *s) {
  size_t n = strlen(s);
  char *buf = n <= (SIZE_MAX - 1) / 3 ? malloc(3 * n + 1) : NULL;
  if (!buf)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    size_t len = utf8_seq((const unsigned char *)s + i);
    if (len) {
      memcpy(buf + o, s + i, len);
      o += len;
      i += len;
    } else {
      memcpy(buf + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i++;
    }
  }
  buf[o] = '\0';
  return buf;
}

/* A JSON string of s; bytes that do not start a well-formed UTF-8 sequence
 * become U+FFFD (json_string() refuses them). NULL when out of memory. */
static json_t *json_text(const char *s) {
  json_t *j = json_string(s);
  if (j)
    return j;
  char *buf = pfi_restab_utf8_fix(s);
  if (!buf)
    return NULL;
  j = json_string(buf);
  free(buf);
  return j;
}

static int print_json(const struct pfi_restab *t, FILE *fp) {
  json_t *arr = json_array();
  int rc = arr ? 0 : PFI_ENOMEM;
  size_t nc = t->ncols;
  for (size_t i = 0; i < t->nrows && rc == 0; i++) {
    json_t *o = json_object();
    if (!o || json_array_append_new(arr, o)) {
      rc = PFI_ENOMEM;
      break;
    }
    for (size_t j = 0; j < nc && rc == 0; j++) {
      const struct pfi_restab_col *c = &t->cols[j];
      if (!shown(c, PFI_RESTAB_JSON))
        continue;
      const struct pfi_restab_cell *cl = &t->cells[i * nc + j];
      json_t *v;
      if (cl->set != 1)
        v = json_null();
      else if (c->kind == PFI_RESTAB_TEXT)
        v = json_text(cl->u.s);
      else if (c->kind == PFI_RESTAB_INT)
        v = c->json_bool ? json_boolean(cl->u.i != 0)
                         : json_integer((json_int_t)cl->u.i);
      else
        v = json_real(cl->u.num);
      if (!v || json_object_set_new(o, c->name, v))
        rc = PFI_ENOMEM;
    }
  }
  if (rc == 0 && (json_dumpf(arr, fp,
                             JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                 JSON_REAL_PRECISION(t->json_prec)) != 0 ||
                  fputc('\n', fp) == EOF))
    rc = PFI_EIO;
  json_decref(arr);
  return rc;
}

static int print_html(const struct pfi_restab *t, FILE *fp) {
  char buf[PFI_FMT_MAX];
  size_t nc = t->ncols;
  if (t->title) {
    fputs("<p class=\"tabcap\">", fp);
    pfi_restab_put_html(fp, t->title);
    fputs("</p>\n", fp);
  }
  fputs("<table class=\"res\">\n<thead><tr>", fp);
  for (size_t j = 0; j < nc; j++) {
    const struct pfi_restab_col *c = &t->cols[j];
    if (!shown(c, PFI_RESTAB_HTML))
      continue;
    fputs("<th>", fp);
    pfi_restab_put_html(fp, c->name);
    if (c->unit) {
      fputs(" [", fp);
      pfi_restab_put_html(fp, c->unit);
      fputc(']', fp);
    }
    fputs("</th>", fp);
  }
  fputs("</tr></thead>\n<tbody>\n", fp);
  for (size_t i = 0; i < t->nrows; i++) {
    fputs("<tr>", fp);
    for (size_t j = 0; j < nc; j++) {
      const struct pfi_restab_col *c = &t->cols[j];
      if (!shown(c, PFI_RESTAB_HTML))
        continue;
      const char *s = cell_text(c, &t->cells[i * nc + j], PFI_RESTAB_HTML, buf);
      fputs(c->kind == PFI_RESTAB_TEXT ? "<td>" : "<td class=\"num\">", fp);
      if (s)
        pfi_restab_put_html(fp, s);
      else
        fputs("&ndash;", fp);
      fputs("</td>", fp);
    }
    fputs("</tr>\n", fp);
  }
  fputs("</tbody></table>\n", fp);
  for (size_t k = 0; k < t->nnotes; k++) {
    fputs("<p class=\"note\">", fp);
    pfi_restab_put_html(fp, t->notes[k]);
    fputs("</p>\n", fp);
  }
  return 0;
}

int pfi_restab_print(const struct pfi_restab *t, enum pfi_restab_format f,
                     FILE *fp) {
  if (t->failed)
    return PFI_ENOMEM;
  if (t->csv_stream && f != PFI_RESTAB_CSV)
    return PFI_EINVAL;
  int rc;
  switch (f) {
  case PFI_RESTAB_TERM:
    rc = pfi_restab_print_term(t, fp, pfi_restab_term_width(fp));
    break;
  case PFI_RESTAB_CSV:
    rc = print_csv(t, fp);
    break;
  case PFI_RESTAB_JSON:
    rc = print_json(t, fp);
    break;
  case PFI_RESTAB_HTML:
    rc = print_html(t, fp);
    break;
  default:
    return PFI_EINVAL;
  }
  if (rc == 0 && ferror(fp))
    rc = PFI_EIO;
  return rc;
}
