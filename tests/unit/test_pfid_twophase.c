/* SPDX-License-Identifier: GPL-3.0-or-later */
/* pfid's two-phase rule across agents (src/fleet/pfid.c): a period's
 * increases wait while any node's decrease is unconfirmed, a stale node's
 * included. Three nodes of 2 GPUs built by hand: n1 was cut to 300 W per
 * GPU by sequence 7, n2 and n3 have no decrease pending. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "../../src/fleet/pfid_int.h"

static void node(struct pfid_node *n, const char *name) {
  memset(n, 0, sizeof *n);
  snprintf(n->name, sizeof n->name, "%s", name);
  n->have_tel = 1;
  n->tel.n = n->n = 2;
  n->seq = 7;
  for (unsigned g = 0; g < 2; g++) {
    n->caps[g] = 300000;
    n->tel.gpu[g].cap_mw = n->tel.gpu[g].enforced_mw = 700000;
  }
}

static void test_confirmed(void **state) {
  (void)state;
  struct pfid_node n;
  node(&n, "n1");
  assert_int_equal(pfid_confirmed(&n), 1); /* nothing pending */
  n.need_seq = 7;
  n.tel.seq_applied = 6; /* not applied yet */
  assert_int_equal(pfid_confirmed(&n), 0);
  n.tel.seq_applied = 7; /* applied, one GPU still reads 700 W */
  n.tel.gpu[0].cap_mw = 300000;
  assert_int_equal(pfid_confirmed(&n), 0);
  n.tel.gpu[1].cap_mw = 300000;
  assert_int_equal(pfid_confirmed(&n), 1);
  n.tel.n = 1; /* a GPU fewer than the assignment */
  assert_int_equal(pfid_confirmed(&n), 0);
}

static void test_stale_blocks(void **state) {
  (void)state;
  struct pfid_node f[3];
  node(&f[0], "n1");
  node(&f[1], "n2");
  node(&f[2], "n3");
  assert_int_equal(pfid_raises_wait(f, 3), 0);
  /* n1's decrease published, not applied: the raises wait. */
  f[0].need_seq = 7;
  f[0].tel.seq_applied = 6;
  assert_int_equal(pfid_raises_wait(f, 3), 1);
  /* n1 goes stale before it confirmed: it may never have applied the
   * decrease, so the raises still wait (they did not before). */
  f[0].stale = 1;
  assert_int_equal(pfid_raises_wait(f, 3), 1);
  /* Back, it reports sequence 7 applied and 300 W read back: they go. */
  f[0].stale = 0;
  f[0].tel.seq_applied = 7;
  f[0].tel.gpu[0].cap_mw = f[0].tel.gpu[1].cap_mw = 300000;
  assert_int_equal(pfid_raises_wait(f, 3), 0);
}

/* A pfid taking the lead reads each node's assignment from the bucket:
 * the previous leader's cut to 250 W (sequence 9) awaits the agent's
 * confirmation, so raises wait until its telemetry says sequence 9 is
 * applied and both limits read 250 W or less; a restore awaits nothing. */
static void test_takeover(void **state) {
  (void)state;
  struct pfid_node f[2];
  node(&f[0], "n1");
  node(&f[1], "n2");
  struct pfi_fleet_assign a;
  memset(&a, 0, sizeof a);
  snprintf(a.node, sizeof a.node, "n1");
  a.seq = 9;
  a.n = 2;
  a.cap_mw[0] = a.cap_mw[1] = 250000;
  f[0].tel.seq_applied = 8; /* the agent has not applied it */
  pfid_node_from_bucket(&f[0], &a, 42);
  assert_int_equal(f[0].need_seq, 9);
  assert_int_equal(f[0].rev, 42);
  assert_int_equal(f[0].caps[1], 250000);
  assert_int_equal(pfid_raises_wait(f, 2), 1);
  f[0].tel.seq_applied = 9; /* applied, limits still read 700 W */
  assert_int_equal(pfid_raises_wait(f, 2), 1);
  f[0].tel.gpu[0].cap_mw = f[0].tel.gpu[1].cap_mw = 250000;
  assert_int_equal(pfid_raises_wait(f, 2), 0);
  a.restore = 1;
  a.seq = 10;
  pfid_node_from_bucket(&f[1], &a, 43);
  assert_int_equal(f[1].need_seq, 0);
  assert_int_equal(pfid_raises_wait(f, 2), 0);
}

/* What a period publishes. A period that only cut (sequence 7 to n1, not
 * yet applied), then one that only raises: the raise waits (the
 * decreases only, none here: the caps in force), though no raise was held
 * back behind that cut. Before, only a period that cut and raised
 * together held the next periods' raises: this one went out at once, and
 * a job spanning two nodes was raised on one while the other had not
 * applied its cut (fleet.test_fleet_slurm_multinode, under load). */
static void test_phase(void **state) {
  (void)state;
  int wd;
  /* Nothing pending: the wanted caps, a raise included. */
  assert_int_equal(pfid_phase(0, 0, 0, 1, 0, &wd), PFID_PUB_WANT);
  assert_int_equal(wd, 0);
  /* An earlier cut unconfirmed, the period only raises: it waits. */
  assert_int_equal(pfid_phase(0, 1, 0, 1, 0, &wd), PFID_PUB_DOWN);
  /* ... and it cuts and raises: the cuts go, the raises wait, also past
   * PFID_RAISE_WAIT_MAX periods (the earlier cut is unconfirmed). */
  assert_int_equal(pfid_phase(0, 1, 1, 1, PFID_RAISE_WAIT_MAX, &wd),
                   PFID_PUB_DOWN);
  assert_int_equal(wd, 0);
  /* Raises held behind the previous period's cuts, unconfirmed: the
   * caps in force. */
  assert_int_equal(pfid_phase(1, 1, 1, 1, 0, &wd), PFID_PUB_HOLD);
  /* Confirmed: cuts and raises of one period, the raises after the cuts
   * until they have waited PFID_RAISE_WAIT_MAX periods, then together. */
  assert_int_equal(pfid_phase(1, 0, 1, 1, 0, &wd), PFID_PUB_DOWN);
  assert_int_equal(pfid_phase(1, 0, 1, 1, PFID_RAISE_WAIT_MAX, &wd),
                   PFID_PUB_WANT);
  assert_int_equal(wd, 1);
  /* Only cuts, or nothing: the wanted caps. */
  assert_int_equal(pfid_phase(0, 1, 1, 0, 0, &wd), PFID_PUB_DOWN);
  assert_int_equal(pfid_phase(0, 0, 1, 0, 0, &wd), PFID_PUB_DOWN);
  assert_int_equal(pfid_phase(0, 1, 0, 0, 0, &wd), PFID_PUB_WANT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_confirmed),
      cmocka_unit_test(test_stale_blocks),
      cmocka_unit_test(test_takeover),
      cmocka_unit_test(test_phase),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
