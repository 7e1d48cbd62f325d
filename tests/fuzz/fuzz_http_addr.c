/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: the address readers of the TLS rules (pfi/http.h):
 * pfi_http_listen_local(), pfi_http_url_local() and
 * pfi_http_client_tls_check() without files. The input is one string.
 * Aborts when they disagree: a loopback URL must pass the check without
 * settings, a plain http URL that passes must be loopback, a loopback
 * listen address (HOST:PORT) must be loopback as http://HOST:PORT, and
 * each answers 0 or 1.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pfi/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256)
    return 0;
  char s[257], u[300];
  memcpy(s, data, size);
  s[size] = 0;
  int ll = pfi_http_listen_local(s), ul = pfi_http_url_local(s);
  if ((ll != 0 && ll != 1) || (ul != 0 && ul != 1))
    abort();
  struct pfi_error err;
  int rc = pfi_http_client_tls_check(s, NULL, &err);
  if (rc != 0 && rc != PFI_EINVAL)
    abort();
  if (ul && rc != 0)
    abort();
  if (rc == 0 && strncasecmp(s, "http://", 7) == 0 && !ul)
    abort();
  if (rc == 0 && strncasecmp(s, "http://", 7) != 0 &&
      strncasecmp(s, "https://", 8) != 0)
    abort();
  /* A listen address without the characters that end a URL's authority
   * (or add user information) reads as the same host in a URL. */
  if (ll && strncmp(s, "unix:", 5) != 0 && !strpbrk(s, "/?#@") &&
      strlen(s) == size) {
    memcpy(u, "http://", 7);
    memcpy(u + 7, s, size + 1);
    if (!pfi_http_url_local(u))
      abort();
  }
  return 0;
}
