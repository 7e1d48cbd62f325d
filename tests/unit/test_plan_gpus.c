/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * GPU lists of cap plans (pfi_plan_parse_gpus): every index of the largest
 * range, in order; an index named twice, in or across ranges, refused. The
 * fuzzer's "0;7-40040;50;53]" took 15 s when repeats were found by scanning
 * the list (quadratic in a range's length).
 */
#include <stdlib.h>
#include <string.h>

#include "pfi/plan.h"
#include "testutil.h"

static void test_gpus(void **state) {
  (void)state;
  unsigned *ids;
  size_t n;
  struct pfi_error err;
  assert_int_equal(pfi_plan_parse_gpus("0-65535", &ids, &n, &err), 0);
  ASSERT_EQ_INT(n, 65536);
  for (size_t i = 0; i < n; i++)
    ASSERT_EQ_INT(ids[i], i);
  free(ids);
  assert_int_equal(pfi_plan_parse_gpus("2;0-1;5", &ids, &n, &err), 0);
  ASSERT_EQ_INT(n, 4);
  ASSERT_EQ_INT(ids[0], 2);
  ASSERT_EQ_INT(ids[3], 5);
  free(ids);
  assert_int_equal(pfi_plan_parse_gpus("0;7-40040;50;53", &ids, &n, &err),
                   PFI_EINVAL);
  assert_non_null(strstr(err.msg, "GPU 50 is named twice"));
  assert_int_equal(pfi_plan_parse_gpus("3;3", &ids, &n, &err), PFI_EINVAL);
  assert_int_equal(pfi_plan_parse_gpus("0-65536", &ids, &n, &err),
                   PFI_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_gpus)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
