/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The NATS transport's servers, URLs and security: the options' rules,
 * the start-up description, TLS, client certificates, nkeys and
 * credentials files. */
#include "transport_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int pfi_nats_servers_split(const char *list, char *buf, size_t n,
                           const char **url, int max, struct pfi_error *err) {
  size_t len = list ? strlen(list) : 0;
  if (!list || !buf || len >= n)
    return pfi_error_set(err, PFI_EINVAL, "--nats: list longer than %zu bytes",
                         n ? n - 1 : 0);
  memcpy(buf, list, len + 1);
  int k = 0;
  for (char *u = buf; u;) {
    char *comma = strchr(u, ',');
    if (comma)
      *comma = 0;
    while (*u == ' ')
      u++;
    size_t m = strlen(u);
    while (m > 0 && u[m - 1] == ' ')
      u[--m] = 0;
    if (m) {
      if (k == max)
        return pfi_error_set(err, PFI_EINVAL,
                             "--nats: more than %d servers in '%s'", max, list);
      url[k++] = u;
    }
    u = comma ? comma + 1 : NULL;
  }
  if (!k)
    return pfi_error_set(err, PFI_EINVAL, "--nats: no server URL in '%s'",
                         list);
  return k;
}

/* The servers of pfi_nats_opts.url into the client's options: it connects
 * to one of them (in random order: agents spread over a cluster) and, when
 * that one is lost, reconnects to the others. Returns the count. */
int pfi__nats_set_servers(natsOptions *opts, const char *list,
                       struct pfi_error *err) {
  char buf[4096];
  const char *url[PFI_NATS_SERVERS_MAX];
  int n = pfi_nats_servers_split(list, buf, sizeof buf, url,
                                 PFI_NATS_SERVERS_MAX, err);
  if (n < 0)
    return n;
  natsStatus s = n == 1 ? natsOptions_SetURL(opts, url[0])
                        : natsOptions_SetServers(opts, url, n);
  if (s != NATS_OK)
    return pfi__nats_err(err, s, list);
  return n;
}

int pfi_nats_url_host(const char *url, char *host, size_t n,
                      struct pfi_error *err) {
  const char *p = url ? url : "";
  const char *scheme = strstr(p, "://");
  if (scheme)
    p = scheme + 3;
  /* The authority ends at the first '/'; user info before its last '@'. */
  size_t alen = strcspn(p, "/?#");
  for (size_t i = alen; i > 0; i--)
    if (p[i - 1] == '@') {
      p += i;
      alen -= i;
      break;
    }
  size_t len;
  if (alen && *p == '[') {
    const char *rb = memchr(p, ']', alen);
    if (!rb)
      return pfi_error_set(err, PFI_EINVAL, "--nats: '%s': no ']' after '['",
                           url ? url : "");
    p++;
    len = (size_t)(rb - p);
  } else {
    const char *colon = memchr(p, ':', alen);
    len = colon ? (size_t)(colon - p) : alen;
  }
  if (len == 0)
    return pfi_error_set(err, PFI_EINVAL, "--nats: '%s': no host",
                         url ? url : "");
  if (len >= n)
    return pfi_error_set(err, PFI_EINVAL, "--nats: '%s': host too long",
                         url ? url : "");
  memcpy(host, p, len);
  host[len] = 0;
  return (int)len;
}

int pfi_nats_host_loopback(const char *h) {
  if (!h)
    return 0;
  if (strcasecmp(h, "localhost") == 0 || strcmp(h, "::1") == 0)
    return 1;
  /* 127.a.b.c: four decimal parts of at most three digits, each <= 255. */
  if (strncmp(h, "127.", 4) != 0)
    return 0;
  int parts = 0;
  for (const char *q = h; *q;) {
    int v = 0, d = 0;
    while (*q >= '0' && *q <= '9' && d < 4) {
      v = 10 * v + (*q++ - '0');
      d++;
    }
    if (!d || d > 3 || v > 255 || ++parts > 4)
      return 0;
    if (*q == '.' && q[1])
      q++;
    else if (*q)
      return 0;
  }
  return parts == 4;
}

static int is_ip(const char *h) {
  /* Dotted decimal or any form with ':' (IPv6): not a DNS name. */
  if (strchr(h, ':'))
    return 1;
  for (const char *q = h; *q; q++)
    if (!((*q >= '0' && *q <= '9') || *q == '.'))
      return 0;
  return 1;
}

