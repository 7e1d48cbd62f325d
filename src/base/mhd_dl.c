/* SPDX-License-Identifier: GPL-3.0-or-later */
/* libmicrohttpd, loaded on first use (mhd_dl.h). */
#include "mhd_dl.h"

#include "dl_int.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

/* libmicrohttpd's ABI 12, the SONAME of every release since 0.9.56
 * (Debian's libmicrohttpd12). */
#define PFI_MHD_SONAME "libmicrohttpd.so.12"

static struct {
  struct MHD_Daemon *(*start_daemon_va)(unsigned, uint16_t,
                                        MHD_AcceptPolicyCallback, void *,
                                        MHD_AccessHandlerCallback, void *,
                                        va_list);
  void (*stop_daemon)(struct MHD_Daemon *);
  const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *,
                                                 enum MHD_DaemonInfoType, ...);
  const union MHD_ConnectionInfo *(*get_connection_info)(
      struct MHD_Connection *, enum MHD_ConnectionInfoType, ...);
  const char *(*lookup_connection_value)(struct MHD_Connection *,
                                         enum MHD_ValueKind, const char *);
  struct MHD_Response *(*create_response_from_buffer)(
      size_t, void *, enum MHD_ResponseMemoryMode);
  enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *,
                                         const char *);
  enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
                                    struct MHD_Response *);
  void (*destroy_response)(struct MHD_Response *);
  enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE);
  /* GnuTLS's, for client certificates (gnutls/gnutls.h: the session is
   * a pointer). */
  int (*verify_peers2)(void *session, unsigned *status);
} api;
static const char *load_error;
static int loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define SYM(h, field, name) PFI_DL_SYM(h, api.field, name)

static int bind_all(void *h) {
  SYM(h, start_daemon_va, "MHD_start_daemon_va");
  SYM(h, stop_daemon, "MHD_stop_daemon");
  SYM(h, get_daemon_info, "MHD_get_daemon_info");
  SYM(h, get_connection_info, "MHD_get_connection_info");
  SYM(h, lookup_connection_value, "MHD_lookup_connection_value");
  SYM(h, create_response_from_buffer, "MHD_create_response_from_buffer");
  SYM(h, add_response_header, "MHD_add_response_header");
  SYM(h, queue_response, "MHD_queue_response");
  SYM(h, destroy_response, "MHD_destroy_response");
  SYM(h, is_feature_supported, "MHD_is_feature_supported");
  return 1;
}

static void load(void) {
  void *h = dlopen(PFI_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    load_error = "libmicrohttpd (" PFI_MHD_SONAME ") could not be loaded: "
                 "install Debian's libmicrohttpd12";
    return;
  }
  if (!bind_all(h)) {
    load_error = PFI_MHD_SONAME " lacks a function pfi needs";
    return;
  }
  /* libmicrohttpd built with TLS has loaded GnuTLS (ABI 30, every
   * release since 3.4) already; without it, no client certificate is
   * taken as verified. */
  if (api.is_feature_supported(MHD_FEATURE_TLS) == MHD_YES) {
    void *g = dlopen("libgnutls.so.30", RTLD_NOW | RTLD_LOCAL);
    void *p = g ? dlsym(g, "gnutls_certificate_verify_peers2") : NULL;
    if (p)
      memcpy(&api.verify_peers2, &p, sizeof p);
  }
  loaded = 1;
}

static int ready(void) {
  pthread_once(&once, load);
  return loaded;
}

const char *pfi__mhd_error(void) { return ready() ? NULL : load_error; }

struct MHD_Daemon *pfi__mhd_start_daemon(unsigned flags, uint16_t port,
                                         MHD_AccessHandlerCallback dh,
                                         void *dh_cls, ...) {
  if (!ready())
    return NULL;
  va_list ap;
  va_start(ap, dh_cls);
  struct MHD_Daemon *d =
      api.start_daemon_va(flags, port, NULL, NULL, dh, dh_cls, ap);
  va_end(ap);
  return d;
}

void pfi__mhd_stop_daemon(struct MHD_Daemon *d) {
  if (d && ready())
    api.stop_daemon(d);
}

const union MHD_DaemonInfo *
pfi__mhd_get_daemon_info(struct MHD_Daemon *d, enum MHD_DaemonInfoType t) {
  return d && ready() ? api.get_daemon_info(d, t) : NULL;
}

const union MHD_ConnectionInfo *
pfi__mhd_get_connection_info(struct MHD_Connection *c,
                             enum MHD_ConnectionInfoType t) {
  return c && ready() ? api.get_connection_info(c, t) : NULL;
}

const char *pfi__mhd_lookup_connection_value(struct MHD_Connection *c,
                                             enum MHD_ValueKind kind,
                                             const char *key) {
  return c && ready() ? api.lookup_connection_value(c, kind, key) : NULL;
}

struct MHD_Response *
pfi__mhd_create_response_from_buffer(size_t size, void *buffer,
                                     enum MHD_ResponseMemoryMode mode) {
  return ready() ? api.create_response_from_buffer(size, buffer, mode) : NULL;
}

enum MHD_Result pfi__mhd_add_response_header(struct MHD_Response *r,
                                             const char *header,
                                             const char *content) {
  return r && ready() ? api.add_response_header(r, header, content) : MHD_NO;
}

enum MHD_Result pfi__mhd_queue_response(struct MHD_Connection *c,
                                        unsigned int status,
                                        struct MHD_Response *r) {
  return c && r && ready() ? api.queue_response(c, status, r) : MHD_NO;
}

void pfi__mhd_destroy_response(struct MHD_Response *r) {
  if (r && ready())
    api.destroy_response(r);
}

int pfi__mhd_tls_supported(void) {
  return ready() && api.is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

int pfi__mhd_client_cert_ok(struct MHD_Connection *c) {
  if (!c || !ready() || !api.verify_peers2)
    return 0;
  const union MHD_ConnectionInfo *ci =
      api.get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  unsigned status = ~0u;
  /* Negative without a certificate (GNUTLS_E_NO_CERTIFICATE_FOUND);
   * status 0 when it chains to the trust list and is within its dates. */
  return ci && ci->tls_session &&
         api.verify_peers2(ci->tls_session, &status) == 0 && status == 0;
}
