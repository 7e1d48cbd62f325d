/* SPDX-License-Identifier: GPL-3.0-or-later */
/* libcurl, loaded on first use (curl_dl.h). */
#include "curl_dl.h"

#include "dl_int.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

/* libcurl's ABI 4, the SONAME every libcurl since 7.16 carries. */
#define PFI_CURL_SONAME "libcurl.so.4"

static struct {
  CURLcode (*global_init)(long);
  CURL *(*easy_init)(void);
  void (*easy_cleanup)(CURL *);
  CURLcode (*easy_perform)(CURL *);
  const char *(*easy_strerror)(CURLcode);
  char *(*easy_escape)(CURL *, const char *, int);
  void (*free)(void *);
  struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
  void (*slist_free_all)(struct curl_slist *);
  CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
} api;
static const char *load_error;
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define SYM(h, field, name) PFI_DL_SYM(h, api.field, name)

static int bind_all(void *h) {
  SYM(h, global_init, "curl_global_init");
  SYM(h, easy_init, "curl_easy_init");
  SYM(h, easy_cleanup, "curl_easy_cleanup");
  SYM(h, easy_perform, "curl_easy_perform");
  SYM(h, easy_strerror, "curl_easy_strerror");
  SYM(h, easy_escape, "curl_easy_escape");
  SYM(h, free, "curl_free");
  SYM(h, slist_append, "curl_slist_append");
  SYM(h, slist_free_all, "curl_slist_free_all");
  SYM(h, easy_setopt, "curl_easy_setopt");
  SYM(h, easy_getinfo, "curl_easy_getinfo");
  return 1;
}

static void load(void) {
  void *h = dlopen(PFI_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    load_error = "libcurl (" PFI_CURL_SONAME ") could not be loaded: install "
                 "Debian's libcurl4";
    return;
  }
  if (!bind_all(h)) {
    load_error = PFI_CURL_SONAME " lacks a function pfi needs (libcurl older "
                                 "than 7.85?)";
    return;
  }
  /* Once, before any handle: curl_easy_init would otherwise run it
   * itself, not thread-safely. */
  if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    load_error = "curl_global_init failed";
    return;
  }
  loaded = 1;
}

static int ready(void) {
  pthread_once(&once, load);
  return loaded;
}

const char *pfi__curl_error(void) { return ready() ? NULL : load_error; }

CURL *pfi__curl_easy_init(void) { return ready() ? api.easy_init() : NULL; }

void pfi__curl_easy_cleanup(CURL *h) {
  if (h && ready())
    api.easy_cleanup(h);
}

CURLcode pfi__curl_easy_perform(CURL *h) {
  return h && ready() ? api.easy_perform(h) : CURLE_FAILED_INIT;
}

const char *pfi__curl_easy_strerror(CURLcode c) {
  return ready() ? api.easy_strerror(c) : load_error;
}

char *pfi__curl_easy_escape(CURL *h, const char *s, int len) {
  return h && ready() ? api.easy_escape(h, s, len) : NULL;
}

void pfi__curl_free(void *p) {
  if (p && ready())
    api.free(p);
}

struct curl_slist *pfi__curl_slist_append(struct curl_slist *l, const char *s) {
  return ready() ? api.slist_append(l, s) : NULL;
}

void pfi__curl_slist_free_all(struct curl_slist *l) {
  if (l && ready())
    api.slist_free_all(l);
}

CURLcode pfi__curl_setopt_long(CURL *h, CURLoption o, long v) {
  return h && ready() ? api.easy_setopt(h, o, v) : CURLE_FAILED_INIT;
}

CURLcode pfi__curl_setopt_ptr(CURL *h, CURLoption o, const void *v) {
  return h && ready() ? api.easy_setopt(h, o, v) : CURLE_FAILED_INIT;
}

CURLcode pfi__curl_setopt_write(CURL *h, CURLoption o, curl_write_callback f) {
  return h && ready() ? api.easy_setopt(h, o, f) : CURLE_FAILED_INIT;
}

CURLcode pfi__curl_getinfo_long(CURL *h, CURLINFO i, long *v) {
  return h && ready() ? api.easy_getinfo(h, i, v) : CURLE_FAILED_INIT;
}
