/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: pfi_pfid_audit_table(), pfid's audit answer (JSON) as the
 * table `pfi ctl audit` prints, then printed as a terminal table (the
 * first byte picks the width: 0 full, else 20..275) and as CSV. Aborts
 * when the call returns anything but success, "not an audit answer" or
 * out of memory, or when a table it made does not print.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pfi/error.h"
#include "pfi/pfid.h"
#include "pfi/restab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 1 << 16)
    return 0;
  int width = data[0] == 0 ? 0 : 20 + data[0];
  struct pfi_restab t;
  struct pfi_error err;
  int rc = pfi_pfid_audit_table((const char *)data + 1, size - 1, &t, &err);
  if (rc == PFI_EPARSE || rc == PFI_ENOMEM)
    return 0;
  if (rc != 0)
    abort();
  for (int f = 0; f < 2; f++) {
    char *buf = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&buf, &n);
    if (!fp)
      break;
    int pr = f ? pfi_restab_print(&t, PFI_RESTAB_CSV, fp)
               : pfi_restab_print_term(&t, fp, width);
    fclose(fp);
    free(buf);
    if (pr != 0 && pr != PFI_ENOMEM)
      abort();
  }
  pfi_restab_release(&t);
  return 0;
}
