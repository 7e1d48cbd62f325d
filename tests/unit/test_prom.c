/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The Prometheus text parser on the real dcgm-exporter sample and on
 * hand-written exposition text with known values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfi/csv.h"
#include "pfi/prom.h"
#include "testutil.h"

/* The real scrape in data/dcgm/: 8x H100 node, lines for GPUs 0 and 1.
 * Expected values are read off the file by eye. Tolerance 1e-9: the values
 * are decimal literals converted once. */
static void real_fixture(void **state) {
  (void)state;
  char *text = NULL;
  size_t len = 0;
  struct pfi_error err;
  assert_int_equal(
      pfi_read_file("data/dcgm/h100-idle-eks.prom", &text, &len, &err), 0);
  struct pfi_prom_gpu *g = NULL;
  struct pfi_prom_stats st;
  int n = pfi_prom_parse("h100-idle-eks.prom", text, len, &g, &st, &err);
  ASSERT_EQ_INT(n, 2);
  ASSERT_EQ_INT(st.lines, 14);
  ASSERT_EQ_INT(st.samples, 6);
  ASSERT_EQ_INT(st.mapped, 6);
  ASSERT_EQ_INT(st.malformed, 0);
  assert_string_equal(g[0].host, "ip-100-64-171-120.ec2.internal");
  ASSERT_EQ_INT(g[0].gpu, 0);
  ASSERT_EQ_INT(g[1].gpu, 1);
  assert_string_equal(g[0].uuid, "GPU-22dbdd79-f55a-92a8-aa39-322198e72ed6");
  assert_string_equal(g[0].model, "NVIDIA H100 80GB HBM3");
  ASSERT_NEAR(g[0].s.v[PFI_FIELD_TEMP], 26, 1e-9);
  ASSERT_NEAR(g[1].s.v[PFI_FIELD_TEMP], 28, 1e-9);
  ASSERT_NEAR(g[0].s.v[PFI_FIELD_POWER], 67.351, 1e-9);
  ASSERT_NEAR(g[1].s.v[PFI_FIELD_POWER], 67.746, 1e-9);
  ASSERT_EQ_INT(g[0].s.power_mw, 67351);
  assert_true(pfi_sample_has(&g[0].s, PFI_FIELD_GPU_UTIL));
  assert_true(pfi_sample_has(&g[0].s, PFI_FIELD_MEM_COPY_UTIL));
  /* GPU 1 has no utilization lines: not valid, never 0. */
  assert_false(pfi_sample_has(&g[1].s, PFI_FIELD_GPU_UTIL));
  assert_false(pfi_sample_has(&g[0].s, PFI_FIELD_SM_ACTIVE));
  free(g);
  free(text);
}

/* New field names, lower-case hostname, units, timestamps, several hosts,
 * NaN readings and unknown metrics. */
