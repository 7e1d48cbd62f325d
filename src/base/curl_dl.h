/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * libcurl, loaded on first use (internal). Every pfi program links libpfi,
 * and libcurl brings some thirty shared libraries (TLS, Kerberos, LDAP,
 * ...) whose loading and constructors cost each process several
 * milliseconds at start: most commands (index, simulate, allocate, ...)
 * never make an HTTP request. The library's HTTP clients (the Prometheus
 * scrape, the OpenADR VEN, the bridge's and `pfi ctl`'s pfid client) call
 * these wrappers instead of curl_*: the first call loads libcurl
 * (dlopen of its SONAME) and runs curl_global_init once; when it cannot
 * be loaded, pfi__curl_easy_init returns NULL and pfi__curl_error says
 * why, and the other wrappers fail as libcurl's own would on a NULL
 * handle. The prototypes are libcurl's (curl/curl.h, 7.x/8.x ABI 4).
 */
#ifndef PFI_BASE_CURL_DL_H
#define PFI_BASE_CURL_DL_H

#include <curl/curl.h>

/* NULL, or why libcurl could not be loaded (a static string). */
const char *pfi__curl_error(void);

CURL *pfi__curl_easy_init(void);
void pfi__curl_easy_cleanup(CURL *h);
CURLcode pfi__curl_easy_perform(CURL *h);
const char *pfi__curl_easy_strerror(CURLcode c);
char *pfi__curl_easy_escape(CURL *h, const char *s, int len);
void pfi__curl_free(void *p);
struct curl_slist *pfi__curl_slist_append(struct curl_slist *l, const char *s);
void pfi__curl_slist_free_all(struct curl_slist *l);

/* curl_easy_setopt's and curl_easy_getinfo's argument after the option,
 * by kind (a long, a data pointer, a write callback; a long's address). */
CURLcode pfi__curl_setopt_long(CURL *h, CURLoption o, long v);
CURLcode pfi__curl_setopt_ptr(CURL *h, CURLoption o, const void *v);
CURLcode pfi__curl_setopt_write(CURL *h, CURLoption o, curl_write_callback f);
CURLcode pfi__curl_getinfo_long(CURL *h, CURLINFO i, long *v);

/* A client's TLS (pfi/http.h struct pfi_http_client_tls) made ready for
 * its requests by pfi__curl_tls_load: the file names copied, the private
 * key read into memory by pfi_read_secret's rules. */
struct pfi_http_client_tls;
struct pfi_error;
struct pfi__curl_tls {
  char *cacert, *cert; /* malloc'd, or NULL */
  char *key;           /* the key's PEM, malloc'd, or NULL */
  size_t key_len;
  int insecure;
};
/* Checks tls against url (pfi_http_client_tls_check) and loads it into t
 * (zeroed first; tls NULL: no settings, plain http to loopback only).
 * Returns 0 or the check's error; t is released on error. */
int pfi__curl_tls_load(struct pfi__curl_tls *t, const char *url,
                       const struct pfi_http_client_tls *tls,
                       struct pfi_error *err);
/* Sets t on a request: the CA (only it trusted), the client certificate
 * and key, or no verification with insecure. */
void pfi__curl_tls_apply(CURL *h, const struct pfi__curl_tls *t);
/* Frees t's copies, the key's bytes zeroed first. */
void pfi__curl_tls_release(struct pfi__curl_tls *t);

#endif
