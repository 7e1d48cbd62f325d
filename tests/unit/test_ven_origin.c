/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfi_ven_same_origin (pfi/openadr.h): the rule that decides where the
 * VEN's client secret may go. Each pair is worked by hand from RFC 6454's
 * origin (scheme, host, port; the scheme's default port when none). */
#include "testutil.h"

#include "pfi/openadr.h"

static void same_origin(void **state) {
  (void)state;
  /* The same scheme, host and port, whatever the path. */
  assert_int_equal(pfi_ven_same_origin("https://vtn.example/openadr3",
                                       "https://vtn.example/auth/token"),
                   1);
  /* The default port written out, the host's case. */
  assert_int_equal(
      pfi_ven_same_origin("https://VTN.example:443/x", "https://vtn.example/y"),
      1);
  assert_int_equal(
      pfi_ven_same_origin("http://127.0.0.1:8080/a", "http://127.0.0.1:8080"),
      1);
  assert_int_equal(
      pfi_ven_same_origin("https://[::1]:8443/a", "https://[::1]:8443/t"), 1);
  assert_int_equal(pfi_ven_same_origin("http://h/a?x=1", "http://h:80#f"), 1);
}

static void other_origin(void **state) {
  (void)state;
  /* https -> http: a downgrade, another origin. */
  assert_int_equal(pfi_ven_same_origin("https://vtn.example/openadr3",
                                       "http://vtn.example/auth/token"),
                   0);
  /* Another port, another host, a host that only starts like ours. */
  assert_int_equal(pfi_ven_same_origin("http://127.0.0.1:8080/a",
                                       "http://127.0.0.1:8081/steal"),
                   0);
  assert_int_equal(pfi_ven_same_origin("https://vtn.example/a",
                                       "https://vtn.example.evil/a"),
                   0);
  assert_int_equal(pfi_ven_same_origin("https://vtn.example/a",
                                       "https://evil/vtn.example/a"),
                   0);
  /* User information (https://vtn.example@evil/ is the host evil) and
   * schemes other than http(s) are never the same origin. */
  assert_int_equal(pfi_ven_same_origin("https://vtn.example/a",
                                       "https://vtn.example@evil/a"),
                   0);
  assert_int_equal(
      pfi_ven_same_origin("ftp://vtn.example/a", "ftp://vtn.example/a"), 0);
  assert_int_equal(pfi_ven_same_origin("https:///a", "https:///a"), 0);
  /* The default port of the other scheme is another port. */
  assert_int_equal(
      pfi_ven_same_origin("https://vtn.example/a", "https://vtn.example:80/a"),
      0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_origin),
      cmocka_unit_test(other_origin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
