/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Features files: one row per job, feature expressions over the columns. */
#include "pfi/features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int check_jobs(struct pfi_features *f, struct pfi_error *err) {
  f->job_col = pfi_table_find(&f->t, "job");
  if (f->job_col < 0)
    return pfi_error_setloc(err, PFI_EPARSE, f->t.name, 1, 1,
                            "features file has no 'job' column");
  size_t n = f->t.nrows;
  size_t *ix = malloc((n + 1) * sizeof *ix);
  if (!ix)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  int rc = 0;
  for (size_t r = 0; r < n; r++) {
    const char *j = pfi_table_cell(&f->t, r, (size_t)f->job_col);
    if (!j || !*j) {
      rc = pfi_error_setloc(err, PFI_EPARSE, f->t.name, f->t.line[r],
                            f->t.col[r * f->t.ncols + f->job_col]
                                ? f->t.col[r * f->t.ncols + f->job_col]
                                : 1,
                            "empty job id");
      goto out;
    }
  }
  /* Duplicates: sort row indices by id (insertion into a sorted copy would
   * be quadratic on large files). */
  for (size_t r = 0; r < n; r++)
    ix[r] = r;
  const struct pfi_features *ff = f;
  /* qsort has no context argument: a small merge sort instead. */
  size_t *tmp = malloc((n + 1) * sizeof *tmp);
  if (!tmp) {
    rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t w = 1; w < n; w *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * w) {
      size_t mid = lo + w < n ? lo + w : n,
             hi = lo + 2 * w < n ? lo + 2 * w : n;
      size_t a = lo, b = mid, k = lo;
      while (a < mid && b < hi) {
        const char *sa = pfi_table_cell(&ff->t, ix[a], (size_t)ff->job_col);
        const char *sb = pfi_table_cell(&ff->t, ix[b], (size_t)ff->job_col);
        tmp[k++] = strcmp(sa, sb) <= 0 ? ix[a++] : ix[b++];
      }
      while (a < mid)
        tmp[k++] = ix[a++];
      while (b < hi)
        tmp[k++] = ix[b++];
    }
    memcpy(ix, tmp, n * sizeof *ix);
  }
  free(tmp);
  for (size_t k = 1; k < n; k++) {
    const char *a = pfi_table_cell(&f->t, ix[k - 1], (size_t)f->job_col);
    const char *b = pfi_table_cell(&f->t, ix[k], (size_t)f->job_col);
    if (strcmp(a, b) == 0) {
      size_t later = ix[k] > ix[k - 1] ? ix[k] : ix[k - 1];
      size_t first = ix[k] > ix[k - 1] ? ix[k - 1] : ix[k];
      rc = pfi_error_setloc(err, PFI_EPARSE, f->t.name, f->t.line[later],
                            f->t.col[later * f->t.ncols + f->job_col],
                            "duplicate job '%s' (first on line %ld)", b,
                            f->t.line[first]);
      goto out;
    }
  }
out:
  if (rc < 0)
    free(ix);
  else
    f->by_job = ix;
  return rc;
}

int pfi_features_load(struct pfi_features *f, const char *path,
                      struct pfi_error *err) {
  memset(f, 0, sizeof *f);
  int rc = pfi_table_load(&f->t, path, err);
  if (rc < 0)
    return rc;
  if ((rc = check_jobs(f, err)) < 0)
    pfi_features_release(f);
  return rc;
}

int pfi_features_load_mem(struct pfi_features *f, const char *name,
                          const char *data, size_t len, struct pfi_error *err) {
  memset(f, 0, sizeof *f);
  int rc = pfi_table_load_mem(&f->t, name, data, len, err);
  if (rc < 0)
    return rc;
  if ((rc = check_jobs(f, err)) < 0)
    pfi_features_release(f);
  return rc;
}

void pfi_features_release(struct pfi_features *f) {
  if (!f)
    return;
  pfi_table_release(&f->t);
  free(f->by_job);
  memset(f, 0, sizeof *f);
}

