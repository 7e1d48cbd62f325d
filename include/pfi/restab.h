/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Result tables: columns declared once, rows appended, then printed as a
 * terminal table, CSV, JSON or HTML by one printer.
 *
 *   static const struct pfi_restab_col cols[] = {
 *       {.name = "job", .kind = PFI_RESTAB_TEXT},
 *       {.name = "cap_w", .kind = PFI_RESTAB_NUM, .style = 'g', .prec = 6},
 *       {.name = "gpus", .kind = PFI_RESTAB_INT},
 *   };
 *   struct pfi_restab t;
 *   pfi_restab_init(&t, cols, 3);
 *   pfi_restab_row(&t);
 *   pfi_restab_text(&t, 0, "llama"); pfi_restab_num(&t, 1, 500);
 *   pfi_restab_int(&t, 2, 8);
 *   pfi_restab_print(&t, PFI_RESTAB_TERM, stdout);
 *   pfi_restab_release(&t);
 *
 * Numbers print through pfi/fmt.h (printf's text, fixed point switching to
 * %g beyond 1e15); in the terminal, a column of a kind of quantity
 * (`qty`: power, share, throughput, seconds...) shows that kind's number of
 * significant digits in fixed point, never an exponent. A NaN or infinite value prints as the table's null
 * text ("-" in the terminal and CSV unless set otherwise, null in JSON,
 * "&ndash;" in HTML): no output shows inf or nan. Names are the user's: in
 * the terminal a control character prints as '?' (a tab or line break would
 * break the rows and columns), CSV quotes a field holding a comma, a quote
 * or a line break (quotes doubled), JSON escapes it (bytes that are not
 * UTF-8 become U+FFFD), HTML escapes & < > " and '.
 *
 * The terminal table fits the terminal (pfi_restab_term_width(): $COLUMNS,
 * else the terminal's width, else 80 columns when the output is not a
 * terminal). A table wider than that is wrapped: its columns are split
 * into panels that fit, one under the other, each repeating the first
 * column (the row's name); when even one column beside the first does not
 * fit, each row prints as a block of "header: value" lines. Titles and
 * notes are prose, printed as they are (a terminal wraps prose itself;
 * what it cannot wrap is a table's rows).
 * pfi_restab_print_term() with width 0 prints at full width (`--wide`).
 */
#ifndef PFI_RESTAB_H
#define PFI_RESTAB_H

#include <stddef.h>
#include <stdio.h>

enum pfi_restab_kind {
  PFI_RESTAB_TEXT, /* a string */
  PFI_RESTAB_NUM,  /* a double, `style` and `prec` */
  PFI_RESTAB_INT   /* a long long */
};

/* The kind of quantity a number column holds: in the terminal, it shows
 * pfi_restab_qty_digits() significant digits in fixed point (19572.2499
 * W as "19572", 312.46 W as "312", 5.126 W as "5.13"): all the
 * integer digits, never an exponent below 1e15, the same reading in every
 * table. CSV, JSON and HTML keep the column's style and prec. */
enum pfi_restab_qty {
  PFI_RESTAB_Q_NONE,       /* style and prec decide, in every format */
  PFI_RESTAB_Q_POWER,      /* W, kW, MW: 3 digits */
  PFI_RESTAB_Q_ENERGY,     /* J, Wh: 3 digits */
  PFI_RESTAB_Q_THROUGHPUT, /* tokens/s, samples/s: 4 digits */
  PFI_RESTAB_Q_SHARE,      /* %, a fraction: 3 digits */
  PFI_RESTAB_Q_SECONDS,    /* s, a duration or a time: 3 digits */
  PFI_RESTAB_Q_RATIO,      /* an index, a coefficient, a ratio: 3 digits */
  PFI_RESTAB_Q_CLOCK,      /* MHz: 3 digits */
  PFI_RESTAB_Q_TEMP,       /* degrees C: 2 digits */
  PFI_RESTAB_Q__COUNT
};

enum pfi_restab_align {
  PFI_RESTAB_ALIGN_AUTO, /* text left, numbers right */
  PFI_RESTAB_LEFT,
  PFI_RESTAB_RIGHT
};

enum pfi_restab_format {
  PFI_RESTAB_TERM, /* aligned columns for a reader */
  PFI_RESTAB_CSV,  /* header row, then one row per row */
  PFI_RESTAB_JSON, /* an array of objects, keys the column names */
  PFI_RESTAB_HTML  /* a <table>, with title and notes as paragraphs */
};

/* Which formats show a column (an empty mask: all of them). */
#define PFI_RESTAB_IN_TERM (1u << PFI_RESTAB_TERM)
#define PFI_RESTAB_IN_CSV (1u << PFI_RESTAB_CSV)
#define PFI_RESTAB_IN_JSON (1u << PFI_RESTAB_JSON)
#define PFI_RESTAB_IN_HTML (1u << PFI_RESTAB_HTML)
#define PFI_RESTAB_IN_FILES (PFI_RESTAB_IN_CSV | PFI_RESTAB_IN_JSON)

struct pfi_restab_col {
  const char *name;  /* CSV header, JSON key, HTML header */
  const char *label; /* terminal header; NULL: name */
  const char *unit;  /* shown "label [unit]" in terminal and HTML headers;
                        NULL: none */
  enum pfi_restab_kind kind;
  /* Numbers: 'f' (pfi_fmt_fixed: `prec` decimals) or 'g' (pfi_fmt_g: `prec`
   * significant digits); 0 means 'g' with 6, as printf's %g. */
  char style;
  int prec;
  /* CSV and HTML text of numbers, when it differs from the terminal's
   * (csv_style 0: the same as the terminal). JSON carries the double. */
  char csv_style;
  int csv_prec;
  /* Terminal: the column is at least `width` bytes wide and as wide as its
   * header and widest cell, but not wider than max_width (when > 0; a cell
   * wider than that overflows its row only, as printf's %*s does). With
   * `fixed` set, `width` is kept whatever the cells (printf's %*s). */
  int width, max_width, fixed;
  enum pfi_restab_align align;
  int sep;          /* spaces before the column in the terminal; 0: 2 */
  unsigned formats; /* PFI_RESTAB_IN_* mask; 0: every format */
  /* CSV: each cell of the column quoted, even when nothing in it needs it
   * (a timestamp column that readers expect quoted); a blank cell
   * (pfi_restab_blank) stays empty. The header is not quoted. */
  int csv_quote;
  /* JSON: an integer column as true (non-zero) or false. */
  int json_bool;
  /* Terminal: the significant digits of the column's numbers by kind. */
  enum pfi_restab_qty qty;
};

struct pfi_restab_cell {
  union {
    double num;
    long long i;
    char *s; /* owned, or borrowed when set is 2 */
  } u;
  unsigned char set; /* 0: empty (null); 2: blank (pfi_restab_blank); 3:
                        text borrowed (pfi_restab_text_ref) */
};

struct pfi_restab {
  const struct pfi_restab_col *cols; /* borrowed: outlives the table */
  size_t ncols, nrows, cap;
  struct pfi_restab_cell *cells; /* nrows * ncols, row-major */
  char *title;                   /* printed above the table; may be NULL */
  char **notes;                  /* printed below it, one a line */
  size_t nnotes;
  /* Text of an empty cell or a non-finite number: term_null in the
   * terminal (default "-"), csv_null in CSV (default "-"). */
  const char *term_null, *csv_null;
  int header;     /* print the header row (default 1); terminal and CSV */
  int json_prec;  /* significant digits of JSON numbers (default 12) */
  int failed;     /* out of memory on some call: print fails */
  /* CSV streamed (pfi_restab_csv_stream): the rows before the last one are
   * already CSV text here, nrows counting only the rows still kept as
   * cells (the last one). */
  int csv_stream;
  size_t csv_rows; /* rows expected (pfi_restab_csv_stream), 0: unknown */
  char *csv_text;
  size_t csv_len, csv_cap;
};

/* A table of `ncols` columns described by `cols` (borrowed). Returns 0 or
 * PFI_ENOMEM / PFI_EINVAL. */
int pfi_restab_init(struct pfi_restab *t, const struct pfi_restab_col *cols,
                    size_t ncols);
void pfi_restab_release(struct pfi_restab *t);

/* For a table that will be printed as CSV only: from here on, each row
 * is turned into its CSV text when the next one starts, so that a table of
 * many rows holds their text (tens of bytes a row) rather than their
 * cells; pfi_restab_print() then prints the same bytes as without, and
 * refuses (PFI_EINVAL) any other format. `rows`, when known (else 0), is
 * how many rows will come: room for about that many rows like the first
 * is set aside once, rather than grown by copies. Call it before the
 * first row. */
void pfi_restab_csv_stream(struct pfi_restab *t, size_t rows);

/* Appends an empty row; the setters below fill the last row. Returns 0 or
 * PFI_ENOMEM (also remembered in t->failed). */
int pfi_restab_row(struct pfi_restab *t);
void pfi_restab_text(struct pfi_restab *t, size_t col, const char *s);
/* The same without a copy: s must outlive the table (a name held by the
 * caller's data, say). */
void pfi_restab_text_ref(struct pfi_restab *t, size_t col, const char *s);
void pfi_restab_num(struct pfi_restab *t, size_t col, double v);
void pfi_restab_int(struct pfi_restab *t, size_t col, long long v);
/* Leaves a cell of the last row blank on purpose, as a total row's column
 * that has no total: no text in the terminal, CSV and HTML (not the null
 * text, which says a value is missing), null in JSON. */
void pfi_restab_blank(struct pfi_restab *t, size_t col);
/* Formatted text into a text cell. */
void pfi_restab_textf(struct pfi_restab *t, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Title above the table (terminal and HTML) and notes below it (terminal:
 * after an empty line, one a line; HTML: paragraphs). Copied. */
int pfi_restab_title(struct pfi_restab *t, const char *title);
int pfi_restab_note(struct pfi_restab *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints the table; the terminal format fitted to
 * pfi_restab_term_width(fp). Returns 0, PFI_ENOMEM when a call above ran
 * out of memory, or PFI_EIO when writing failed. */
int pfi_restab_print(const struct pfi_restab *t, enum pfi_restab_format f,
                     FILE *fp);

/* The terminal table fitted to `width` columns (wrapped into panels, or
 * one "header: value" block per row, when wider); width 0: at its full
 * width. Returns as pfi_restab_print(). */
int pfi_restab_print_term(const struct pfi_restab *t, FILE *fp, int width);

/*
 * A JSON document (an API's answer) as result tables in format f
 * (PFI_RESTAB_TERM, fitted to `width` columns, 0 full; or PFI_RESTAB_CSV):
 * a list of objects is one table, a column per key in order of first
 * appearance; an object is a table of its fields ("field value" lines, a
 * header-less table), then each nested object and list of objects a section
 * of its own titled by its path ("event", "power.gpus"), 16 levels deep
 * (deeper parts, like lists of plain values, print as compact JSON in their
 * cell). A field name's unit suffix gives the header's unit and the digits
 * (power_w: "power [W]", 3 significant digits; _s, _pct, _mhz alike). In
 * CSV an object's fields are field,value rows named by their path
 * ("power.total_w", "nodes.0.name"), numbers in 15 significant digits (17
 * where 15 do not read back). Returns 0, PFI_EPARSE when `json` is not
 * JSON (nothing printed), PFI_EINVAL for another format, PFI_ENOMEM or
 * PFI_EIO.
 */
int pfi_restab_print_doc(const char *json, enum pfi_restab_format f,
                         FILE *fp, int width);

/* Default width of terminal tables when the output is not a terminal and
 * $COLUMNS is not set: a file or a pipe reads as a classic terminal. */
#define PFI_RESTAB_WIDTH_DEFAULT 80

/* The width terminal tables on `fp` fit: $COLUMNS when it is a whole number
 * from 20 to 100000, else the terminal's width when fp is a terminal, else
 * PFI_RESTAB_WIDTH_DEFAULT. */
int pfi_restab_term_width(FILE *fp);

/* Significant digits the terminal shows for a kind of quantity (0 for
 * PFI_RESTAB_Q_NONE and unknown kinds). */
int pfi_restab_qty_digits(enum pfi_restab_qty q);

/* v with `digits` significant digits in fixed point (all integer digits
 * kept, at most 9 decimals; printf's %g beyond 1e15 in magnitude) into buf
 * (PFI_FMT_MAX bytes); "" for a non-finite value. Returns the length. */
size_t pfi_restab_fmt_sig(char *buf, double v, int digits);

/* The building blocks, for output the table does not cover: `s` as one CSV
 * field; `s` left-aligned in `width` bytes with control characters as '?';
 * `s` escaped for HTML text or attribute values. */
void pfi_restab_put_csv(FILE *fp, const char *s);
void pfi_restab_put_name(FILE *fp, const char *s, int width);
void pfi_restab_put_html(FILE *fp, const char *s);
/* A malloc'd copy of s in which every byte that does not start a
 * well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates)
 * is U+FFFD, the text JSON may carry; NULL when out of memory. */
char *pfi_restab_utf8_fix(const char *s);

/* The text a number cell of column `c` shows in format `f` (terminal or
 * CSV) into buf (at least 32 bytes); "" for a non-finite value. Returns
 * buf. */
char *pfi_restab_fmt_num(const struct pfi_restab_col *c,
                         enum pfi_restab_format f, double v, char *buf);

#endif
