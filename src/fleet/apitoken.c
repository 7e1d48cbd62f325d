/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's named API tokens and their roles (pfi/apitoken.h). */
#include "pfi/apitoken.h"

#include <stdlib.h>
#include <string.h>

#include "pfi/http.h"

const char *pfi_api_role_name(enum pfi_api_role r) {
  switch (r) {
  case PFI_ROLE_READ:
    return "read";
  case PFI_ROLE_OPERATE:
    return "operate";
  case PFI_ROLE_ADMIN:
    return "admin";
  default:
    return "none";
  }
}

static int name_ok(const char *s, size_t n) {
  if (n == 0 || n >= PFI_API_TOKEN_NAME_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return 0;
  }
  return 1;
}

/* The next field of [*p, end): skips blanks, returns its start, *len. */
static const char *field(const char **p, const char *end, size_t *len) {
  const char *s = *p;
  while (s < end && (*s == ' ' || *s == '\t'))
    s++;
  const char *e = s;
  while (e < end && *e != ' ' && *e != '\t')
    e++;
  *len = (size_t)(e - s);
  *p = e;
  return s;
}

void pfi_api_tokens_free(struct pfi_api_token *t, size_t n) {
  if (!t)
    return;
  /* The tokens are secrets: cleared before the memory is given back. */
  volatile unsigned char *v = (volatile unsigned char *)t;
  for (size_t i = 0; i < n * sizeof *t; i++)
    v[i] = 0;
  free(t);
}

int pfi_api_tokens_parse(const char *text, size_t len, const char *file,
                         struct pfi_api_token **out, size_t *n,
                         struct pfi_error *err) {
  struct pfi_api_token *t = NULL;
  size_t k = 0;
  long line = 0;
  int rc = 0;
  const char *p = text, *end = text + len;
  *out = NULL;
  *n = 0;
  while (p < end && rc == 0) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *le = eol ? eol : end;
    line++;
    if (le > p && le[-1] == '\r')
      le--;
    const char *q = p, *ls = p;
    p = eol ? eol + 1 : end;
    size_t l0, l1, l2, l3;
    const char *f0 = field(&q, le, &l0);
    if (l0 == 0 || f0[0] == '#')
      continue;
    const char *f1 = field(&q, le, &l1), *f2 = field(&q, le, &l2);
    field(&q, le, &l3);
    if (l1 == 0 || l2 == 0 || l3 != 0) {
      rc = pfi_error_setloc(err, PFI_EPARSE, file, line, 0,
                            "expected NAME ROLE TOKEN (three fields)");
      break;
    }
    if (!name_ok(f0, l0)) {
      rc = pfi_error_setloc(err, PFI_EPARSE, file, line, 1,
                            "field NAME: expected 1..%d letters, digits, "
                            "'_', '-' or '.'",
                            PFI_API_TOKEN_NAME_MAX - 1);
      break;
    }
    enum pfi_api_role role = PFI_ROLE_NONE;
    for (int r = PFI_ROLE_READ; r <= PFI_ROLE_ADMIN; r++)
      if (strlen(pfi_api_role_name(r)) == l1 &&
          memcmp(pfi_api_role_name(r), f1, l1) == 0)
        role = (enum pfi_api_role)r;
    if (role == PFI_ROLE_NONE) {
      rc = pfi_error_setloc(err, PFI_EPARSE, file, line, (long)(f1 - ls) + 1,
                            "field ROLE: expected read, operate or admin");
      break;
    }
    int bad = l2 < PFI_API_TOKEN_MIN || l2 >= PFI_API_TOKEN_MAX;
    for (size_t i = 0; i < l2 && !bad; i++)
      bad = (unsigned char)f2[i] < 0x21 || (unsigned char)f2[i] == 0x7f;
    if (bad) {
      rc = pfi_error_setloc(err, PFI_EPARSE, file, line, (long)(f2 - ls) + 1,
                            "field TOKEN: expected %d..%d printable bytes",
                            PFI_API_TOKEN_MIN, PFI_API_TOKEN_MAX - 1);
      break;
    }
    for (size_t i = 0; i < k && rc == 0; i++) {
      if (strlen(t[i].name) == l0 && memcmp(t[i].name, f0, l0) == 0)
        rc = pfi_error_setloc(err, PFI_EPARSE, file, line, 1,
                              "field NAME: '%s' given twice", t[i].name);
      else if (strlen(t[i].token) == l2 && memcmp(t[i].token, f2, l2) == 0)
        rc = pfi_error_setloc(err, PFI_EPARSE, file, line, (long)(f2 - ls) + 1,
                              "field TOKEN: the same token as '%s'", t[i].name);
    }
    if (rc)
      break;
    if (k == PFI_API_TOKENS_MAX) {
      rc = pfi_error_setloc(err, PFI_EPARSE, file, line, 0,
                            "more than %d tokens", PFI_API_TOKENS_MAX);
      break;
    }
    struct pfi_api_token *nt = calloc(k + 1, sizeof *nt);
    if (!nt) {
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
      break;
    }
    if (k)
      memcpy(nt, t, k * sizeof *t);
    pfi_api_tokens_free(t, k);
    t = nt;
    memcpy(t[k].name, f0, l0);
    t[k].role = role;
    memcpy(t[k].token, f2, l2);
    k++;
  }
  if (rc == 0 && k == 0)
    rc = pfi_error_setloc(err, PFI_EPARSE, file, line, 0,
                          "no token (lines NAME ROLE TOKEN)");
  if (rc) {
    pfi_api_tokens_free(t, k);
    return rc;
  }
  *out = t;
  *n = k;
  return 0;
}

long pfi_api_token_find(const struct pfi_api_token *t, size_t n,
                        const char *auth) {
  long found = -1;
  /* Every token is compared, so that the time says nothing of which. */
  for (size_t i = 0; i < n; i++)
    if (pfi_http_bearer_ok(auth, t[i].token) && found < 0)
      found = (long)i;
  return found;
}
