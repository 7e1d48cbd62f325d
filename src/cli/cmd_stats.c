/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi stats`: the paper's statistics on the columns of any CSV file. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opt.h"
#include "pfi/csv.h"
#include "pfi/stats.h"

/* The options, bound to these (src/base/opt.h). */
static const char *xc, *yc, *gc, *vc, *pc;
static int fmt;

static const struct pfi_opt opts[] = {
    PFI_OPT_STRING("x", 0, &xc, "COL",
                   "the x column (ols: a comma-separated list of columns)"),
    PFI_OPT_STRING("y", 0, &yc, "COL", "the y column"),
    PFI_OPT_STRING("group", 0, &gc, "COL", "kruskal: the group column"),
    PFI_OPT_STRING("value", 0, &vc, "COL", "kruskal: the value column"),
    PFI_OPT_STRING("p", 0, &pc, "COL", "fdr: the column of p-values"),
    {.lng = "format", .arg = PFI_ARG_REQ, .argname = "F",
     .help = "table or json", .type = PFI_OT_CHOICE, .var = &fmt,
     .words = pfi_opt_formats_tj, .def = "table"},
    PFI_OPT_WIDE,
    PFI_OPT_HELP,
    PFI_OPT_END};

static const struct pfi_cmd_help help = {
    "stats",
    "usage: pfi stats spearman FILE --x COL --y COL [--format F]\n"
    "       pfi stats pearson  FILE --x COL --y COL [--format F]\n"
    "       pfi stats ols      FILE --y COL --x COL[,COL...] [--format F]\n"
    "       pfi stats kruskal  FILE --group COL --value COL [--format F]\n"
    "       pfi stats fdr      FILE --p COL [--format F]\n",
    "Statistics on the columns of a CSV file with a header row (FILE, or -\n"
    "for standard input):\n"
    "  spearman  rank correlation rho (ties get average ranks), two-sided p\n"
    "            from the t approximation with n-2 degrees of freedom, n\n"
    "  pearson   correlation r, two-sided p (t with n-2 degrees of "
    "freedom), n\n"
    "  ols       least squares with an intercept: coef and se by name\n"
    "            (intercept first), r2, adj_r2, rmse = sqrt(SSE/n), n, and\n"
    "            each row's leverage (hat-matrix diagonal)\n"
    "  kruskal   Kruskal-Wallis H (tie-corrected), df, p (chi-square); per\n"
    "            group name, n, median, mean; Dunn's test for every pair\n"
    "            (tie-corrected z, two-sided p, Holm-Bonferroni p_holm)\n"
    "  fdr       Benjamini-Hochberg q-values of a column of p-values, in row\n"
    "            order\n",
    opts,
    "Every row is used. A row with an empty, non-numeric, NaN or infinite\n"
    "value in a used column is an error (not skipped), reported as\n"
    "FILE:LINE:COLUMN with exit status 2; so is a missing column. Undefined\n"
    "results (r2 of a constant y) print as - or null.\n",
    0,
    NULL,
    NULL,
    0,
    PFI_ARGS_ANY,
    NULL};

enum sub { SUB_SPEARMAN, SUB_PEARSON, SUB_OLS, SUB_KRUSKAL, SUB_FDR };

static json_t *jnum(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static void print_num(const char *label, double v) {
  if (isfinite(v))
    printf("%-8s %.6g\n", label, v);
  else
    printf("%-8s -\n", label);
}

/* Column index of `name` or a located error. */
static int need_col(const struct pfi_table *t, const char *name,
                    struct pfi_error *err) {
  int c = pfi_table_find(t, name);
  if (c < 0)
    return pfi_error_setloc(err, PFI_EPARSE, t->name, 1, 1,
                            "missing column '%s'", name);
  /* A name the header holds twice is ambiguous: reading the first would
   * silently pick one of two columns. */
  for (size_t k = (size_t)c + 1; k < t->ncols; k++)
    if (strcmp(t->header[k], name) == 0)
      return pfi_error_setloc(err, PFI_EPARSE, t->name, 1, 1,
                              "column '%s' appears twice in the header "
                              "(columns %d and %zu)",
                              name, c + 1, k + 1);
  return c;
}

/* Reads column `col` of every row as finite doubles into a new array. */
static int read_col(const struct pfi_table *t, int col, double **out,
                    struct pfi_error *err) {
  double *v = malloc((t->nrows ? t->nrows : 1) * sizeof *v);
  if (!v)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  for (size_t r = 0; r < t->nrows; r++) {
    int rc = pfi_table_double(t, r, (size_t)col, &v[r], err);
    if (rc < 0) {
      free(v);
      return rc;
    }
  }
  *out = v;
  return 0;
}

/* Re-locates a statistics error at the file (whole-column problems such as
 * too few rows or a constant column have no better location). */
static int stat_fail(const struct pfi_table *t, struct pfi_error *err) {
  char msg[PFI_ERROR_MSG_MAX];
  snprintf(msg, sizeof msg, "%s", err->msg);
  pfi_error_setloc(err, err->code, t->name, 0, 0, "%s", msg);
  return pfi_cli_fail(err);
}

static int do_corr(const struct pfi_table *t, const char *xc, const char *yc,
                   int spearman, enum pfi_format fmt, struct pfi_error *err) {
  int ix = need_col(t, xc, err);
  if (ix < 0)
    return pfi_cli_fail(err);
  int iy = need_col(t, yc, err);
  if (iy < 0)
    return pfi_cli_fail(err);
  double *x = NULL, *y = NULL, r = 0, p = 0;
  int status = 0;
  if (read_col(t, ix, &x, err) < 0 || read_col(t, iy, &y, err) < 0) {
    status = pfi_cli_fail(err);
    goto out;
  }
  int rc = spearman ? pfi_stats_spearman(x, y, t->nrows, &r, &p, err)
                    : pfi_stats_pearson(x, y, t->nrows, &r, &p, err);
  if (rc < 0) {
    status = stat_fail(t, err);
    goto out;
  }
  const char *name = spearman ? "rho" : "r";
  if (fmt == PFI_FMT_JSON) {
    json_t *o = json_object();
    json_object_set_new(o, name, jnum(r));
    json_object_set_new(o, "p", jnum(p));
    json_object_set_new(o, "n", json_integer((json_int_t)t->nrows));
    status = pfi_cli_print_json(o);
  } else {
    print_num(name, r);
    print_num("p", p);
    printf("%-8s %zu\n", "n", t->nrows);
  }
out:
  free(x);
  free(y);
  return status;
}

/* --x as k column names (pointers into *copy, malloc'd, as *names is; the
 * caller frees both). 0 or an exit status, the message printed. */
static int parse_xlist(const char *xlist, char **copy, char ***names,
                       size_t *k, struct pfi_error *err) {
  *k = 1;
  for (const char *s = xlist; *s; s++)
    *k += *s == ',';
  *copy = strdup(xlist);
  *names = calloc(*k, sizeof **names);
  if (!*copy || !*names) {
    pfi_error_set(err, PFI_ENOMEM, "out of memory");
    return pfi_cli_fail(err);
  }
  char *p = *copy;
  for (size_t j = 0; j < *k; j++) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = '\0';
    while (*p == ' ')
      p++;
    if (!*p)
      return pfi_cli_usage("stats", "--x: empty column name in '%s'", xlist);
    (*names)[j] = p;
    for (size_t q = 0; q < j; q++)
      if (strcmp((*names)[q], p) == 0)
        return pfi_cli_usage("stats", "--x: column '%s' named twice", p);
    if (strcmp(p, "intercept") == 0)
      return pfi_cli_usage("stats",
                           "--x: 'intercept' is always fitted; it cannot "
                           "be a column name");
    p = comma ? comma + 1 : p + strlen(p);
  }
  return 0;
}

/* The design X (n x k, row-major) of the k columns and the response y,
 * both malloc'd (the caller frees them). 0 or an exit status, the message
 * printed. */
static int load_design(const struct pfi_table *t, const char *ycol,
                       char *const *names, size_t k, double **X, double **y,
                       struct pfi_error *err) {
  int iy = need_col(t, ycol, err);
  if (iy < 0)
    return pfi_cli_fail(err);
  int *cols = calloc(k, sizeof *cols);
  if (!cols) {
    pfi_error_set(err, PFI_ENOMEM, "out of memory");
    return pfi_cli_fail(err);
  }
  int status = 0;
  for (size_t j = 0; j < k && !status; j++)
    if ((cols[j] = need_col(t, names[j], err)) < 0)
      status = pfi_cli_fail(err);
  size_t n = t->nrows;
  if (!status && !(*X = malloc((n * k > 0 ? n * k : 1) * sizeof **X))) {
    pfi_error_set(err, PFI_ENOMEM, "out of memory");
    status = pfi_cli_fail(err);
  }
  if (!status && read_col(t, iy, y, err) < 0)
    status = pfi_cli_fail(err);
  for (size_t j = 0; j < k && !status; j++) {
    double *col = NULL;
    if (read_col(t, cols[j], &col, err) < 0)
      status = pfi_cli_fail(err);
    else
      for (size_t i = 0; i < n; i++)
        (*X)[i * k + j] = col[i];
    free(col);
  }
  free(cols);
  return status;
}

static int print_ols_json(const struct pfi_ols *m, char *const *names,
                          size_t k, size_t n) {
  json_t *o = json_object(), *coef = json_object(), *se = json_object(),
         *lev = json_array();
  json_object_set_new(coef, "intercept", jnum(m->coef[0]));
  json_object_set_new(se, "intercept", jnum(m->se[0]));
  for (size_t j = 0; j < k; j++) {
    /* Keys must be UTF-8 too, or the coefficient silently goes missing. */
    json_t *key = pfi_cli_json_str(names[j]);
    const char *ks = json_is_string(key) ? json_string_value(key) : "?";
    json_object_set_new(coef, ks, jnum(m->coef[j + 1]));
    json_object_set_new(se, ks, jnum(m->se[j + 1]));
    json_decref(key);
  }
  for (size_t i = 0; i < n; i++)
    json_array_append_new(lev, jnum(m->leverage[i]));
  json_object_set_new(o, "coef", coef);
  json_object_set_new(o, "se", se);
  json_object_set_new(o, "r2", jnum(m->r2));
  json_object_set_new(o, "adj_r2", jnum(m->adj_r2));
  json_object_set_new(o, "rmse", jnum(m->rmse));
  json_object_set_new(o, "n", json_integer((json_int_t)n));
  json_object_set_new(o, "leverage", lev);
  return pfi_cli_print_json(o);
}

/* The coefficients' table, the fit, and each row's leverage. */
static int print_ols_table(const struct pfi_table *t, const struct pfi_ols *m,
                           char *const *names, size_t k,
                           enum pfi_format fmt) {
  size_t n = t->nrows;
  /* The name column as wide as the widest name, 9 to 40 bytes. */
  static const struct pfi_restab_col cols[] = {
      {.name = "term", .kind = PFI_RESTAB_TEXT, .width = 9, .max_width = 40},
      {.name = "coef", .kind = PFI_RESTAB_NUM, .width = 14, .fixed = 1},
      {.name = "se", .kind = PFI_RESTAB_NUM, .width = 14, .fixed = 1},
  };
  struct pfi_restab tab;
  pfi_restab_init(&tab, cols, 3);
  for (size_t j = 0; j <= k; j++) {
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, 0, j ? names[j - 1] : "intercept");
    pfi_restab_num(&tab, 1, m->coef[j]);
    pfi_restab_num(&tab, 2, m->se[j]);
  }
  int status = pfi_cli_print_table(&tab, fmt);
  pfi_restab_release(&tab);
  printf("\n");
  print_num("r2", m->r2);
  print_num("adj_r2", m->adj_r2);
  print_num("rmse", m->rmse);
  printf("%-8s %zu\n", "n", n);
  static const struct pfi_restab_col lcols[] = {
      {.name = "line", .kind = PFI_RESTAB_INT, .align = PFI_RESTAB_LEFT,
       .width = 8, .fixed = 1},
      {.name = "leverage", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 6,
       .width = 10, .fixed = 1},
  };
  pfi_restab_init(&tab, lcols, 2);
  for (size_t i = 0; i < n; i++) {
    pfi_restab_row(&tab);
    pfi_restab_int(&tab, 0, t->line[i]);
    pfi_restab_num(&tab, 1, m->leverage[i]);
  }
  printf("\n");
  if (pfi_cli_print_table(&tab, fmt))
    status = PFI_EXIT_FAIL;
  pfi_restab_release(&tab);
  return status;
}

static int do_ols(const struct pfi_table *t, const char *ycol,
                  const char *xlist, enum pfi_format fmt,
                  struct pfi_error *err) {
  char *copy = NULL, **names = NULL;
  double *X = NULL, *y = NULL;
  size_t k;
  struct pfi_ols m;
  memset(&m, 0, sizeof m);
  int status = parse_xlist(xlist, &copy, &names, &k, err);
  if (!status)
    status = load_design(t, ycol, names, k, &X, &y, err);
  if (!status && pfi_ols_fit(X, t->nrows, k, y, &m, err) < 0)
    status = stat_fail(t, err);
  else if (!status && fmt == PFI_FMT_JSON)
    status = print_ols_json(&m, names, k, t->nrows);
  else if (!status)
    status = print_ols_table(t, &m, names, k, fmt);
  pfi_ols_release(&m);
  free(copy);
  free(names);
  free(X);
  free(y);
  return status;
}

/* Each row's group (grp[r]) and the groups' names (gname[0..*ng)), in
 * order of first appearance. 0 or an exit status, the message printed. */
static int group_rows(const struct pfi_table *t, int ig, const char *gcol,
                      size_t *grp, const char **gname, size_t *ng,
                      struct pfi_error *err) {
  /* A linear search is fine: the paper's designs have a handful of
   * groups. */
  for (size_t r = 0; r < t->nrows; r++) {
    const char *s = pfi_table_cell(t, r, (size_t)ig);
    if (!s || !*s) {
      long col = t->col[r * t->ncols + (size_t)ig];
      pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r], col ? col : 1,
                       "field '%s': empty group name", gcol);
      return pfi_cli_fail(err);
    }
    size_t g = 0;
    while (g < *ng && strcmp(gname[g], s) != 0)
      g++;
    if (g == *ng && *ng == PFI_STATS_KRUSKAL_MAX_GROUPS) {
      /* Checked here, where the row is known: one group per row (an
       * identifier column) would otherwise cost n^2 comparisons here and
       * n^2/2 Dunn pairs after. */
      long col = t->col[r * t->ncols + (size_t)ig];
      pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r], col ? col : 1,
                       "field '%s': more than %d distinct groups (is it an "
                       "identifier column?)",
                       gcol, PFI_STATS_KRUSKAL_MAX_GROUPS);
      return pfi_cli_fail(err);
    }
    if (g == *ng)
      gname[(*ng)++] = s;
    grp[r] = g;
  }
  return 0;
}

static int print_kruskal_json(const struct pfi_kruskal *kw,
                              const char *const *gname, size_t ng) {
  json_t *o = json_object(), *ga = json_array(), *da = json_array();
  json_object_set_new(o, "H", jnum(kw->H));
  json_object_set_new(o, "df", json_integer((json_int_t)kw->df));
  json_object_set_new(o, "p", jnum(kw->p));
  for (size_t g = 0; g < ng; g++)
    json_array_append_new(
        ga, json_pack("{sosIsoso}", "name", pfi_cli_json_str(gname[g]), "n",
                      (json_int_t)kw->n[g], "median", jnum(kw->median[g]),
                      "mean", jnum(kw->mean[g])));
  for (size_t q = 0; q < kw->npairs; q++) {
    const struct pfi_dunn_pair *pp = &kw->pairs[q];
    json_array_append_new(
        da, json_pack("{sososososo}", "a", pfi_cli_json_str(gname[pp->a]),
                      "b", pfi_cli_json_str(gname[pp->b]), "z", jnum(pp->z),
                      "p", jnum(pp->p), "p_holm", jnum(pp->p_holm)));
  }
  json_object_set_new(o, "groups", ga);
  json_object_set_new(o, "dunn", da);
  return pfi_cli_print_json(o);
}

/* The test, the groups' table and Dunn's pairs. */
static int print_kruskal_table(const struct pfi_kruskal *kw,
                               const char *const *gname, size_t ng,
                               enum pfi_format fmt) {
  int status = 0;
  print_num("H", kw->H);
  printf("%-8s %g\n", "df", kw->df);
  print_num("p", kw->p);
  int w = 5;
  for (size_t g = 0; g < ng; g++)
    if ((int)strlen(gname[g]) > w)
      w = (int)strlen(gname[g]) > 40 ? 40 : (int)strlen(gname[g]);
  /* Both tables' name columns are w wide (the widest group name, 5 to
   * 40 bytes), whichever names a column holds. */
  struct pfi_restab_col gcols[] = {
      {.name = "group", .kind = PFI_RESTAB_TEXT, .width = w, .fixed = 1},
      {.name = "n", .kind = PFI_RESTAB_INT, .width = 6, .fixed = 1},
      {.name = "median", .kind = PFI_RESTAB_NUM, .width = 12, .fixed = 1},
      {.name = "mean", .kind = PFI_RESTAB_NUM, .width = 12, .fixed = 1},
  };
  struct pfi_restab tab;
  pfi_restab_init(&tab, gcols, 4);
  for (size_t g = 0; g < ng; g++) {
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, 0, gname[g]);
    pfi_restab_int(&tab, 1, (long long)kw->n[g]);
    pfi_restab_num(&tab, 2, kw->median[g]);
    pfi_restab_num(&tab, 3, kw->mean[g]);
  }
  printf("\n");
  if (pfi_cli_print_table(&tab, fmt))
    status = PFI_EXIT_FAIL;
  pfi_restab_release(&tab);
  struct pfi_restab_col pcols[] = {
      {.name = "a", .kind = PFI_RESTAB_TEXT, .width = w, .fixed = 1},
      {.name = "b", .kind = PFI_RESTAB_TEXT, .width = w, .fixed = 1},
      {.name = "z", .kind = PFI_RESTAB_NUM, .style = 'f', .prec = 4,
       .width = 9, .fixed = 1},
      {.name = "p", .kind = PFI_RESTAB_NUM, .style = 'g', .prec = 4,
       .width = 10, .fixed = 1},
      {.name = "p_holm", .kind = PFI_RESTAB_NUM, .style = 'g', .prec = 4,
       .width = 10, .fixed = 1},
  };
  pfi_restab_init(&tab, pcols, 5);
  for (size_t q = 0; q < kw->npairs; q++) {
    const struct pfi_dunn_pair *pp = &kw->pairs[q];
    pfi_restab_row(&tab);
    pfi_restab_text(&tab, 0, gname[pp->a]);
    pfi_restab_text(&tab, 1, gname[pp->b]);
    pfi_restab_num(&tab, 2, pp->z);
    pfi_restab_num(&tab, 3, pp->p);
    pfi_restab_num(&tab, 4, pp->p_holm);
  }
  printf("\n");
  if (pfi_cli_print_table(&tab, fmt))
    status = PFI_EXIT_FAIL;
  pfi_restab_release(&tab);
  return status;
}

static int do_kruskal(const struct pfi_table *t, const char *gcol,
                      const char *vcol, enum pfi_format fmt,
                      struct pfi_error *err) {
  int ig = need_col(t, gcol, err);
  if (ig < 0)
    return pfi_cli_fail(err);
  int iv = need_col(t, vcol, err);
  if (iv < 0)
    return pfi_cli_fail(err);
  int status = 0;
  size_t n = t->nrows, ng = 0;
  double *v = NULL;
  size_t *grp = malloc((n ? n : 1) * sizeof *grp);
  const char **gname = malloc((n ? n : 1) * sizeof *gname);
  struct pfi_kruskal kw;
  memset(&kw, 0, sizeof kw);
  if (!grp || !gname) {
    pfi_error_set(err, PFI_ENOMEM, "out of memory");
    status = pfi_cli_fail(err);
  } else if (read_col(t, iv, &v, err) < 0) {
    status = pfi_cli_fail(err);
  } else if (!(status = group_rows(t, ig, gcol, grp, gname, &ng, err))) {
    if (pfi_stats_kruskal(v, grp, n, ng, &kw, err) < 0)
      status = stat_fail(t, err);
    else if (fmt == PFI_FMT_JSON)
      status = print_kruskal_json(&kw, gname, ng);
    else
      status = print_kruskal_table(&kw, gname, ng, fmt);
  }
  pfi_kruskal_release(&kw);
  free(v);
  free(grp);
  free(gname);
  return status;
}

static int do_fdr(const struct pfi_table *t, const char *pcol,
                  enum pfi_format fmt, struct pfi_error *err) {
  int ip = need_col(t, pcol, err);
  if (ip < 0)
    return pfi_cli_fail(err);
  int status = 0;
  double *p = NULL, *q = NULL;
  if (read_col(t, ip, &p, err) < 0) {
    status = pfi_cli_fail(err);
    goto out;
  }
  /* A p-value outside [0, 1] is bad input at its cell. */
  for (size_t r = 0; r < t->nrows; r++)
    if (!(p[r] >= 0 && p[r] <= 1)) {
      pfi_error_setloc(err, PFI_EPARSE, t->name, t->line[r],
                       t->col[r * t->ncols + (size_t)ip],
                       "field '%s': p-value %g outside [0, 1]", pcol, p[r]);
      status = pfi_cli_fail(err);
      goto out;
    }
  q = malloc((t->nrows ? t->nrows : 1) * sizeof *q);
  if (!q) {
    pfi_error_set(err, PFI_ENOMEM, "out of memory");
    status = pfi_cli_fail(err);
    goto out;
  }
  if (pfi_stats_bh(p, t->nrows, q, err) < 0) {
    status = stat_fail(t, err);
    goto out;
  }
  if (fmt == PFI_FMT_JSON) {
    json_t *o = json_object(), *qa = json_array();
    for (size_t r = 0; r < t->nrows; r++)
      json_array_append_new(qa, jnum(q[r]));
    json_object_set_new(o, "q", qa);
    status = pfi_cli_print_json(o);
  } else {
    static const struct pfi_restab_col cols[] = {
        {.name = "line", .kind = PFI_RESTAB_INT, .align = PFI_RESTAB_LEFT,
         .width = 8, .fixed = 1},
        {.name = "p", .kind = PFI_RESTAB_NUM, .width = 12, .fixed = 1},
        {.name = "q", .kind = PFI_RESTAB_NUM, .width = 12, .fixed = 1},
    };
    struct pfi_restab tab;
    pfi_restab_init(&tab, cols, 3);
    for (size_t r = 0; r < t->nrows; r++) {
      pfi_restab_row(&tab);
      pfi_restab_int(&tab, 0, t->line[r]);
      pfi_restab_num(&tab, 1, p[r] + 0.0);
      pfi_restab_num(&tab, 2, q[r]);
    }
    status = pfi_cli_print_table(&tab, fmt);
    pfi_restab_release(&tab);
  }
out:
  free(p);
  free(q);
  return status;
}

/* The test named by the first argument, and the arguments' count: the
 * test and a FILE. 0 or PFI_EXIT_USAGE. */
static int parse_test(int argc, char **argv, enum sub *sub) {
  if (optind >= argc)
    return pfi_cli_usage("stats", "missing test: spearman, pearson, ols, "
                                  "kruskal or fdr");
  const char *name = argv[optind];
  if (strcmp(name, "spearman") == 0)
    *sub = SUB_SPEARMAN;
  else if (strcmp(name, "pearson") == 0)
    *sub = SUB_PEARSON;
  else if (strcmp(name, "ols") == 0)
    *sub = SUB_OLS;
  else if (strcmp(name, "kruskal") == 0)
    *sub = SUB_KRUSKAL;
  else if (strcmp(name, "fdr") == 0)
    *sub = SUB_FDR;
  else
    return pfi_cli_usage("stats",
                         "unknown test '%s' (expected spearman, pearson, ols, "
                         "kruskal or fdr)",
                         name);
  if (optind + 1 >= argc)
    return pfi_cli_usage("stats", "%s: missing FILE (use - for standard input)",
                         name);
  if (optind + 2 < argc)
    return pfi_cli_usage("stats", "unexpected argument '%s'",
                         argv[optind + 2]);
  return 0;
}

/* The options the test needs are given, and no other test's: silently
 * ignoring --group on a correlation would hide a typo'd command. 0 or
 * PFI_EXIT_USAGE. */
static int check_test_options(enum sub sub, const char *name) {
  const char *need1 = NULL, *need2 = NULL;
  int ok_x = 0, ok_y = 0, ok_g = 0, ok_v = 0, ok_p = 0;
  switch (sub) {
  case SUB_SPEARMAN:
  case SUB_PEARSON:
  case SUB_OLS:
    ok_x = ok_y = 1;
    need1 = xc ? NULL : "--x";
    need2 = yc ? NULL : "--y";
    break;
  case SUB_KRUSKAL:
    ok_g = ok_v = 1;
    need1 = gc ? NULL : "--group";
    need2 = vc ? NULL : "--value";
    break;
  case SUB_FDR:
    ok_p = 1;
    need1 = pc ? NULL : "--p";
    break;
  }
  if (need1 || need2)
    return pfi_cli_usage("stats", "%s: missing option %s", name,
                         need1 ? need1 : need2);
  if ((xc && !ok_x) || (yc && !ok_y) || (gc && !ok_g) || (vc && !ok_v) ||
      (pc && !ok_p))
    return pfi_cli_usage("stats",
                         "%s: an option given does not apply to this "
                         "test",
                         name);
  return 0;
}

int cmd_stats(int argc, char **argv) {
  struct pfi_optparse op;
  int ost = pfi_opt_parse(&op, &help, argc, argv);
  if (ost != PFI_OPT_GO)
    return ost;
  enum sub sub = SUB_SPEARMAN;
  if (parse_test(argc, argv, &sub) ||
      check_test_options(sub, argv[optind]))
    return PFI_EXIT_USAGE;
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_table t;
  memset(&t, 0, sizeof t);
  if (pfi_table_load(&t, argv[optind + 1], &err) < 0) {
    int status = pfi_cli_fail(&err);
    /* A file that cannot be read is bad input to this command, like a
     * malformed one: exit status 2. */
    return err.code == PFI_EIO ? PFI_EXIT_USAGE : status;
  }
  int status = 0;
  switch (sub) {
  case SUB_SPEARMAN:
  case SUB_PEARSON:
    status = do_corr(&t, xc, yc, sub == SUB_SPEARMAN, fmt, &err);
    break;
  case SUB_OLS:
    status = do_ols(&t, yc, xc, fmt, &err);
    break;
  case SUB_KRUSKAL:
    status = do_kruskal(&t, gc, vc, fmt, &err);
    break;
  case SUB_FDR:
    status = do_fdr(&t, pc, fmt, &err);
    break;
  }
  pfi_table_release(&t);
  return status;
}
