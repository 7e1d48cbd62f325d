/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * Fuzz target: pfi_api_tokens_parse() (pfid --tokens). Aborts when a
 * parsed file holds a token with an unknown role, an empty or bad name, a
 * token outside its length bounds, two tokens of one name, or when a
 * token it holds is not found by pfi_api_token_find with its header.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/apitoken.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536)
    return 0;
  struct pfi_api_token *t = NULL;
  size_t n = 0;
  struct pfi_error err;
  if (pfi_api_tokens_parse((const char *)data, size, "fuzz", &t, &n, &err) <
      0) {
    if (t || n || !err.msg[0])
      abort();
    return 0;
  }
  if (!t || n == 0 || n > PFI_API_TOKENS_MAX)
    abort();
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(t[i].token);
    if (t[i].role < PFI_ROLE_READ || t[i].role > PFI_ROLE_ADMIN ||
        !t[i].name[0] || l < PFI_API_TOKEN_MIN || l >= PFI_API_TOKEN_MAX)
      abort();
    for (size_t j = 0; j < i; j++)
      if (strcmp(t[i].name, t[j].name) == 0 ||
          strcmp(t[i].token, t[j].token) == 0)
        abort();
    char auth[PFI_API_TOKEN_MAX + 8];
    snprintf(auth, sizeof auth, "Bearer %s", t[i].token);
    if (pfi_api_token_find(t, n, auth) != (long)i)
      abort();
  }
  pfi_api_tokens_free(t, n);
  return 0;
}
