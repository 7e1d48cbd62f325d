/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Building blocks of the HTML report: a growable text buffer with HTML
 * escaping, result tables that write themselves as CSV, JSON and HTML, and
 * figures drawn by gnuplot as SVG text that is embedded inline in the page.
 *
 * The report is one self-contained file: no script, style sheet, font or
 * image is loaded from anywhere else, so it opens from disk without network.
 * Everything here is deterministic: the same inputs give the same bytes (no
 * timestamps, no addresses, no locale-dependent number formatting beyond the
 * C locale the command line runs in).
 */
#ifndef PFI_REPORT_H
#define PFI_REPORT_H

#include <stdarg.h>
#include <stddef.h>

#include "pfi/error.h"
#include "pfi/objective.h"

/* ---- text buffer -------------------------------------------------------- */

/*
 * A NUL-terminated growable string. Append functions return 0 or
 * PFI_ENOMEM; after a failed append the buffer keeps its earlier content and
 * `failed` stays set, so a long run of appends can be checked once at the
 * end with pfi_html_ok().
 */
struct pfi_html {
  char *s;    /* owned; NULL until the first append */
  size_t len; /* bytes, without the NUL */
  size_t cap; /* allocated bytes */
  int failed; /* an append ran out of memory */
};

/* Initializes an empty buffer (no allocation). */
void pfi_html_init(struct pfi_html *b);

/* Frees the buffer's memory; the buffer is empty and reusable afterwards. */
void pfi_html_release(struct pfi_html *b);

/* Hands the string to the caller (free() it; "" when empty, NULL when out of
 * memory) and leaves the buffer empty. */
char *pfi_html_detach(struct pfi_html *b);

/* Appends `n` raw bytes / a raw NUL-terminated string (markup, trusted). */
int pfi_html_raw(struct pfi_html *b, const char *s, size_t n);
int pfi_html_puts(struct pfi_html *b, const char *s);

