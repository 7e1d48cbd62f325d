/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The fleet tests' probe: does with given NATS credentials what an attacker
 * on a node might try, and says what NATS answered.
 *   pfi-fleet-probe URL USER PWFILE publish SUBJECT FILE
 *   pfi-fleet-probe URL USER PWFILE kvput KEY FILE
 * Exit 0: accepted; 3: refused (permissions); 1: another failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/transport.h"

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s URL USER PWFILE publish|kvput SUBJ FILE\n",
            argv[0]);
    return 2;
  }
  static char data[70000];
  FILE *fp = fopen(argv[6], "rb");
  if (!fp) {
    perror(argv[6]);
    return 2;
  }
  size_t n = fread(data, 1, sizeof data, fp);
  fclose(fp);
  struct pfi_nats_opts o = {argv[1],
                            strcmp(argv[2], "-") ? argv[2] : NULL,
                            strcmp(argv[3], "-") ? argv[3] : NULL,
                            "probe",
                            strcmp(argv[4], "kvput") == 0,
                            0,
                            2};
  struct pfi_nats *nc = NULL;
  struct pfi_error err;
  int rc = pfi_nats_open(&nc, &o, &err);
  if (rc == 0 && strcmp(argv[4], "publish") == 0)
    rc = pfi_nats_publish_checked(nc, argv[5], data, n, &err);
  else if (rc == 0)
    rc = pfi_nats_kv_put(nc, argv[5], data, n, NULL, &err);
  pfi_nats_close(nc);
  if (rc < 0) {
    fprintf(stderr, "probe: %s\n", err.msg);
    return rc == PFI_ENOPERM || strstr(err.msg, "ermission") ? 3 : 1;
  }
  printf("accepted\n");
  return 0;
}
