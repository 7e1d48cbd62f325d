/* SPDX-License-Identifier: GPL-3.0-or-later */
/* `pfi predict`: apply a saved PFI model to a features file. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pfi/features.h"
#include "pfi/model.h"

static const char usage_text[] =
    "usage: pfi predict MODEL.json FEATURES.csv [--format F]\n"
    "\n"
    "Predicts each job's PFI with a model saved by 'pfi fit --output' from\n"
    "the features of its uncapped run (FEATURES.csv: a job column and the\n"
    "model's feature columns). A missing column or a bad cell is an error\n"
    "naming the file, line and column.\n"
    "\n"
    "Options:\n"
    "  --format F   table (default), csv or json (an array of {job, pfi})\n"
    "  -h, --help   this text\n";

int cmd_predict(int argc, char **argv) {
  static const struct option opts[] = {{"format", required_argument, 0, 'F'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  enum pfi_format fmt = PFI_FMT_TABLE;
  optind = 0;
  opterr = 0;
  int o;
  while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (o) {
    case 'F':
      if (pfi_cli_format("predict", optarg,
                         PFI_FMT_ALLOW_TABLE | PFI_FMT_ALLOW_CSV |
                             PFI_FMT_ALLOW_JSON,
                         &fmt))
        return PFI_EXIT_USAGE;
      break;
    case 'h':
      fputs(usage_text, stdout);
      return PFI_EXIT_OK;
    default:
      return pfi_cli_usage("predict", "unknown or incomplete option '%s'",
                           argv[optind - 1]);
    }
  }
  if (optind + 2 != argc)
    return pfi_cli_usage("predict", "expected MODEL.json FEATURES.csv");
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_model m;
  struct pfi_features f;
  if (pfi_model_load(&m, argv[optind], &err) < 0)
    return pfi_cli_fail(&err);
  if (pfi_features_load(&f, argv[optind + 1], &err) < 0) {
    pfi_model_release(&m);
    return pfi_cli_fail(&err);
  }
  int status = PFI_EXIT_OK;
  size_t n = f.t.nrows;
  double *x = malloc((m.k + 1) * sizeof *x);
  double *pred = malloc((n + 1) * sizeof *pred);
  if (!x || !pred) {
    pfi_error_set(&err, PFI_ENOMEM, "out of memory");
    goto fail;
  }
  for (size_t r = 0; r < n; r++) {
    if (pfi_model_design(&f, &r, 1, (const char *const *)m.features, m.k, x,
                         &err) < 0) {
      if (err.code == PFI_ENOTFOUND)
        err.code = PFI_EPARSE; /* a column the model needs: bad input */
      goto fail;
    }
    pred[r] = pfi_model_predict(&m, x);
  }
  if (fmt == PFI_FMT_JSON) {
    json_t *a = json_array();
    for (size_t r = 0; r < n; r++) {
      json_t *e = json_object();
      json_object_set_new(e, "job", json_string(pfi_features_job(&f, r)));
      json_object_set_new(e, "pfi", json_real(pred[r]));
      json_array_append_new(a, e);
    }
    if (pfi_cli_print_json(a))
      status = PFI_EXIT_FAIL;
  } else if (fmt == PFI_FMT_CSV) {
    printf("job,pfi\n");
    for (size_t r = 0; r < n; r++)
      printf("%s,%.6f\n", pfi_features_job(&f, r), pred[r]);
  } else {
    printf("%-40s %10s\n", "job", "pfi");
    for (size_t r = 0; r < n; r++)
      printf("%-40s %10.3f\n", pfi_features_job(&f, r), pred[r]);
  }
  goto out;
fail:
  status = pfi_cli_fail(&err);
out:
  free(x);
  free(pred);
  pfi_model_release(&m);
  pfi_features_release(&f);
  return status;
}
