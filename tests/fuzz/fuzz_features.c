/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Fuzz target: features files, feature expressions and the paper's
 * clusters, then a model fit and LOO/LOCO on whatever rows parse. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pfi/features.h"
#include "pfi/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct pfi_error err;
  struct pfi_features f;
  if (pfi_features_load_mem(&f, "fuzz", (const char *)data, size, &err) != 0)
    return 0;
  static const char *const exprs[] = {"dram_copy_product",
                                      "arch=moe",
                                      "task=ft",
                                      "log2(gpus)",
                                      "x=",
                                      "log2()",
                                      "=a",
                                      "gpus"};
  size_t n = f.t.nrows < 64 ? f.t.nrows : 64;
  double x[64], y[64];
  size_t rows[64], fold[64], m = 0;
  for (size_t r = 0; r < n; r++) {
    double v;
    for (size_t k = 0; k < sizeof exprs / sizeof *exprs; k++)
      (void)pfi_features_value(&f, r, exprs[k], &v, &err);
    (void)pfi_features_cluster(&f, r, &err);
    (void)pfi_features_archtask(&f, r, &err);
    (void)pfi_features_row(&f, pfi_features_job(&f, r));
    if (pfi_features_value(&f, r, "gpus", &x[m], &err) == 0 &&
        pfi_features_value(&f, r, "pfi", &y[m], &err) == 0) {
      rows[m] = r;
      fold[m] = m % 3;
      m++;
    }
  }
  (void)rows;
  if (m >= 2) {
    struct pfi_model mod;
    const char *names[] = {"gpus"};
    if (pfi_model_fit(x, m, 1, y, names, &mod, &err) == 0)
      pfi_model_release(&mod);
    struct pfi_eval ev;
    (void)pfi_model_eval_folds(x, m, 1, y, fold, 3, &ev, NULL, &err);
  }
  pfi_features_release(&f);
  return 0;
}
