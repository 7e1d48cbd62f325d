/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The secret reader: a password or token file's first line, read only
 * when no one but its owner can read or change it. Used by the NATS
 * transport, pfid's API tokens, the VEN and `pfi ctl` alike. */
#ifndef PFI_SECRET_H
#define PFI_SECRET_H

#include <stddef.h>

#include "pfi/error.h"

/* Reads a secret (password, token): the first line of `path`, which must
 * be a regular file not readable or writable by group or others (nor
 * through a POSIX ACL, but by the reader). "cred:NAME" is NAME in
 * $CREDENTIALS_DIRECTORY (systemd's LoadCredential=). Symlinks (a
 * Kubernetes Secret volume's) are followed only through directories owned
 * by root or the reader and not writable by others (sticky ones aside),
 * to a file owned by root or the reader (docs/security.md "Secrets").
 * Returns its length, PFI_ENOPERM (mode, owner), PFI_EINVAL (a cred: name
 * without $CREDENTIALS_DIRECTORY), PFI_EIO, PFI_EPARSE (empty, too long). */
int pfi_read_secret(const char *path, char *buf, size_t n,
                    struct pfi_error *err);
/* As pfi_read_secret, the whole file (at most n - 2 bytes, no NUL byte,
 * NUL-terminated in buf): a file of several secrets (pfid --tokens). */
int pfi_read_secret_file(const char *path, char *buf, size_t n,
                         struct pfi_error *err);

#endif