/* What pfi_nats_describe and pfi_nats_open share: the checks, whether TLS
 * is on, the certificates' expected name (name, n bytes; "" none), the
 * first host that is not on loopback (remote, n bytes; "" none). */
int pfi__nats_check_opts(const struct pfi_nats_opts *o, int *tls, char *name,
                      char *remote, size_t n, struct pfi_error *err) {
  char buf[4096], host[256];
  const char *url[PFI_NATS_SERVERS_MAX];
  int k = pfi_nats_servers_split(o->url ? o->url : "nats://127.0.0.1:4222", buf,
                                 sizeof buf, url, PFI_NATS_SERVERS_MAX, err);
  if (k < 0)
    return k;
  int ways = !!o->password_file + !!o->creds_file + !!o->nkey_file;
  if (ways > 1)
    return pfi_error_set(err, PFI_EINVAL,
                         "--password-file, --nats-creds and --nats-nkey: at "
                         "most one of them");
  if (!o->tls_cert != !o->tls_key)
    return pfi_error_set(err, PFI_EINVAL,
                         "--nats-cert and --nats-key go together");
  if (o->nkey_file && (!o->user || o->user[0] != 'U' || strlen(o->user) != 56))
    return pfi_error_set(err, PFI_EINVAL,
                         "--nats-nkey: --user must be the nkey's public key "
                         "(56 characters, U...), not '%s'",
                         o->user ? o->user : "");
  *tls = o->tls_ca || o->tls_cert || o->tls_name;
  name[0] = remote[0] = 0;
  int same = 1;
  for (int i = 0; i < k; i++) {
    if (strncasecmp(url[i], "tls://", 6) == 0)
      *tls = 1;
    int rc = pfi_nats_url_host(url[i], host, sizeof host, err);
    if (rc < 0)
      return rc;
    if (!pfi_nats_host_loopback(host) && !remote[0])
      snprintf(remote, n, "%s", host);
    if (i == 0)
      snprintf(name, n, "%s", host);
    else if (strcasecmp(name, host) != 0)
      same = 0;
  }
  if (!same || is_ip(name))
    name[0] = 0;
  if (o->tls_name)
    snprintf(name, n, "%s", o->tls_name);
  if (!*tls && remote[0] && !o->insecure)
    return pfi_error_set(err, PFI_EINVAL,
                         "--nats: %s is not on loopback and the connection "
                         "would be plain text: give the servers' CA "
                         "(--nats-ca) or a tls:// URL, or --nats-insecure",
                         remote);
  return 0;
}

int pfi_nats_describe(const struct pfi_nats_opts *o, char *out, size_t n,
                      struct pfi_error *err) {
  int tls;
  char name[256], remote[256];
  int rc = pfi__nats_check_opts(o, &tls, name, remote, sizeof name, err);
  if (rc < 0)
    return rc;
  const char *who = o->creds_file      ? ", credentials file"
                    : o->nkey_file     ? ", nkey user "
                    : o->password_file ? ", user "
                                       : "";
  const char *user = o->nkey_file || o->password_file ? o->user : "";
  if (tls)
    snprintf(out, n, "TLS, server certificates from %s%s%s%s%s%s",
             o->tls_ca ? o->tls_ca : "the system's CAs",
             name[0] ? " for " : ", each for its URL's host",
             name[0] ? name : "", o->tls_cert ? ", client certificate" : "",
             who, user ? user : "");
  else if (remote[0])
    snprintf(out, n, "PLAIN TEXT to %s (--nats-insecure)%s%s", remote, who,
             user ? user : "");
  else
    snprintf(out, n, "plain text (loopback)%s%s", who, user ? user : "");
  return 0;
}

/* Reads a file whole (at most n - 1 bytes) into buf, NUL-terminated. */
static int read_small(const char *path, char *buf, size_t n,
                      struct pfi_error *err) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return pfi_error_set(err, PFI_EIO, "%s: %s", path, strerror(errno));
  size_t k = fread(buf, 1, n - 1, fp);
  int bad = ferror(fp) || (k == n - 1 && fgetc(fp) != EOF);
  fclose(fp);
  if (bad)
    return pfi_error_set(err, PFI_EIO, "%s: unreadable or over %zu bytes", path,
                         n - 1);
  buf[k] = 0;
  return (int)k;
}

/* natsOptions_SetNKey's signer: the nonce signed with the seed read at
 * open. */
static natsStatus on_sign(char **txt, unsigned char **sig, int *len,
                          const char *nonce, void *closure) {
  (void)txt;
  struct pfi_nats *p = closure;
  return nats_Sign(p->seed, nonce, sig, len);
}

