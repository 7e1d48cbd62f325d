/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: pfi_restab_print_doc(), an API answer (JSON) as result
 * tables, as pfi ctl prints it. The first byte picks the terminal width
 * (0: full, else 20..275); the rest is the document, printed as terminal
 * tables and as CSV. Aborts when the call returns anything but success or
 * "not JSON", or prints something for a document it calls not JSON.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/error.h"
#include "pfi/restab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 1 << 16)
    return 0;
  int width = data[0] == 0 ? 0 : 20 + data[0];
  char *doc = malloc(size);
  if (!doc)
    return 0;
  memcpy(doc, data + 1, size - 1);
  doc[size - 1] = '\0';
  for (int f = 0; f < 2; f++) {
    char *buf = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&buf, &n);
    if (!fp)
      break;
    int rc = pfi_restab_print_doc(doc, f ? PFI_RESTAB_CSV : PFI_RESTAB_TERM,
                                  fp, width);
    fclose(fp);
    if (rc != 0 && rc != PFI_EPARSE && rc != PFI_ENOMEM)
      abort();
    if (rc == PFI_EPARSE && n != 0)
      abort();
    free(buf);
  }
  free(doc);
  return 0;
}