long pfi_features_row(const struct pfi_features *f, const char *job) {
  size_t lo = 0, hi = f->t.nrows;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *j = pfi_table_cell(&f->t, f->by_job[mid], (size_t)f->job_col);
    int c = strcmp(j, job);
    if (c == 0)
      return (long)f->by_job[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

const char *pfi_features_job(const struct pfi_features *f, size_t r) {
  return pfi_table_cell(&f->t, r, (size_t)f->job_col);
}

/* Splits an expression into its column name (copied into col) and kind:
 * 0 plain, 1 indicator (value in *val), 2 log2. Returns -1 when malformed. */
static int parse_expr(const char *expr, char *col, size_t ncol,
                      const char **val) {
  size_t n = strlen(expr);
  *val = NULL;
  if (n > 6 && strncmp(expr, "log2(", 5) == 0 && expr[n - 1] == ')') {
    if (n - 6 >= ncol)
      return -1;
    memcpy(col, expr + 5, n - 6);
    col[n - 6] = '\0';
    return col[0] ? 2 : -1;
  }
  const char *eq = strchr(expr, '=');
  if (eq) {
    size_t k = (size_t)(eq - expr);
    if (k == 0 || k >= ncol || !eq[1])
      return -1;
    memcpy(col, expr, k);
    col[k] = '\0';
    *val = eq + 1;
    return 1;
  }
  if (n == 0 || n >= ncol)
    return -1;
  memcpy(col, expr, n + 1);
  return 0;
}

int pfi_features_has(const struct pfi_features *f, const char *expr) {
  char col[256];
  const char *val;
  if (parse_expr(expr, col, sizeof col, &val) < 0)
    return 0;
  return pfi_table_find(&f->t, col) >= 0;
}

int pfi_features_value(const struct pfi_features *f, size_t r, const char *expr,
                       double *out, struct pfi_error *err) {
  char col[256];
  const char *val;
  int kind = parse_expr(expr, col, sizeof col, &val);
  if (kind < 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "bad feature '%s' (use COL, COL=VALUE or log2(COL))",
                         expr);
  int c = pfi_table_find(&f->t, col);
  if (c < 0) {
    char cols[280];
    pfi_csv_columns((const char *const *)f->t.header, f->t.ncols, cols,
                    sizeof cols);
    return pfi_error_set(err, PFI_ENOTFOUND,
                         "features file %s has no column '%s'; its header has "
                         "%s",
                         f->t.name, col, cols);
  }
  if (kind == 1) {
    const char *s = pfi_table_cell(&f->t, r, (size_t)c);
    *out = (s && strcasecmp(s, val) == 0) ? 1.0 : 0.0;
    return 0;
  }
  double v;
  int rc = pfi_table_double(&f->t, r, (size_t)c, &v, err);
  if (rc < 0)
    return rc;
  if (kind == 2) {
    if (!(v > 0))
      return pfi_error_setloc(err, PFI_EINVAL, f->t.name, f->t.line[r],
                              f->t.col[r * f->t.ncols + c],
                              "%s: log2 of a value that is not positive (%g)",
                              col, v);
    v = log2(v);
  }
  *out = v;
  return 0;
}

const char *pfi_features_text(const struct pfi_features *f, size_t r,
                              const char *col) {
  int c = pfi_table_find(&f->t, col);
  if (c < 0)
    return NULL;
  return pfi_table_cell(&f->t, r, (size_t)c);
}

int pfi_features_class(const struct pfi_features *f, size_t r, int *is_moe,
                       int *is_ft, struct pfi_error *err) {
  const char *a = pfi_features_text(f, r, "arch");
  const char *t = pfi_features_text(f, r, "task");
  if (pfi_table_find(&f->t, "arch") < 0 || pfi_table_find(&f->t, "task") < 0)
    return pfi_error_set(err, PFI_ENOTFOUND,
                         "features file %s needs 'arch' and 'task' columns",
                         f->t.name);
  *is_moe = a && strcasecmp(a, "moe") == 0;
  static const char *const ft[] = {"ft",       "sft",         "lora",
                                   "finetune", "fine-tuning", NULL};
  *is_ft = 0;
  for (size_t k = 0; t && ft[k]; k++)
    if (strcasecmp(t, ft[k]) == 0)
      *is_ft = 1;
  return 0;
}

const char *pfi_features_cluster(const struct pfi_features *f, size_t r,
                                 struct pfi_error *err) {
  int moe, ftk;
  if (pfi_features_class(f, r, &moe, &ftk, err) < 0)
    return NULL;
  if (!moe)
    return "dense";
  return ftk ? "moe-ft" : "moe-pt";
}

const char *pfi_features_archtask(const struct pfi_features *f, size_t r,
                                  struct pfi_error *err) {
  int moe, ftk;
  if (pfi_features_class(f, r, &moe, &ftk, err) < 0)
    return NULL;
  if (!moe)
    return ftk ? "dense-ft" : "dense-pt";
  return ftk ? "moe-ft" : "moe-pt";
}
