/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: the table loader and every statistic on its columns, as
 * `pfi stats` uses them. Column 0 is read as group names, columns 1 and 2
 * as numbers (a row that does not parse ends the usable prefix), so that
 * constant, tied, tiny and extreme inputs reach the statistics.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_error err;
  struct pfi_table t;
  if (pfi_table_load_mem(&t, "fuzz", (const char *)data, size, &err) != 0)
    return 0;
  size_t n = t.nrows;
  double *x = malloc((n + 1) * sizeof *x), *y = malloc((n + 1) * sizeof *y);
  double *q = malloc((n + 1) * sizeof *q);
  size_t *g = malloc((n + 1) * sizeof *g);
  if (!x || !y || !q || !g || t.ncols < 3)
    goto out;
  size_t m = 0, ng = 0;
  for (; m < n; m++) {
    if (pfi_table_double(&t, m, 1, &x[m], &err) < 0 ||
        pfi_table_double(&t, m, 2, &y[m], &err) < 0)
      break;
    const char *name = pfi_table_cell(&t, m, 0);
    size_t k = 0;
    while (k < m && !(name && pfi_table_cell(&t, k, 0) &&
                      strcmp(pfi_table_cell(&t, k, 0), name) == 0))
      k++;
    g[m] = k < m ? g[k] : ng++;
  }
  /* Invariants of every successful result: what `pfi stats` prints is a
   * finite number in its range, never inf or nan. */
  double r, p;
  if (pfi_stats_spearman(x, y, m, &r, &p, &err) == 0 &&
      !(r >= -1 && r <= 1 && p >= 0 && p <= 1))
    abort();
  if (pfi_stats_pearson(x, y, m, &r, &p, &err) == 0 &&
      !(r >= -1 && r <= 1 && p >= 0 && p <= 1))
    abort();
  struct pfi_ols o;
  if (pfi_ols_fit(x, m, 1, y, &o, &err) == 0) {
    for (size_t j = 0; j < 2; j++)
      if (!isfinite(o.coef[j]) || !isfinite(o.se[j]))
        abort();
    for (size_t i = 0; i < m; i++)
      if (!isfinite(o.leverage[i]))
        abort();
    if (!isfinite(o.rmse))
      abort();
    (void)pfi_ols_predict(&o, x);
    pfi_ols_release(&o);
  }
  struct pfi_kruskal kw;
  if (m > 0 && pfi_stats_kruskal(y, g, m, ng, &kw, &err) == 0) {
    if (!isfinite(kw.H) || !(kw.p >= 0 && kw.p <= 1))
      abort();
    for (size_t k = 0; k < kw.ngroups; k++)
      if (!isfinite(kw.mean[k]) || !isfinite(kw.median[k]))
        abort();
    for (size_t k = 0; k < kw.npairs; k++)
      if (!isfinite(kw.pairs[k].z) ||
          !(kw.pairs[k].p_holm >= 0 && kw.pairs[k].p_holm <= 1))
        abort();
    pfi_kruskal_release(&kw);
  }
  for (size_t i = 0; i < m; i++)
    q[i] = fabs(x[i]) <= 1 ? fabs(x[i]) : 0.5;
  if (m > 0)
    (void)pfi_stats_bh(q, m, q, &err);
out:
  free(x);
  free(y);
  free(q);
  free(g);
  pfi_table_release(&t);
  return 0;
}
