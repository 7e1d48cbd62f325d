/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * The NATS connection's options, shared by pfid and pfi-agent: the rows of
 * their option tables (src/base/opt.h) bound to a struct pfi_nats_opts, and
 * the rules between them. What they do is include/pfi/transport.h's; the
 * production setting (TLS and an nkey or credentials file) is
 * docs/fleet.md "Security".
 */
#ifndef PFI_CLI_NATS_OPT_H
#define PFI_CLI_NATS_OPT_H

#include "opt.h"
#include "pfi/transport.h"

/* The rows, bound to `no` (a struct pfi_nats_opts *); user_help: the
 * daemon's words for --user (its default differs). */
#define NATS_OPTS(no, user_help)                                               \
  PFI_OPT_STRING("nats", 0, &(no)->url, "URL",                                 \
                 "NATS server, or a cluster's servers comma-separated "        \
                 "(default nats://127.0.0.1:4222); tls://HOST:PORT for TLS. "  \
                 "Plain text only to loopback, or with --nats-insecure"),      \
      PFI_OPT_STRING("user", 0, &(no)->user, "USER", user_help),               \
      PFI_OPT_STRING("password-file", 0, &(no)->password_file, "FILE",         \
                     "the user's password (mode 0600)"),                       \
      PFI_OPT_STRING("nats-creds", 0, &(no)->creds_file, "FILE",               \
                     "a NATS account's user: its credentials file (user JWT "  \
                     "and nkey seed, as nsc writes it; mode 0600)"),           \
      PFI_OPT_STRING("nats-nkey", 0, &(no)->nkey_file, "FILE",                 \
                     "an nkey user: its seed (first line, SU...; mode 0600), " \
                     "--user its public key (U...)"),                          \
      PFI_OPT_STRING("nats-ca", 0, &(no)->tls_ca, "FILE",                      \
                     "TLS: the CA certificates (PEM) the servers' "            \
                     "certificates must chain to (default: the system's)"),    \
      PFI_OPT_STRING("nats-cert", 0, &(no)->tls_cert, "FILE",                  \
                     "TLS: this client's certificate chain (PEM), for "        \
                     "servers that verify clients (mTLS); with --nats-key"),   \
      PFI_OPT_STRING("nats-key", 0, &(no)->tls_key, "FILE",                    \
                     "TLS: the private key of --nats-cert (PEM, mode 0600)"),  \
      PFI_OPT_STRING("nats-server-name", 0, &(no)->tls_name, "NAME",           \
                     "TLS: the name the servers' certificates must carry "     \
                     "(default: each server's, the host of the URL it was "    \
                     "reached by)"),                                           \
      PFI_OPT_FLAG("nats-insecure", 0, &(no)->insecure,                        \
                   "allow plain text to a NATS server not on loopback "        \
                   "(passwords and assignments readable on the network)")

/* The rules between them, rows of a struct pfi_opt_rule list. */
#define NATS_OPT_RULES                                                         \
  PFI_RULE_EXCLUSIVE("password-file", "nats-creds", "nats-nkey"),              \
      PFI_RULE_TOGETHER("nats-cert", "nats-key"),                              \
      PFI_RULE_EXCLUSIVE("nats-insecure", "nats-ca"),                          \
      PFI_RULE_EXCLUSIVE("nats-insecure", "nats-cert"),                        \
      PFI_RULE_NEEDS("nats-nkey", "user")

#endif
