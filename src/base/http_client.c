/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A client's TLS settings (pfi/http.h): which URLs may go in clear, and the
 * CA, certificate and key handed to libcurl (curl_dl.h). */
#include "pfi/http.h"
#include "pfi/secret.h"

#include "curl_dl.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* A PEM private key's largest size we read: an RSA 8192 key is about
 * 6.4 kB of PEM. */
#define KEY_MAX 16384

/* The host of an http(s) URL into host[n] (brackets of an IPv6 address
 * removed); 0, or -1 when it has none, has user information, or is too
 * long. *https: whether the scheme is https. */
static int url_host(const char *url, char *host, size_t n, int *https) {
  const char *p;
  if (strncasecmp(url, "http://", 7) == 0) {
    p = url + 7;
    *https = 0;
  } else if (strncasecmp(url, "https://", 8) == 0) {
    p = url + 8;
    *https = 1;
  } else {
    return -1;
  }
  size_t auth = strcspn(p, "/?#");
  if (memchr(p, '@', auth))
    return -1;
  size_t len;
  if (p[0] == '[') {
    const char *close = memchr(p, ']', auth);
    if (!close)
      return -1;
    p++;
    len = (size_t)(close - p);
  } else {
    len = strcspn(p, ":/?#");
  }
  if (len == 0 || len >= n)
    return -1;
  memcpy(host, p, len);
  host[len] = 0;
  return 0;
}

int pfi_http_url_local(const char *url) {
  char host[256];
  int https;
  if (!url || url_host(url, host, sizeof host, &https) < 0)
    return 0;
  if (strcasecmp(host, "localhost") == 0)
    return 1;
  struct in_addr a4;
  struct in6_addr a6;
  if (inet_pton(AF_INET, host, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, host, &a6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&a6) ||
           (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
  return 0;
}

/* A public file a client names (CA, certificate): a readable regular
 * file. */
static int public_file(const char *what, const char *path,
                       struct pfi_error *err) {
  struct stat sb;
  FILE *f = fopen(path, "re");
  if (!f)
    return pfi_error_set(err, PFI_EIO, "%s %s: cannot read it", what, path);
  int ok = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode);
  fclose(f);
  return ok ? 0
            : pfi_error_set(err, PFI_EIO, "%s %s: not a regular file", what,
                            path);
}

/* The check; with key_out set, the key read into a malloc'd buffer. */
static int check(const char *url, const struct pfi_http_client_tls *tls,
                 char **key_out, size_t *key_len, struct pfi_error *err) {
  static const struct pfi_http_client_tls none = {NULL, NULL, NULL, 0};
  char host[256];
  int https, rc;
  if (!tls)
    tls = &none;
  if (!url || url_host(url, host, sizeof host, &https) < 0)
    return pfi_error_set(err, PFI_EINVAL,
                         "URL '%.200s': expected http(s)://HOST[:PORT]...",
                         url ? url : "");
  if (!https && !tls->insecure && !pfi_http_url_local(url))
    return pfi_error_set(err, PFI_EINVAL,
                         "%.200s: plain http to a host other than this one "
                         "(the token and the answers would cross the network "
                         "in clear): use https, or allow it as insecure",
                         url);
  if (!https && (tls->cacert || tls->cert))
    return pfi_error_set(err, PFI_EINVAL,
                         "%.200s: a CA or client certificate goes with an "
                         "https URL",
                         url);
  if (!tls->cert != !tls->key)
    return pfi_error_set(err, PFI_EINVAL,
                         "a client certificate and its key go together");
  if (tls->cacert && (rc = public_file("CA", tls->cacert, err)) < 0)
    return rc;
  if (tls->cert && (rc = public_file("certificate", tls->cert, err)) < 0)
    return rc;
  if (!tls->key)
    return 0;
  char *buf = malloc(KEY_MAX);
  if (!buf)
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  rc = pfi_read_secret_file(tls->key, buf, KEY_MAX, err);
  if (rc >= 0 && !strstr(buf, "-----BEGIN "))
    rc = pfi_error_set(err, PFI_EPARSE, "%s: not a PEM private key", tls->key);
  if (rc < 0 || !key_out) {
    memset(buf, 0, KEY_MAX);
    free(buf);
    return rc < 0 ? rc : 0;
  }
  *key_out = buf;
  *key_len = (size_t)rc;
  return 0;
}

int pfi_http_client_tls_check(const char *url,
                              const struct pfi_http_client_tls *tls,
                              struct pfi_error *err) {
  return check(url, tls, NULL, NULL, err);
}

int pfi__curl_tls_load(struct pfi__curl_tls *t, const char *url,
                       const struct pfi_http_client_tls *tls,
                       struct pfi_error *err) {
  memset(t, 0, sizeof *t);
  int rc = check(url, tls, &t->key, &t->key_len, err);
  if (rc < 0 || !tls)
    return rc;
  t->insecure = tls->insecure;
  if ((tls->cacert && !(t->cacert = strdup(tls->cacert))) ||
      (tls->cert && !(t->cert = strdup(tls->cert)))) {
    pfi__curl_tls_release(t);
    return pfi_error_set(err, PFI_ENOMEM, "out of memory");
  }
  return 0;
}

void pfi__curl_tls_apply(CURL *h, const struct pfi__curl_tls *t) {
  if (t->cacert) {
    /* Only this CA: not the system's as well. */
    pfi__curl_setopt_ptr(h, CURLOPT_CAINFO, t->cacert);
    pfi__curl_setopt_ptr(h, CURLOPT_CAPATH, NULL);
  }
  if (t->cert && t->key) {
    /* Not copied: t outlives the request, and its bytes are zeroed. */
    struct curl_blob key = {t->key, t->key_len, CURL_BLOB_NOCOPY};
    pfi__curl_setopt_ptr(h, CURLOPT_SSLCERT, t->cert);
    pfi__curl_setopt_ptr(h, CURLOPT_SSLCERTTYPE, "PEM");
    pfi__curl_setopt_ptr(h, CURLOPT_SSLKEY_BLOB, &key);
    pfi__curl_setopt_ptr(h, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (t->insecure) {
    pfi__curl_setopt_long(h, CURLOPT_SSL_VERIFYPEER, 0L);
    pfi__curl_setopt_long(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
}

void pfi__curl_tls_release(struct pfi__curl_tls *t) {
  if (t->key) {
    memset(t->key, 0, t->key_len);
    free(t->key);
  }
  free(t->cacert);
  free(t->cert);
  memset(t, 0, sizeof *t);
}
