/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The agent's node power (pfi_node_meter_*): the emulator's node model,
 * RAPL over the interval between fills, the BMC read by its own thread. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pfi/agent.h"
#include "pfi/fleet.h"
#include "testutil.h"

static char dir[256];

static void write_file(const char *path, const char *s) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(s, f);
  fclose(f);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "%s/pfi-nodemeter-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  return mkdtemp(dir) ? 0 : -1;
}

/* Telemetry of `n` GPUs drawing w[i]. */
static void tel(struct pfi_fleet_telemetry *t, unsigned n, const double *w) {
  memset(t, 0, sizeof *t);
  strcpy(t->node, "n1");
  t->n = n;
  for (unsigned i = 0; i < n; i++)
    t->gpu[i].power_w = w[i];
}

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* None by default: no source, nothing reported. */
static void test_none(void **state) {
  (void)state;
  struct pfi_node_meter_opts o = {0, NULL, "none", 10};
  struct pfi_node_meter *m;
  struct pfi_error err;
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), 0);
  assert_string_equal(pfi_node_meter_source(m), "");
  static struct pfi_fleet_telemetry t;
  double w[] = {300, 400};
  tel(&t, 2, w);
  pfi_node_meter_fill(m, &t, 1);
  assert_true(t.node_w < 0);
  assert_string_equal(t.node_source, "");
  pfi_node_meter_close(m);
}

/* Emulated: GPUs 300 + 400 W, 2 GPUs: 700 + 150 x 2 + 0.10 x 700 = 1070 W;
 * a GPU without power: none (the sum would be short). */
static void test_emulated(void **state) {
  (void)state;
  struct pfi_node_meter_opts o = {1, NULL, NULL, 10};
  struct pfi_node_meter *m;
  struct pfi_error err;
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), 0);
  static struct pfi_fleet_telemetry t;
  double w[] = {300, 400};
  tel(&t, 2, w);
  pfi_node_meter_fill(m, &t, 1);
  ASSERT_NEAR(t.node_w, 1070, 1e-9);
  assert_string_equal(t.node_source, "emulated");
  ASSERT_NEAR(t.node_age_s, 0, 0);
  t.gpu[1].power_w = -1;
  pfi_node_meter_fill(m, &t, 2);
  assert_true(t.node_w < 0);
  pfi_node_meter_close(m);
  /* --powercap none with --emulate: no node power. */
  o.powercap = "none";
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), 0);
  t.gpu[1].power_w = 400;
  pfi_node_meter_fill(m, &t, 3);
  assert_true(t.node_w < 0);
  pfi_node_meter_close(m);
}

/* RAPL: nothing at the first fill; then package +300 J and DRAM +30 J over
 * 2 s (core and psys left out) = 165 W beside 700 W of GPUs: 865 W. */
static void test_rapl(void **state) {
  (void)state;
  char root[300], p[512];
  snprintf(root, sizeof root, "%s/powercap", dir);
  mkdir(root, 0700);
  const char *zones[] = {"intel-rapl:0", "intel-rapl:0:0", "intel-rapl:0:1",
                         "intel-rapl:1"};
  const char *names[] = {"package-0", "core", "dram", "psys"};
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s", root, zones[i]);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/%s/name", root, zones[i]);
    write_file(p, names[i]);
    snprintf(p, sizeof p, "%s/%s/energy_uj", root, zones[i]);
    write_file(p, "1000000\n");
    snprintf(p, sizeof p, "%s/%s/max_energy_range_uj", root, zones[i]);
    write_file(p, "262143328850\n");
  }
  struct pfi_node_meter_opts o = {1, root, NULL, 10}; /* wins over emulated */
  struct pfi_node_meter *m;
  struct pfi_error err;
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), 0);
  assert_string_equal(pfi_node_meter_source(m), "rapl");
  static struct pfi_fleet_telemetry t;
  double w[] = {300, 400};
  tel(&t, 2, w);
  pfi_node_meter_fill(m, &t, 100);
  assert_true(t.node_w < 0);
  const char *after[] = {"301000000\n", "999000000\n", "31000000\n",
                         "999000000\n"};
  for (int i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s/%s/energy_uj", root, zones[i]);
    write_file(p, after[i]);
  }
  pfi_node_meter_fill(m, &t, 102);
  ASSERT_NEAR(t.node_w, 865, 1e-9);
  assert_string_equal(t.node_source, "rapl");
  pfi_node_meter_close(m);
  /* A root without a package zone, and RAPL with the BMC: refused. */
  o.powercap = dir;
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), PFI_ENOTFOUND);
  o.powercap = root;
  o.bmc = "ipmitool";
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), PFI_EINVAL);
}

