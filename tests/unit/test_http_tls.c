/* SPDX-License-Identifier: GPL-3.0-or-later */
/* TLS settings of the HTTP server and clients (pfi/http.h): which listen
 * addresses and URLs are loopback (plain HTTP allowed without --insecure),
 * the client's checks of its CA, certificate and key files, and the
 * server's refusals before it listens. Each expected value is read off
 * the address by hand (127.0.0.0/8 and ::1 are loopback, RFC 1122 and
 * RFC 4291; ::ffff:127.x is 127.x mapped). */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

#include "pfi/http.h"

static void listen_local(void **st) {
  (void)st;
  static const struct {
    const char *listen;
    int local;
  } t[] = {
      {"127.0.0.1:8470", 1},
      {"127.1.2.3:0", 1},
      {"[::1]:9400", 1},
      {"[::ffff:127.0.0.1]:9400", 1},
      {"unix:/run/pfi.sock", 1},
      {":9400", 0},
      {"0.0.0.0:9400", 0},
      {"[::]:9400", 0},
      {"10.0.0.12:9403", 0},
      {"128.0.0.1:80", 0},
      {"126.255.255.255:80", 0},
      {"[::2]:80", 0},
      {"[::ffff:10.0.0.1]:80", 0},
      {"localhost:80", 0}, /* not an IP */
      {"127.0.0.1", 0},    /* no port: not an address */
      {"", 0},
      {"[::1:80", 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (pfi_http_listen_local(t[i].listen) != t[i].local)
      fail_msg("pfi_http_listen_local(\"%s\") = %d, expected %d", t[i].listen,
               pfi_http_listen_local(t[i].listen), t[i].local);
  ASSERT_EQ_INT(pfi_http_listen_local(NULL), 0);
}

static void url_local(void **st) {
  (void)st;
  static const struct {
    const char *url;
    int local;
  } t[] = {
      {"http://127.0.0.1:8470", 1},
      {"https://127.9.9.9/v1/status", 1},
      {"http://localhost", 1},
      {"HTTP://LOCALHOST:8470/", 1},
      {"http://[::1]:8470/v1", 1},
      {"http://[::ffff:127.0.0.1]:1", 1},
      {"http://10.0.0.5:8470", 0},
      {"https://pfid.example:8470", 0},
      {"http://127.0.0.1@evil.example/", 0}, /* the host is evil.example */
      {"http://evil.example@127.0.0.1/", 0}, /* user information: refused */
      {"http://localhost.evil.example/", 0},
      {"http://127.0.0.1.evil.example/", 0},
      {"ftp://127.0.0.1/", 0},
      {"127.0.0.1:8470", 0},
      {"http://", 0},
      {"http://[::1", 0},
      {"http://[::2]/", 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (pfi_http_url_local(t[i].url) != t[i].local)
      fail_msg("pfi_http_url_local(\"%s\") = %d, expected %d", t[i].url,
               pfi_http_url_local(t[i].url), t[i].local);
  ASSERT_EQ_INT(pfi_http_url_local(NULL), 0);
}

static char dir[256];

static void put(const char *name, const char *text, mode_t mode, char *path,
                size_t n) {
  snprintf(path, n, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  assert_int_equal(chmod(path, mode), 0);
}

/* The check's code and, on a refusal, that its message says `needle`. */
#define EXPECT_CHECK(url, tls, code, needle)                                   \
  do {                                                                         \
    struct pfi_error e_;                                                       \
    pfi_error_clear(&e_);                                                      \
    int rc_ = pfi_http_client_tls_check(url, tls, &e_);                        \
    if (rc_ != (code))                                                         \
      fail_msg("check(%s) = %d (%s), expected %d", url, rc_, e_.msg,           \
               (int)(code));                                                   \
    if ((code) < 0 && !strstr(e_.msg, needle))                                 \
      fail_msg("check(%s): \"%s\" does not say \"%s\"", url, e_.msg, needle);  \
  } while (0)

static void client_check(void **st) {
  (void)st;
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/pfi-tls-XXXXXX", t && *t ? t : "/tmp");
  assert_non_null(mkdtemp(dir));
  static const char pem_cert[] = "-----BEGIN CERTIFICATE-----\nx\n"
                                 "-----END CERTIFICATE-----\n";
  static const char pem_key[] = "-----BEGIN PRIVATE KEY-----\nx\n"
                                "-----END PRIVATE KEY-----\n";
  char ca[PATH_MAX], cert[PATH_MAX], key[PATH_MAX], open_key[PATH_MAX],
      not_pem[PATH_MAX], missing[PATH_MAX];
  put("ca.pem", pem_cert, 0644, ca, sizeof ca);
  put("client.pem", pem_cert, 0644, cert, sizeof cert);
  put("client.key", pem_key, 0600, key, sizeof key);
  put("open.key", pem_key, 0644, open_key, sizeof open_key);
  put("text.key", "secret\n", 0600, not_pem, sizeof not_pem);
  snprintf(missing, sizeof missing, "%s/none.pem", dir);

  /* No settings: plain http to loopback only. */
  EXPECT_CHECK("http://127.0.0.1:8470", NULL, 0, "");
  EXPECT_CHECK("http://10.0.0.5:8470", NULL, PFI_EINVAL, "plain http");
  EXPECT_CHECK("https://10.0.0.5:8470", NULL, 0, "");
  EXPECT_CHECK("gopher://10.0.0.5", NULL, PFI_EINVAL, "http(s)://");
  struct pfi_http_client_tls ins = {NULL, NULL, NULL, 1};
  EXPECT_CHECK("http://10.0.0.5:8470", &ins, 0, "");

  struct pfi_http_client_tls c = {ca, cert, key, 0};
  EXPECT_CHECK("https://pfid.example:8470", &c, 0, "");
  EXPECT_CHECK("http://127.0.0.1:8470", &c, PFI_EINVAL, "https URL");
  c.key = NULL;
  EXPECT_CHECK("https://pfid.example", &c, PFI_EINVAL, "go together");
  c.key = key;
  c.cert = NULL;
  EXPECT_CHECK("https://pfid.example", &c, PFI_EINVAL, "go together");
  c.cert = cert;
  c.cacert = missing;
  EXPECT_CHECK("https://pfid.example", &c, PFI_EIO, "none.pem");
  c.cacert = dir; /* a directory */
  EXPECT_CHECK("https://pfid.example", &c, PFI_EIO, "not a regular file");
  c.cacert = ca;
  c.key = open_key;
  EXPECT_CHECK("https://pfid.example", &c, PFI_ENOPERM, "open.key");
  c.key = not_pem;
  EXPECT_CHECK("https://pfid.example", &c, PFI_EPARSE, "not a PEM");

  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void never(void *arg, const struct pfi_http_req *rq,
                  struct pfi_http_resp *rs) {
  (void)arg;
  (void)rq;
  (void)rs;
}

/* The server refuses before it listens: plain HTTP off loopback without
 * insecure, a key without a certificate, a client CA without TLS; a
 * plain server on loopback runs without TLS. */
static void server_refusals(void **st) {
  (void)st;
  struct pfi_http *h = NULL;
  struct pfi_error err;
  struct pfi_http_tls plain = {NULL, NULL, NULL, 0};
  pfi_error_clear(&err);
  ASSERT_EQ_INT(
      pfi_http_start_tls(&h, "0.0.0.0:0", NULL, &plain, never, NULL, &err),
      PFI_EINVAL);
  assert_non_null(strstr(err.msg, "not a loopback address"));
  assert_null(h);
  ASSERT_EQ_INT(pfi_http_start_tls(&h, ":0", NULL, NULL, never, NULL, &err),
                PFI_EINVAL);
  struct pfi_http_tls half = {NULL, "/nonexistent.key", NULL, 0};
  ASSERT_EQ_INT(
      pfi_http_start_tls(&h, "127.0.0.1:0", NULL, &half, never, NULL, &err),
      PFI_EINVAL);
  assert_non_null(strstr(err.msg, "go together"));
  struct pfi_http_tls ca_only = {NULL, NULL, "/nonexistent.pem", 1};
  ASSERT_EQ_INT(
      pfi_http_start_tls(&h, "127.0.0.1:0", NULL, &ca_only, never, NULL, &err),
      PFI_EINVAL);
  struct pfi_http_tls missing = {"/nonexistent.pem", "/nonexistent.key", NULL,
                                 0};
  ASSERT_EQ_INT(
      pfi_http_start_tls(&h, "127.0.0.1:0", NULL, &missing, never, NULL, &err),
      PFI_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent.pem"));
  assert_null(h);
  ASSERT_EQ_INT(
      pfi_http_start_tls(&h, "127.0.0.1:0", NULL, &plain, never, NULL, &err),
      0);
  ASSERT_EQ_INT(pfi_http_tls_mode(h), 0);
  assert_true(pfi_http_port(h) > 0);
  pfi_http_stop(h);
}

/* pfi_http_tls_check: the server's rules without listening. */
static void server_check(void **st) {
  (void)st;
  struct pfi_error err;
  pfi_error_clear(&err);
  struct pfi_http_tls plain = {NULL, NULL, NULL, 0},
                      insecure = {NULL, NULL, NULL, 1},
                      missing = {"/nonexistent.pem", "/nonexistent.key", NULL,
                                 0},
                      half = {"/nonexistent.pem", NULL, NULL, 0};
  ASSERT_EQ_INT(pfi_http_tls_check("127.0.0.1:8470", &plain, &err), 0);
  ASSERT_EQ_INT(pfi_http_tls_check("unix:/run/x.sock", NULL, &err), 0);
  ASSERT_EQ_INT(pfi_http_tls_check(":9400", &plain, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "plain HTTP on :9400"));
  ASSERT_EQ_INT(pfi_http_tls_check("10.0.0.12:9403", NULL, &err), PFI_EINVAL);
  ASSERT_EQ_INT(pfi_http_tls_check("10.0.0.12:9403", &insecure, &err), 0);
  ASSERT_EQ_INT(pfi_http_tls_check("10.0.0.12:9403", &half, &err), PFI_EINVAL);
  /* The files are read for a TCP address, not for a Unix socket (which
   * stays plain). */
  ASSERT_EQ_INT(pfi_http_tls_check("10.0.0.12:9403", &missing, &err), PFI_EIO);
  assert_non_null(strstr(err.msg, "/nonexistent.pem"));
  ASSERT_EQ_INT(pfi_http_tls_check("unix:/run/x.sock", &missing, &err), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(listen_local), cmocka_unit_test(url_local),
      cmocka_unit_test(client_check), cmocka_unit_test(server_refusals),
      cmocka_unit_test(server_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