/* Appends printf-formatted raw text (markup, trusted). */
int pfi_html_printf(struct pfi_html *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends `text` (untrusted: a job name, a file name) escaped for HTML text
 * and attribute values: & < > " ' become entities; other control bytes than
 * tab and newline are dropped. NULL appends nothing. */
int pfi_html_text(struct pfi_html *b, const char *text);

/* Appends printf-formatted text, escaped as pfi_html_text() does. */
int pfi_html_textf(struct pfi_html *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* 1 when no append has failed. */
int pfi_html_ok(const struct pfi_html *b);

/* ---- result tables ------------------------------------------------------ */

enum pfi_cell_kind { PFI_CELL_NULL, PFI_CELL_NUM, PFI_CELL_STR };

struct pfi_cell {
  enum pfi_cell_kind kind;
  double v; /* PFI_CELL_NUM; always finite (non-finite values become NULL) */
  int dec;  /* decimals of this cell; -1: the column's */
  char *s;  /* PFI_CELL_STR; owned */
};

/*
 * A table of results: named columns, rows of cells. Each column has a
 * number of decimals used by every output (CSV, JSON, HTML), so that the
 * three agree and the same numbers give the same bytes. Written as
 * NAME.csv (header row, empty field for NULL) and NAME.json (an array of
 * objects keyed by column name, null for NULL).
 */
struct pfi_rtable {
  char *name;  /* file stem, e.g. "groups"; owned */
  char *title; /* caption in the report; owned */
  size_t ncols;
  char **cols;     /* column names; owned */
  int *decimals;   /* per column, for numbers; owned */
  long hidden_col; /* a column left out of the HTML rendering (its value is
                      said elsewhere on the page), -1 for none */
  int failed;      /* a row or a string could not be allocated: writing the
                      table then fails with PFI_ENOMEM */
  size_t nrows, rows_cap;
  struct pfi_cell *cells; /* nrows * ncols, row-major; owned */
};

/*
 * Initializes `t` with `ncols` columns named by `cols` (copied). Decimals
 * default to 3. Returns 0 or PFI_ENOMEM / PFI_EINVAL (ncols 0). Release
 * with pfi_rtable_release().
 */
int pfi_rtable_init(struct pfi_rtable *t, const char *name, const char *title,
                    size_t ncols, const char *const *cols);

/* Sets the decimals of column `col` (0..12). */
void pfi_rtable_decimals(struct pfi_rtable *t, size_t col, int decimals);

/* Appends a row of NULL cells; returns its index (>= 0) or PFI_ENOMEM. */
long pfi_rtable_add_row(struct pfi_rtable *t);

/* Set a cell of an existing row. A NaN or infinite number becomes NULL.
 * pfi_rtable_set_str copies `s` (NULL sets NULL). Return 0 or PFI_ENOMEM /
 * PFI_EINVAL (index out of range). */
int pfi_rtable_set_num(struct pfi_rtable *t, size_t row, size_t col, double v);
int pfi_rtable_set_str(struct pfi_rtable *t, size_t row, size_t col,
                       const char *s);

/* Sets a number with its own decimals (0..12), for tables whose rows hold
 * different quantities (the headline numbers). */
int pfi_rtable_set_num_dec(struct pfi_rtable *t, size_t row, size_t col,
                           double v, int decimals);

/* The index of column `name`, or -1. */
long pfi_rtable_col(const struct pfi_rtable *t, const char *name);

/* Number of a cell: 1 and *v when it holds a number, else 0. */
int pfi_rtable_get_num(const struct pfi_rtable *t, size_t row, size_t col,
                       double *v);

/* Formats a cell as the CSV/HTML text (number with the column's decimals,
 * "" for NULL) into buf. Returns buf. */
char *pfi_rtable_format(const struct pfi_rtable *t, size_t row, size_t col,
                        char *buf, size_t n);

/* Writes DIR/NAME.csv and DIR/NAME.json. Returns 0 or PFI_EIO/PFI_ENOMEM
 * (also when an earlier add or set on the table ran out of memory, so that
 * a table missing a row or a cell is never written). */
int pfi_rtable_write(const struct pfi_rtable *t, const char *dir,
                     struct pfi_error *err);

/* Appends the table as an HTML <table> with its caption; a NULL cell shows
 * as an en dash. Columns whose name ends in "_published" get class
 * "pub", those starting with "diff" class "diff", for styling. */
int pfi_rtable_html(const struct pfi_rtable *t, struct pfi_html *b);

void pfi_rtable_release(struct pfi_rtable *t);

/* ---- figures ------------------------------------------------------------ */

enum pfi_series_style {
  PFI_STYLE_LINESPOINTS,
  PFI_STYLE_POINTS,
  PFI_STYLE_LINES,
  PFI_STYLE_ERRORBARS, /* points with vertical bars from ylo to yhi */
  PFI_STYLE_ERRORLINES /* lines through the points, with those bars */
};

/* One data series of a panel. Arrays are borrowed for the duration of the
 * pfi_figure_svg() call. Points with a non-finite x or y are skipped. */
struct pfi_series {
  const char *title; /* legend entry; NULL or "" for none */
  const double *x, *y;
  const double *ylo, *yhi; /* PFI_STYLE_ERRORBARS, _ERRORLINES only */
  size_t n;
  enum pfi_series_style style;
  int color;  /* 0: gnuplot's default sequence; else 1.. */
  int dashed; /* draw the line dashed */
};

/* One plot panel. Axis limits NaN mean automatic. `xtics` is NULL or a list
 * of (position, label) pairs for a categorical axis. */
struct pfi_panel {
  const char *title, *xlabel, *ylabel;
  double xmin, xmax, ymin, ymax;
  const struct pfi_series *series;
  size_t nseries;
  const double *xtic_pos;
  const char *const *xtic_label;
  size_t nxtics;
  int key;             /* 1: show the legend (top right, inside) */
  const char *key_pos; /* NULL or gnuplot placement words, e.g.
                          "bottom right" */
};

/* A figure: `rows` x `cols` panels (multiplot when more than one), drawn
 * `width` x `height` pixels. */
struct pfi_figure {
  int width, height;
  int font_pt; /* text size in points; 0 means 10 */
  int rows, cols;
  const struct pfi_panel *panels;
  size_t npanels;
};

/* Initializes a panel with automatic axes and no series. */
void pfi_panel_init(struct pfi_panel *p);

/*
 * Writes the gnuplot script that draws `f` as SVG on standard output into
 * `script` (appended). Titles and labels are quoted for gnuplot and drawn
 * without enhanced-text markup, so any text is shown literally. Returns 0,
 * PFI_EINVAL (a panel without series, bad layout) or PFI_ENOMEM.
 */
int pfi_figure_script(const struct pfi_figure *f, struct pfi_html *script,
                      struct pfi_error *err);

/*
 * Draws `f` with gnuplot and returns the SVG element text in *svg (caller
 * frees): the XML prolog is removed and every id defined in the drawing is
 * prefixed with `id_prefix` (letters, digits, '-' or '_'), so several
 * figures can live in one HTML page without their ids clashing.
 * The gnuplot program is $PFI_GNUPLOT when set, else "gnuplot" on PATH; it
 * runs as a child process reading a temporary script file, its diagnostics
 * collected for the error message. Errors: PFI_ECHILD (gnuplot missing,
 * the message says to install gnuplot-nox; or gnuplot failed, the message
 * carries its first line of diagnostics), PFI_EIO, PFI_ENOMEM, PFI_EINVAL.
 */
int pfi_figure_svg(const struct pfi_figure *f, const char *id_prefix,
                   char **svg, struct pfi_error *err);

/*
 * The series of `n` capacity curves (capacity.h) for a panel: per curve a
 * line with points, titled by its strategy (colour k + 1), and with an
 * interval its error bars, in percent: x the power shed, y the throughput
 * lost. `buf` (the caller's, kept until the figure is drawn) holds
 * 4 * cap[k].n doubles per curve; `ser` room for 2 * n series. Returns the
 * number of series.
 */
struct pfi_capacity;
size_t pfi_capacity_series(const struct pfi_capacity *cap, size_t n,
                           double *buf, struct pfi_series *ser);

/*
 * Draws `f` into the file `path`: an SVG document when the name ends in
 * .svg, a PNG image when it ends in .png (gnuplot's pngcairo terminal).
 * The file is opened before gnuplot runs, so that an unwritable path is
 * named with its reason; gnuplot's own messages never reach standard
 * output. Errors as pfi_figure_svg(), and PFI_EINVAL for another name,
 * PFI_EIO for a file that cannot be written.
 */
int pfi_figure_write(const struct pfi_figure *f, const char *path,
                     struct pfi_error *err);

/*
 * Rewrites gnuplot SVG output `in` (len bytes): drops everything before
 * "<svg", prefixes ids and references to them (id='x', id="x", href='#x',
 * href="#x", url(#x)) with `prefix`. Returns a malloc'd string (caller
 * frees) or NULL when out of memory or when `in` holds no <svg element.
 * Exposed for tests.
 */
char *pfi_svg_inline(const char *in, size_t len, const char *prefix);

/* ---- the report ---------------------------------------------------------- */

struct pfi_report_opts {
  size_t ci_draws;      /* Monte Carlo draws per group; 0 means 10000 */
  unsigned long seed;   /* seeds the intervals and the simulation */
  int no_figures;       /* 1: tables only (no gnuplot needed) */
  const char *what_ran; /* plain text for the first screen saying what was
                           run; NULL: described from the input alone */
  size_t sim_workloads; /* allocation simulation: workloads (0:
                           PFI_SIM_DEFAULT_WORKLOADS) */
  size_t sim_jobs;      /* jobs per workload (0: PFI_SIM_DEFAULT_SIZE) */
  /* Leave-one-cluster-out clusters by name (pfi_clusters_parse(), jobset.h):
   * NULL is "archtask", the paper's four architecture x task clusters;
   * "pooled" the three classes. */
  const char *clusters;
  /* The operator's page: a reference sweep (curves file, read with the
   * same column mapping) the input is compared with by the replay gate
   * (include/pfi/gate.h), shown as a section; NULL for none. */
  const char *gate_reference;
  /* The operator's page: what its capacity, quotes and cap plan count as
   * throughput (objective.h; zeroed: work, the default; weight not read).
   * The paper's report reproduces the paper: raw throughput. */
  struct pfi_objective objective;
  /* The operator's page: per-job weights, a CSV with columns job and
   * weight (pfi_objective_weights_read; they replace objective.weight),
   * or NULL; and which curve decisions read (enum pfi_curve_fit,
   * monotone.h; 0, the default: the monotone fit). */
  const char *weights;
  int curve_fit;
  /* Optional progress messages (the CLI prints them on stderr). */
  void (*progress)(const char *msg, void *arg);
  void *progress_arg;
};

/*
 * Creates the directory `dir` and any missing parent (like mkdir -p), so
 * that an output directory may be given as a new path several levels
 * deep. Returns 0 (also when it exists), PFI_EIO (with the path and the
 * system's reason) or PFI_EINVAL (a component is not a directory, or the
 * name is empty or longer than 4095 bytes) with the message in `err`.
 */
int pfi_report_mkdirs(const char *dir, struct pfi_error *err);

/* Fills the defaults (10000 draws, seed 1, figures on). */
void pfi_report_opts_init(struct pfi_report_opts *o);

/*
 * Analyses the campaign summarized in `in_dir` and writes every result
 * table (NAME.csv and NAME.json) and report.html into `out_dir` (created
 * when absent; may equal in_dir). Reads in_dir/curves.csv (required),
 * in_dir/features.csv and in_dir/mechanism.csv (optional: the sections that
 * need them say they are missing), and the published tables from pfi's data
 * directory (data/paper/). The provenance shown on the first screen comes
 * from curves.csv's `source` column (emulated / measured).
 * Returns 0, or an error from reading the inputs (PFI_EPARSE with
 * file:line:column, PFI_EIO, PFI_ENOTFOUND), from gnuplot (PFI_ECHILD),
 * PFI_ENOMEM.
 */
int pfi_report_build(const char *in_dir, const char *out_dir,
                     const struct pfi_report_opts *o, struct pfi_error *err);

/*
 * The report for an operator's own jobs (no paper scaffolding): reads the
 * curves file `curves` (with the column mapping `map`, may be NULL) and
 * writes into `out_dir` report.html, whose first screen ranks the jobs from
 * most to least flexible (ratio PFI with its 95 % interval, area and CE
 * beside it, points left out by the noise rule named), shows the
 * flexibility capacity (include/pfi/capacity.h) and the cap plan for a
 * ladder of cuts (5-40 %), and the tables jobs_ranked, capacity,
 * capacity_quote and cap_plan as CSV and JSON. `unit` names the throughput
 * unit (NULL: as read). Returns 0 or an error like pfi_report_build().
 */
int pfi_report_operator(const char *curves, const char *map, const char *unit,
                        const char *out_dir, const struct pfi_report_opts *o,
                        struct pfi_error *err);

/* *paper = 1 when the curves file holds any of the paper's published
 * groups (then pfi report builds the paper-reproduction page). */
int pfi_report_has_paper_groups(const char *curves, const char *map, int *paper,
                                struct pfi_error *err);

#endif