/* The BMC: a fake ipmitool printing the documented reading. The thread
 * reads it off the caller; a fill reports it as the node's power (the
 * GPUs are in the BMC's reading, not added) with its age. */
static void test_bmc(void **state) {
  (void)state;
  char tool[300], spec[320];
  snprintf(tool, sizeof tool, "%s/ipmitool", dir);
  write_file(tool, "#!/bin/sh\necho '    Instantaneous power reading:        "
                   "          2151 Watts'\n");
  assert_int_equal(chmod(tool, 0755), 0);
  snprintf(spec, sizeof spec, "ipmitool:%s", tool);
  struct pfi_node_meter_opts o = {0, NULL, spec, 1};
  struct pfi_node_meter *m;
  struct pfi_error err;
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), 0);
  static struct pfi_fleet_telemetry t;
  double w[] = {300, 400};
  tel(&t, 2, w);
  /* Wait (bounded) for the thread's first reading. */
  for (int i = 0; i < 300; i++) {
    pfi_node_meter_fill(m, &t, mono());
    if (t.node_w >= 0)
      break;
    usleep(100000);
  }
  ASSERT_NEAR(t.node_w, 2151, 0);
  assert_string_equal(t.node_source, "dcmi");
  assert_true(t.node_age_s >= 0);
  /* Much later than 3 periods after it: not the node's power any more. */
  pfi_node_meter_fill(m, &t, mono() + 1000);
  assert_true(t.node_w < 0);
  assert_int_equal(pfi_node_meter_error(m, &err), 0);
  pfi_node_meter_close(m);
  /* A tool that fails: the failure is reported once. */
  write_file(tool, "#!/bin/sh\necho 'Error: Unable to establish IPMI v2' "
                   ">&2\nexit 1\n");
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), 0);
  int got = 0;
  for (int i = 0; i < 300 && !got; i++) {
    got = pfi_node_meter_error(m, &err);
    if (!got)
      usleep(100000);
  }
  assert_int_equal(got, 1);
  assert_non_null(strstr(err.msg, "Unable to establish"));
  pfi_node_meter_fill(m, &t, mono());
  assert_true(t.node_w < 0);
  pfi_node_meter_close(m);
}

/* A BMC reading brought to the GPUs' power of each fill: the fake BMC
 * reads 1900 W while the GPUs draw 700 + 700 W (500 W of other power);
 * after a cut to 500 + 500 W, before any new reading, the node is
 * 1000 + 500 = 1500 W (the reading as it was would count the GPUs' 400 W
 * fall as other power: 1900 W). */
static void test_bmc_paired(void **state) {
  (void)state;
  char tool[300], spec[320];
  snprintf(tool, sizeof tool, "%s/ipmitool", dir);
  write_file(tool, "#!/bin/sh\necho '    Instantaneous power reading:        "
                   "          1900 Watts'\n");
  assert_int_equal(chmod(tool, 0755), 0);
  snprintf(spec, sizeof spec, "ipmitool:%s", tool);
  struct pfi_node_meter_opts o = {0, NULL, spec, 1};
  struct pfi_node_meter *m;
  struct pfi_error err;
  assert_int_equal(pfi_node_meter_open(&m, &o, &err), 0);
  static struct pfi_fleet_telemetry t;
  double hi[] = {700, 700}, lo[] = {500, 500};
  tel(&t, 2, hi);
  /* 1.6 s of fills at 1400 W: a reading (one a second) taken after the
   * first of them. */
  double t_end = mono() + 1.6;
  while (mono() < t_end) {
    pfi_node_meter_fill(m, &t, mono());
    usleep(50000);
  }
  ASSERT_NEAR(t.node_w, 1900, 0);
  tel(&t, 2, lo);
  pfi_node_meter_fill(m, &t, mono());
  ASSERT_NEAR(t.node_w, 1500, 1e-9);
  assert_string_equal(t.node_source, "dcmi");
  pfi_node_meter_close(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_none),
      cmocka_unit_test(test_emulated),
      cmocka_unit_test(test_rapl),
      cmocka_unit_test(test_bmc),
      cmocka_unit_test(test_bmc_paired),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
