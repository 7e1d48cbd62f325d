/* SPDX-License-Identifier: GPL-3.0-or-later */
/* A job spanning nodes as pfid observes it (src/fleet/pfid_ctl.c): its
 * throughput is the mean of the reports of the nodes that report it,
 * whichever came last; a node without a report (-1) adds nothing. Values
 * worked by hand. */
#include <math.h>
#include <string.h>

#include "testutil.h"

#include "../../src/fleet/pfid_int.h"

static void test_tput_mean(void **state) {
  (void)state;
  struct pfi_ctl_job_obs o;
  memset(&o, 0, sizeof o);
  unsigned n = 0;
  pfid_job_tput_add(&o, &n, -1); /* no report from this node */
  assert_int_equal(o.valid, 0);
  assert_int_equal(n, 0);
  pfid_job_tput_add(&o, &n, 2000);
  assert_int_equal(o.valid, 1);
  assert_true(fabs(o.tokens_per_s - 2000) < 1e-9);
  pfid_job_tput_add(&o, &n, 1000); /* (2000 + 1000) / 2 */
  assert_true(fabs(o.tokens_per_s - 1500) < 1e-9);
  pfid_job_tput_add(&o, &n, -1);
  pfid_job_tput_add(&o, &n, 3000); /* (2000 + 1000 + 3000) / 3 */
  assert_int_equal(n, 3);
  assert_true(fabs(o.tokens_per_s - 2000) < 1e-9);
  /* The order of the nodes does not matter: 3000, 1000, 2000. */
  struct pfi_ctl_job_obs p;
  memset(&p, 0, sizeof p);
  unsigned m = 0;
  pfid_job_tput_add(&p, &m, 3000);
  pfid_job_tput_add(&p, &m, 1000);
  pfid_job_tput_add(&p, &m, 2000);
  assert_true(fabs(p.tokens_per_s - o.tokens_per_s) < 1e-9);
  /* A NaN is no report. */
  pfid_job_tput_add(&p, &m, NAN);
  assert_int_equal(m, 3);
  assert_true(fabs(p.tokens_per_s - 2000) < 1e-9);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tput_mean),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
