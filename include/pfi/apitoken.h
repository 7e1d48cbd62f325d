/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * pfid's API tokens (pfid --tokens, docs/security.md "API tokens"): named
 * bearer tokens, each with a role. The file is a secret (read by
 * pfi_read_secret's rules by the caller), one token a line:
 *
 *     # NAME    ROLE     TOKEN
 *     grafana   read     4f9c...
 *     bridge    operate  8a1e...
 *     oncall    admin    c0d3...
 *
 * Blank lines and lines starting with '#' are skipped.
 */
#ifndef PFI_APITOKEN_H
#define PFI_APITOKEN_H

#include <stddef.h>

#include "pfi/error.h"

/* What a token may do: each role may do what the ones below it may. */
enum pfi_api_role {
  PFI_ROLE_NONE = 0,
  PFI_ROLE_READ = 1,    /* GET: status, nodes, jobs, events, records... */
  PFI_ROLE_OPERATE = 2, /* and submit or cancel events, set tiers */
  PFI_ROLE_ADMIN = 3    /* and read the audit trail of mutations */
};

#define PFI_API_TOKEN_NAME_MAX 64 /* with its NUL */
#define PFI_API_TOKEN_MAX 256     /* with its NUL */
#define PFI_API_TOKEN_MIN 16      /* shortest token accepted, bytes */
#define PFI_API_TOKENS_MAX 256    /* tokens in one file */

struct pfi_api_token {
  char name[PFI_API_TOKEN_NAME_MAX]; /* letters, digits, '_', '-', '.' */
  enum pfi_api_role role;
  char token[PFI_API_TOKEN_MAX]; /* 16..255 printable bytes, no space */
};

/* "read", "operate", "admin"; "none" for PFI_ROLE_NONE. */
const char *pfi_api_role_name(enum pfi_api_role r);

/*
 * Parses a tokens file's text (`len` bytes, `file` names it in errors)
 * into *out (malloc'd, freed by the caller with pfi_api_tokens_free,
 * which also clears the tokens) and *n. Returns 0, PFI_EPARSE (err names
 * the file, line and field: a line without three fields, a bad name, an
 * unknown role, a token too short, long or with a control byte, a name or
 * token given twice, more than PFI_API_TOKENS_MAX, none at all) or
 * PFI_ENOMEM.
 */
int pfi_api_tokens_parse(const char *text, size_t len, const char *file,
                         struct pfi_api_token **out, size_t *n,
                         struct pfi_error *err);
void pfi_api_tokens_free(struct pfi_api_token *t, size_t n);

/*
 * The token an Authorization header ("Bearer TOKEN") names, compared with
 * every one in time independent of where they differ: its index, or -1
 * (no header, not Bearer, no such token).
 */
long pfi_api_token_find(const struct pfi_api_token *t, size_t n,
                        const char *auth);

#endif