static void aliases_units_hosts(void **state) {
  (void)state;
  const char in[] =
      "# TYPE DCGM_FI_DEV_BOARD_POWER_WATTS gauge\n"
      "DCGM_FI_DEV_BOARD_POWER_WATTS{gpu=\"3\",hostname=\"b\"} 512.5 "
      "1700000000123\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"3\",hostname=\"b\"} 2500\n"
      "DCGM_FI_DEV_POWER_VIOLATION{gpu=\"3\",hostname=\"b\"} 1500000\n"
      "DCGM_FI_PROF_DRAM_ACTIVE{gpu=\"3\",hostname=\"b\"} 0.42\n"
      "DCGM_FI_DEV_PCIE_TX_THROUGHPUT{gpu=\"3\",hostname=\"b\"} 2\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"a\"} 100\n"
      "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",Hostname=\"a\"} NaN\n"
      "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",Hostname=\"a\"} 0\n"
      "node_cpu_seconds_total{cpu=\"0\"} 12.5\n"
      "DCGM_FI_DEV_GPU_TEMP 40\n";
  struct pfi_prom_gpu *g = NULL;
  struct pfi_prom_stats st;
  struct pfi_error err;
  int n = pfi_prom_parse("x.prom", in, sizeof in - 1, &g, &st, &err);
  ASSERT_EQ_INT(n, 2);
  ASSERT_EQ_INT(st.malformed, 0);
  ASSERT_EQ_INT(st.unknown, 2);
  ASSERT_EQ_INT(st.nogpu, 1);
  /* Sorted by host: "a" first. */
  assert_string_equal(g[0].host, "a");
  ASSERT_NEAR(g[0].s.v[PFI_FIELD_POWER], 100, 0);
  assert_false(pfi_sample_has(&g[0].s, PFI_FIELD_SM_CLOCK));
  assert_string_equal(g[1].host, "b");
  ASSERT_EQ_INT(g[1].gpu, 3);
  ASSERT_NEAR(g[1].s.v[PFI_FIELD_POWER], 512.5, 0);
  /* 2500 mJ = 2.5 J; 1.5e6 us = 1.5 s; 2 KB/s = 2048 B/s. */
  ASSERT_NEAR(g[1].s.v[PFI_FIELD_ENERGY], 2.5, 1e-12);
  ASSERT_NEAR(g[1].s.v[PFI_FIELD_THROTTLE_POWER], 1.5, 1e-12);
  ASSERT_NEAR(g[1].s.v[PFI_FIELD_PCIE_TX], 2048, 0);
  ASSERT_NEAR(g[1].s.v[PFI_FIELD_DRAM_ACTIVE], 0.42, 1e-12);
  /* Milliseconds to seconds. */
  ASSERT_NEAR(g[1].s.t_s, 1700000000.123, 1e-6);
  free(g);
}

/* Malformed lines are counted with line and column, and skipped. */
static void malformed_lines(void **state) {
  (void)state;
  const char in[] = "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 30\n"     /* 1 ok */
                    "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\" 30\n"      /* 2 no } */
                    "DCGM_FI_DEV_GPU_TEMP{gpu=\"2\"} abc\n"    /* 3 value */
                    "9metric 1\n"                              /* 4 name */
                    "DCGM_FI_DEV_GPU_TEMP{gpu=2} 1\n"          /* 5 unquoted */
                    "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\"} 1 2 3\n"  /* 6 trailing */
                    "DCGM_FI_DEV_GPU_TEMP{gpu=\"4\",} 31\r\n"; /* 7 ok, CRLF */
  struct pfi_prom_gpu *g = NULL;
  struct pfi_prom_stats st;
  struct pfi_error err;
  int n = pfi_prom_parse("bad.prom", in, sizeof in - 1, &g, &st, &err);
  ASSERT_EQ_INT(n, 2);
  ASSERT_EQ_INT(st.malformed, 5);
  ASSERT_EQ_INT(st.nbad, 5);
  ASSERT_EQ_INT(st.bad[0].line, 2);
  ASSERT_EQ_INT(st.bad[1].line, 3);
  ASSERT_EQ_INT(st.bad[1].column,
                31); /* 20-char name, 9-char labels, a space */
  ASSERT_EQ_INT(st.bad[2].line, 4);
  ASSERT_EQ_INT(st.bad[2].column, 1);
  ASSERT_EQ_INT(st.bad[3].line, 5);
  ASSERT_EQ_INT(st.bad[4].line, 6);
  assert_int_equal(pfi_prom_bad_error(&st, 1, "bad.prom", &err), PFI_EPARSE);
  assert_string_equal(err.file, "bad.prom");
  ASSERT_EQ_INT(err.line, 3);
  ASSERT_NEAR(g[1].s.v[PFI_FIELD_TEMP], 31, 0);
  free(g);
  /* A NUL byte is not text. */
  const char nul[] = "a 1\nb\0 2\n";
  assert_int_equal(pfi_prom_parse("n.prom", nul, sizeof nul - 1, &g, &st, &err),
                   PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 2);
  ASSERT_EQ_INT(err.column, 2);
  /* Empty input: no GPUs, no error. */
  assert_int_equal(pfi_prom_parse("e.prom", "", 0, &g, &st, &err), 0);
  assert_null(g);
}