/* A connection the server refused for good: TLS (its certificate, ours),
 * the credentials. Not retried. Over TLS 1.3 a server that refuses the
 * client's certificate, or its lack of one, does so after the client's
 * handshake is done: the client then reads an alert (an I/O error) or
 * nothing (a protocol error: no answer to its CONNECT). */
int pfi__nats_refused_for_good(natsStatus s, int tls) {
  return s == NATS_SSL_ERROR || s == NATS_CONNECTION_AUTH_FAILED ||
         s == NATS_NOT_PERMITTED || s == NATS_SECURE_CONNECTION_WANTED ||
         s == NATS_SECURE_CONNECTION_REQUIRED ||
         (tls && (s == NATS_PROTOCOL_ERROR || s == NATS_IO_ERROR));
}

/* A certificate or key file the TLS library refused: PFI_EPARSE naming it
 * with the library's words. */
static int bad_pem(struct pfi_error *err, natsStatus s, const char *file) {
  pfi__nats_err(err, s, file);
  if (err)
    err->code = PFI_EPARSE;
  return PFI_EPARSE;
}

/* The TLS and account options of `o` into opts. The key and the seed are
 * read with pfi_read_secret's rules. */
int pfi__nats_set_security(struct pfi_nats *p, natsOptions *opts,
                        const struct pfi_nats_opts *o, int tls,
                        const char *name, struct pfi_error *err) {
  natsStatus s = NATS_OK;
  int rc = 0;
  if (tls) {
    if ((s = natsOptions_SetSecure(opts, true)) != NATS_OK)
      return pfi__nats_err(err, s, "TLS");
    /* A file that is not PEM certificates is bad input (exit 2). */
    if (o->tls_ca &&
        (s = natsOptions_LoadCATrustedCertificates(opts, o->tls_ca)) != NATS_OK)
      return bad_pem(err, s, o->tls_ca);
    if (name[0] && (s = natsOptions_SetExpectedHostname(opts, name)) != NATS_OK)
      return pfi__nats_err(err, s, "TLS name");
  }
  if (o->tls_cert) {
    enum { CMAX = 1 << 16 };
    char *cert = malloc(CMAX), *key = malloc(CMAX);
    if (!cert || !key)
      rc = pfi_error_set(err, PFI_ENOMEM, "out of memory");
    else if ((rc = read_small(o->tls_cert, cert, CMAX, err)) >= 0 &&
             (rc = pfi_read_secret_file(o->tls_key, key, CMAX, err)) >= 0) {
      rc = 0;
      if ((s = natsOptions_SetCertificatesChain(opts, cert, key)) != NATS_OK)
        rc = bad_pem(err, s, o->tls_cert);
    }
    if (key)
      memset(key, 0, CMAX);
    free(cert);
    free(key);
    if (rc < 0)
      return rc;
  }
  if (o->creds_file) {
    /* Checked by the rules here; the client reads it at each connect. */
    enum { CMAX = 1 << 14 };
    char *c = malloc(CMAX);
    if (!c)
      return pfi_error_set(err, PFI_ENOMEM, "out of memory");
    rc = pfi_read_secret_file(o->creds_file, c, CMAX, err);
    int ok = rc >= 0 && strstr(c, "BEGIN NATS USER JWT") &&
             strstr(c, "BEGIN USER NKEY SEED");
    memset(c, 0, CMAX);
    free(c);
    if (rc < 0)
      return rc;
    if (!ok)
      return pfi_error_set(err, PFI_EPARSE,
                           "%s: not a NATS credentials file (a user JWT and "
                           "its nkey seed, as nsc writes them)",
                           o->creds_file);
    if ((s = natsOptions_SetUserCredentialsFromFiles(opts, o->creds_file,
                                                     NULL)) != NATS_OK)
      return pfi__nats_err(err, s, o->creds_file);
  }
  if (o->nkey_file) {
    if ((rc = pfi_read_secret(o->nkey_file, p->seed, sizeof p->seed, err)) < 0)
      return rc;
    if (strncmp(p->seed, "SU", 2) != 0 || strlen(p->seed) != 58) {
      memset(p->seed, 0, sizeof p->seed);
      return pfi_error_set(err, PFI_EPARSE,
                           "%s: not an nkey user seed (58 characters, SU...)",
                           o->nkey_file);
    }
    if ((s = natsOptions_SetNKey(opts, o->user, on_sign, p)) != NATS_OK)
      return pfi__nats_err(err, s, o->nkey_file);
  }
  return 0;
}
