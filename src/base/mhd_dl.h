/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * libmicrohttpd, loaded on first use (internal), as libcurl is
 * (curl_dl.h). The library's HTTP server (include/pfi/http.h: pfid's API,
 * the agent's endpoints, `pfi grid bridge --listen`'s webhook) calls these
 * wrappers instead of MHD_*: the first call loads libmicrohttpd (dlopen of
 * its SONAME), so that `pfi`, linked -Wl,--as-needed, does not name it
 * among the libraries it needs and a command that serves nothing never
 * loads it. When it cannot be loaded, pfi__mhd_start_daemon returns NULL
 * and pfi__mhd_error says why. The prototypes are libmicrohttpd's
 * (microhttpd.h, ABI 12).
 */
#ifndef PFI_BASE_MHD_DL_H
#define PFI_BASE_MHD_DL_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

/* NULL, or why libmicrohttpd could not be loaded (a static string). */
const char *pfi__mhd_error(void);

/* MHD_start_daemon without the accept policy (none), options after dh_cls
 * up to MHD_OPTION_END. */
struct MHD_Daemon *pfi__mhd_start_daemon(unsigned flags, uint16_t port,
                                         MHD_AccessHandlerCallback dh,
                                         void *dh_cls, ...);
void pfi__mhd_stop_daemon(struct MHD_Daemon *d);
const union MHD_DaemonInfo *pfi__mhd_get_daemon_info(struct MHD_Daemon *d,
                                                     enum MHD_DaemonInfoType t);
const union MHD_ConnectionInfo *
pfi__mhd_get_connection_info(struct MHD_Connection *c,
                             enum MHD_ConnectionInfoType t);
const char *pfi__mhd_lookup_connection_value(struct MHD_Connection *c,
                                             enum MHD_ValueKind kind,
                                             const char *key);
struct MHD_Response *
pfi__mhd_create_response_from_buffer(size_t size, void *buffer,
                                     enum MHD_ResponseMemoryMode mode);
enum MHD_Result pfi__mhd_add_response_header(struct MHD_Response *r,
                                             const char *header,
                                             const char *content);
enum MHD_Result pfi__mhd_queue_response(struct MHD_Connection *c,
                                        unsigned int status,
                                        struct MHD_Response *r);
void pfi__mhd_destroy_response(struct MHD_Response *r);

/* 1 when the loaded libmicrohttpd was built with TLS (MHD_FEATURE_TLS);
 * 0 otherwise or when it cannot be loaded. */
int pfi__mhd_tls_supported(void);

/* 1 when the TLS connection c's client presented a certificate that the
 * daemon's trust list (MHD_OPTION_HTTPS_MEM_TRUST) verifies (GnuTLS's
 * gnutls_certificate_verify_peers2, GnuTLS being loaded already by
 * libmicrohttpd); 0 when it presented none, one that does not verify, or
 * GnuTLS cannot be reached. */
int pfi__mhd_client_cert_ok(struct MHD_Connection *c);

#endif