static void field_map(void **state) {
  (void)state;
  double sc;
  assert_int_equal(pfi_prom_field("DCGM_FI_DEV_POWER_USAGE", 23, &sc),
                   PFI_FIELD_POWER);
  assert_int_equal(pfi_prom_field("DCGM_FI_DEV_BOARD_POWER_WATTS", 29, &sc),
                   PFI_FIELD_POWER);
  assert_int_equal(pfi_prom_field("DCGM_FI_DEV_POWER", 17, &sc), -1);
}

/* Label sets that repeat across metrics resolve to the GPU record of their
 * first appearance: 20 GPUs on two hosts (more sets than the parser keeps
 * in its ring of recent ones, so some are parsed again), metric by metric,
 * with values v = 100 * host + gpu + metric / 10 written exactly; the
 * counters of a stats struct filled with garbage are set anew, and a
 * value with escapes is read to its closing quote. */
static void repeated_sets(void **state) {
  (void)state;
  static const char *const metric[3] = {"DCGM_FI_DEV_POWER_USAGE",
                                        "DCGM_FI_DEV_GPU_TEMP",
                                        "DCGM_FI_DEV_SM_CLOCK"};
  char in[16384];
  size_t o = 0;
  for (int m = 0; m < 3; m++) {
    o += (size_t)snprintf(in + o, sizeof in - o,
                          "# HELP %s x\n# TYPE %s gauge\n", metric[m],
                          metric[m]);
    for (int h = 0; h < 2; h++)
      for (int u = 0; u < 10; u++)
        o += (size_t)snprintf(
            in + o, sizeof in - o,
            "%s{gpu=\"%d\",UUID=\"GPU-%d-%d\",Hostname=\"node-%d\","
            "pod=\"a\\\"b\\\\c-long-value-%d\"} %d.%d\n",
            metric[m], u, h, u, h, u, 100 * h + u, m);
  }
  struct pfi_prom_gpu *g = NULL;
  struct pfi_prom_stats st;
  memset(&st, 0x5a, sizeof st);
  struct pfi_error err;
  int n = pfi_prom_parse("rep.prom", in, o, &g, &st, &err);
  ASSERT_EQ_INT(n, 20);
  ASSERT_EQ_INT(st.lines, 66);
  ASSERT_EQ_INT(st.samples, 60);
  ASSERT_EQ_INT(st.mapped, 60);
  ASSERT_EQ_INT(st.unknown, 0);
  ASSERT_EQ_INT(st.nogpu, 0);
  ASSERT_EQ_INT(st.malformed, 0);
  ASSERT_EQ_INT(st.nbad, 0);
  for (int i = 0; i < 20; i++) {
    int h = i / 10, u = i % 10;
    char host[16], uuid[16];
    snprintf(host, sizeof host, "node-%d", h);
    snprintf(uuid, sizeof uuid, "GPU-%d-%d", h, u);
    assert_string_equal(g[i].host, host);
    ASSERT_EQ_INT(g[i].gpu, u);
    assert_string_equal(g[i].uuid, uuid);
    ASSERT_EQ_INT(g[i].order, i);
    ASSERT_NEAR(g[i].s.v[PFI_FIELD_POWER], 100 * h + u, 0);
    ASSERT_NEAR(g[i].s.v[PFI_FIELD_TEMP], 100 * h + u + 0.1, 1e-12);
    ASSERT_NEAR(g[i].s.v[PFI_FIELD_SM_CLOCK], 100 * h + u + 0.2, 1e-12);
  }
  free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(real_fixture),
      cmocka_unit_test(aliases_units_hosts),
      cmocka_unit_test(malformed_lines),
      cmocka_unit_test(field_map),
      cmocka_unit_test(repeated_sets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
