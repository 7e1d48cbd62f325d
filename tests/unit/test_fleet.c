/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The fleet's messages and the agent's safety rules, without a network:
 * the agent runs on emulated GPUs and the test reads their limits through
 * a second device session, as any other tool would. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pfi/agent.h"
#include "pfi/capset.h"
#include "pfi/control.h"
#include "pfi/device.h"
#include "pfi/fleet.h"
#include "pfi/phase.h"
#include "pfi/transport.h"
#include "testutil.h"

static char dir[] = "/tmp/pfi-test-fleet-XXXXXX";
static char params[300], record[300];

static void other_set(unsigned gpu, uint32_t mw) {
  struct pfi_device *dev;
  struct pfi_error err;
  assert_int_equal(pfi_device_open(&dev, "emu", params, &err), 0);
  assert_int_equal(pfi_device_set_cap(dev, gpu, mw, &err), 0);
  pfi_device_close(dev);
}

static uint32_t other_get(unsigned gpu) {
  struct pfi_device *dev;
  struct pfi_error err;
  uint32_t mw = 0;
  assert_int_equal(pfi_device_open(&dev, "emu", params, &err), 0);
  assert_int_equal(pfi_device_get_cap(dev, gpu, &mw, &err), 0);
  pfi_device_close(dev);
  return mw;
}

/* An assignment message for node n1. */
static size_t assign(char *buf, size_t n, uint64_t seq, const char *event,
                     double end, double lease, uint32_t c0, uint32_t c1,
                     int restore) {
  struct pfi_fleet_assign a;
  struct pfi_error err;
  memset(&a, 0, sizeof a);
  strcpy(a.node, "n1");
  strcpy(a.leader, "pfid-a");
  a.seq = seq;
  a.issued_s = 1000;
  a.lease_s = lease;
  if (event) {
    strcpy(a.event, event);
    a.event_end_s = end;
  }
  a.restore = restore;
  a.n = restore ? 0 : 2;
  a.cap_mw[0] = c0;
  a.cap_mw[1] = c1;
  int len = pfi_fleet_assign_encode(&a, buf, n, &err);
  assert_true(len > 0);
  return (size_t)len;
}

static void test_assign_codec(void **state) {
  char buf[4096];
  struct pfi_fleet_assign a;
  struct pfi_error err;
  size_t len = assign(buf, sizeof buf, 7, "ev1", 2000.5, 5, 400000, 450000, 0);
  assert_int_equal(pfi_fleet_assign_decode(buf, len, &a, &err), 0);
  ASSERT_EQ_INT(a.seq, 7);
  assert_string_equal(a.node, "n1");
  assert_string_equal(a.event, "ev1");
  ASSERT_NEAR(a.event_end_s, 2000.5, 0);
  ASSERT_NEAR(a.lease_s, 5, 0);
  ASSERT_EQ_INT(a.n, 2);
  ASSERT_EQ_INT(a.cap_mw[1], 450000);
  static const char *const bad[] = {
      "",
      "[]",
      "{\"v\":2,\"node\":\"n1\",\"seq\":1,\"leader\":\"a\",\"issued\":1,"
      "\"lease_s\":1,\"caps_mw\":[1]}",
      /* a node name that would be a subject wildcard */
      "{\"v\":1,\"node\":\"n1.>\",\"seq\":1,\"leader\":\"a\",\"issued\":1,"
      "\"lease_s\":1,\"caps_mw\":[1]}",
      "{\"v\":1,\"node\":\"n1\",\"seq\":0,\"leader\":\"a\",\"issued\":1,"
      "\"lease_s\":1,\"caps_mw\":[1]}",
      "{\"v\":1,\"node\":\"n1\",\"seq\":1,\"leader\":\"a\",\"issued\":1,"
      "\"lease_s\":1,\"caps_mw\":[-5]}",
      "{\"v\":1,\"node\":\"n1\",\"seq\":1,\"leader\":\"a\",\"issued\":1,"
      "\"lease_s\":1,\"restore\":true,\"caps_mw\":[1]}",
      "{\"v\":1,\"node\":\"n1\",\"seq\":1,\"leader\":\"a\",\"issued\":1,"
      "\"lease_s\":1,\"event\":\"e\",\"caps_mw\":[1]}",
      "{\"v\":1,\"node\":\"n1\",\"node\":\"n2\",\"seq\":1,\"leader\":\"a\","
      "\"issued\":1,\"lease_s\":1,\"caps_mw\":[1]}",
      "{\"v\":1,\"node\":\"n1\",\"seq\":1.5,\"leader\":\"a\",\"issued\":1,"
      "\"lease_s\":1,\"caps_mw\":[1]}",
      "{\"v\":1,\"node\":\"n1\",\"seq\":1,\"leader\":\"a\",\"issued\":1,"
      "\"lease_s\":0,\"caps_mw\":[1]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(pfi_fleet_assign_decode(bad[i], strlen(bad[i]), &a, &err),
                     PFI_EPARSE);
  /* A NUL byte, here after a complete object: refused, not cut short. */
  char nb[4096];
  memcpy(nb, buf, len);
  memcpy(nb + len, "\0{}", 3);
  assert_int_equal(pfi_fleet_assign_decode(nb, len + 3, &a, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "NUL"));
  /* Oversized: refused before parsing. */
  size_t big = PFI_FLEET_MSG_MAX + 1;
  char *b = malloc(big);
  memset(b, ' ', big);
  memcpy(b, buf, len);
  assert_int_equal(pfi_fleet_assign_decode(b, big, &a, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "bytes"));
  free(b);
}

/* Node power in telemetry: an old message without it decodes as not
 * measured; with it, the three fields round-trip; a bad source, a negative
 * age or power out of range is refused naming the field. */
/* A GPU's restore limit in telemetry (optional "restore_mw": absent in an
 * older agent's message, 0 after decoding) and the control state pfid
 * keeps in the bucket (key "ctl", its recovery's start optional): round
 * trips, and bad fields named. */
static void test_restore_and_ctl_state(void **state) {
  (void)state;
  struct pfi_fleet_telemetry t, u;
  struct pfi_error err;
  char buf[PFI_FLEET_MSG_MAX];
  static const char old[] =
      "{\"v\":1,\"node\":\"n1\",\"t\":100,\"seq_applied\":3,"
      "\"mode\":\"tracking\",\"gpus\":[{\"min_mw\":1,\"max_mw\":2,"
      "\"default_mw\":2,\"cap_mw\":2,\"enforced_mw\":2,\"assigned_mw\":1}]}";
  assert_int_equal(pfi_fleet_telemetry_decode(old, strlen(old), &u, &err), 0);
  assert_int_equal(u.gpu[0].restore_mw, 0);
  memset(&t, 0, sizeof t);
  strcpy(t.node, "n1");
  t.t_s = 100;
  t.n = 2;
  t.gpu[0] = (struct pfi_fleet_gpu){.min_mw = 200000, .max_mw = 700000,
                                    .cap_mw = 450000, .enforced_mw = 450000,
                                    .assigned_mw = 450000, .power_w = -1,
                                    .restore_mw = 650000};
  t.gpu[1] = t.gpu[0];
  t.gpu[1].restore_mw = 0;
  int len = pfi_fleet_telemetry_encode(&t, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_telemetry_decode(buf, (size_t)len, &u, &err), 0);
  assert_int_equal(u.gpu[0].restore_mw, 650000);
  assert_int_equal(u.gpu[1].restore_mw, 0);
  static const char badr[] =
      "{\"v\":1,\"node\":\"n1\",\"t\":100,\"seq_applied\":3,"
      "\"mode\":\"tracking\",\"gpus\":[{\"min_mw\":1,\"max_mw\":2,"
      "\"default_mw\":2,\"cap_mw\":2,\"enforced_mw\":2,\"assigned_mw\":1,"
      "\"restore_mw\":-4}]}";
  assert_int_equal(pfi_fleet_telemetry_decode(badr, strlen(badr), &u, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "restore_mw"));

  struct pfi_fleet_ctl_state c = {.event = "ev-7",
                                  .baseline_w = 4321.5,
                                  .t_s = 1.7e9},
                             c2;
  len = pfi_fleet_ctl_state_encode(&c, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_ctl_state_decode(buf, (size_t)len, &c2, &err), 0);
  assert_string_equal(c2.event, "ev-7");
  ASSERT_NEAR(c2.baseline_w, 4321.5, 0);
  ASSERT_NEAR(c2.t_s, 1.7e9, 0);
  ASSERT_NEAR(c2.recovery_t0, 0, 0); /* absent: no recovery yet */
  /* Its recovery's start round-trips; a baseline unknown (0) too. */
  c.baseline_w = 0;
  c.recovery_t0 = 1.7e9 + 12.25;
  len = pfi_fleet_ctl_state_encode(&c, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_ctl_state_decode(buf, (size_t)len, &c2, &err), 0);
  ASSERT_NEAR(c2.baseline_w, 0, 0);
  ASSERT_NEAR(c2.recovery_t0, 1.7e9 + 12.25, 0);
  c.baseline_w = -1;
  assert_int_equal(pfi_fleet_ctl_state_encode(&c, buf, sizeof buf, &err),
                   PFI_EINVAL);
  static const struct {
    const char *m, *field;
  } bad[] = {
      {"{\"v\":1,\"event\":\"e\",\"baseline_w\":1,\"t\":1,\"recovery_t0\":-2}",
       "recovery_t0"},
      {"{\"v\":1,\"event\":\"e\",\"baseline_w\":-3,\"t\":1}", "baseline_w"},
      {"{\"v\":1,\"event\":\"e\",\"t\":1}", "baseline_w"},
      {"{\"v\":1,\"event\":\"\",\"baseline_w\":5,\"t\":1}", "event"},
      {"{\"v\":1,\"event\":\"a b\",\"baseline_w\":5,\"t\":1}", "event"},
      {"{\"v\":1,\"event\":\"e\",\"baseline_w\":5}", "\"t\""},
      {"[1]", "ctl"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(
        pfi_fleet_ctl_state_decode(bad[i].m, strlen(bad[i].m), &c2, &err),
        PFI_EPARSE);
    if (!strstr(err.msg, bad[i].field))
      fail_msg("'%s': '%s' does not name %s", bad[i].m, err.msg,
               bad[i].field);
  }
}

static void test_telemetry_node_power(void **state) {
  (void)state;
  struct pfi_fleet_telemetry t, u;
  struct pfi_error err;
  char buf[PFI_FLEET_MSG_MAX];
  static const char old[] =
      "{\"v\":1,\"node\":\"n1\",\"t\":100,\"seq_applied\":0,"
      "\"mode\":\"idle\",\"gpus\":[{\"min_mw\":1,\"max_mw\":2,"
      "\"default_mw\":2,\"cap_mw\":2,\"enforced_mw\":2,\"assigned_mw\":0,"
      "\"power_w\":300}]}";
  assert_int_equal(pfi_fleet_telemetry_decode(old, strlen(old), &u, &err), 0);
  assert_true(u.node_w < 0);
  assert_string_equal(u.node_source, "");
  ASSERT_EQ_INT(u.record_failed, 0); /* an older agent's: records */
  /* Re-encoded, it still carries no node power. */
  int len = pfi_fleet_telemetry_encode(&u, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_null(strstr(buf, "node_w"));
  assert_null(strstr(buf, "record_ok"));
  /* An agent that cannot write its record says so (false only). */
  u.record_failed = 1;
  len = pfi_fleet_telemetry_encode(&u, buf, sizeof buf, &err);
  assert_non_null(strstr(buf, "\"record_ok\":false"));
  memset(&t, 0, sizeof t);
  assert_int_equal(pfi_fleet_telemetry_decode(buf, (size_t)len, &t, &err), 0);
  ASSERT_EQ_INT(t.record_failed, 1);

  memset(&t, 0, sizeof t);
  strcpy(t.node, "n1");
  t.t_s = 100;
  t.node_w = 2151.25;
  strcpy(t.node_source, "dcmi");
  t.node_age_s = 4.5;
  len = pfi_fleet_telemetry_encode(&t, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_non_null(strstr(buf, "\"node_source\":\"dcmi\""));
  assert_int_equal(pfi_fleet_telemetry_decode(buf, (size_t)len, &u, &err), 0);
  ASSERT_NEAR(u.node_w, 2151.25, 0);
  ASSERT_NEAR(u.node_age_s, 4.5, 0);
  assert_string_equal(u.node_source, "dcmi");

  static const struct {
    const char *extra, *field;
  } bad[] = {
      {"\"node_w\":100,\"node_source\":\"gpu\"", "node_source"},
      {"\"node_w\":100", "node_source"},
      {"\"node_w\":-5,\"node_source\":\"rapl\"", "node_w"},
      {"\"node_w\":2e6,\"node_source\":\"rapl\"", "node_w"},
      {"\"node_w\":100,\"node_source\":\"rapl\",\"node_age_s\":-1",
       "node_age_s"},
      {"\"record_ok\":1", "record_ok"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char m[512];
    snprintf(m, sizeof m,
             "{\"v\":1,\"node\":\"n1\",\"t\":100,\"seq_applied\":0,"
             "\"mode\":\"idle\",%s,\"gpus\":[]}",
             bad[i].extra);
    assert_int_equal(pfi_fleet_telemetry_decode(m, strlen(m), &u, &err),
                     PFI_EPARSE);
    assert_non_null(strstr(err.msg, bad[i].field));
  }
}

/* docs/fleet.md "Trust": the bounds an agent puts on an assignment and
 * pfid on telemetry, at their edges (figures worked by hand). */
static void test_trust_bounds(void **state) {
  (void)state;
  struct pfi_error err;
  struct pfi_fleet_assign a;
  memset(&a, 0, sizeof a);
  strcpy(a.node, "n1");
  a.lease_s = 5;
  /* Jump: 100 + 2^24 = 16,777,316 is the last taken after 100. */
  a.seq = 100 + 16777216ull;
  assert_int_equal(pfi_fleet_assign_check(&a, 100, 1e9, &err), 0);
  a.seq++;
  assert_int_equal(pfi_fleet_assign_check(&a, 100, 1e9, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "\"seq\""));
  /* A first assignment: up to 2^52 = 4,503,599,627,370,496. */
  a.seq = 4503599627370496ull;
  assert_int_equal(pfi_fleet_assign_check(&a, 0, 1e9, &err), 0);
  a.seq = 9007199254740992ull; /* 2^53 */
  assert_int_equal(pfi_fleet_assign_check(&a, 0, 1e9, &err), PFI_EINVAL);
  assert_int_equal(pfi_fleet_assign_check(&a, 14, 1e9, &err), PFI_EINVAL);
  /* Event end: now + 604,800 s taken, a millisecond more refused; 1e11
   * refused. */
  a.seq = 101;
  strcpy(a.event, "ev1");
  a.event_end_s = 1e9 + 604800;
  assert_int_equal(pfi_fleet_assign_check(&a, 100, 1e9, &err), 0);
  a.event_end_s = 1e9 + 604800.001;
  assert_int_equal(pfi_fleet_assign_check(&a, 100, 1e9, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "\"event_end\""));
  a.event_end_s = 1e11;
  assert_int_equal(pfi_fleet_assign_check(&a, 100, 1e9, &err), PFI_EINVAL);

  /* Telemetry: a 700 W GPU may show 700 * 1.1 + 25 = 795 W. */
  struct pfi_fleet_telemetry t, u;
  memset(&t, 0, sizeof t);
  strcpy(t.node, "n1");
  t.n = 2;
  t.node_w = -1;
  for (unsigned i = 0; i < 2; i++) {
    snprintf(t.gpu[i].uuid, sizeof t.gpu[i].uuid, "GPU-%u", i);
    t.gpu[i].min_mw = 200000;
    t.gpu[i].max_mw = t.gpu[i].default_mw = t.gpu[i].cap_mw = 700000;
    t.gpu[i].power_w = 795;
  }
  assert_int_equal(pfi_fleet_telemetry_plausible(&t, &err), 0);
  t.gpu[1].power_w = 795.01;
  assert_int_equal(pfi_fleet_telemetry_plausible(&t, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "GPU 1: power_w"));
  t.gpu[1].power_w = 50000; /* 50 kW */
  assert_int_equal(pfi_fleet_telemetry_plausible(&t, &err), PFI_EINVAL);
  t.gpu[1].power_w = 300;
  /* The node: 2 * 795 + 20,000 = 21,590 W. */
  t.node_w = 21590;
  assert_int_equal(pfi_fleet_telemetry_plausible(&t, &err), 0);
  t.node_w = 21590.5;
  assert_int_equal(pfi_fleet_telemetry_plausible(&t, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "node_w"));
  t.node_w = -1;
  u = t;
  u.gpu[0].max_mw = 3000001; /* above 3 kW */
  assert_int_equal(pfi_fleet_telemetry_plausible(&u, &err), PFI_EINVAL);
  u = t;
  u.gpu[0].cap_mw = 199999;
  assert_int_equal(pfi_fleet_telemetry_plausible(&u, &err), PFI_EINVAL);
  u = t;
  strcpy(u.gpu[1].uuid, "GPU-0");
  assert_int_equal(pfi_fleet_telemetry_plausible(&u, &err), PFI_EINVAL);
  /* The signature follows the GPUs, not their state. */
  u = t;
  u.gpu[0].power_w = 10;
  u.gpu[0].cap_mw = 300000;
  assert_true(pfi_fleet_telemetry_gpu_sig(&u) == pfi_fleet_telemetry_gpu_sig(&t));
  strcpy(u.gpu[0].uuid, "GPU-9");
  assert_true(pfi_fleet_telemetry_gpu_sig(&u) != pfi_fleet_telemetry_gpu_sig(&t));
  u = t;
  u.n = 1;
  assert_true(pfi_fleet_telemetry_gpu_sig(&u) != pfi_fleet_telemetry_gpu_sig(&t));

  /* record_ok: absent is true, false round-trips, a string is refused. */
  char buf[PFI_FLEET_MSG_MAX];
  t.record_failed = 1;
  int len = pfi_fleet_telemetry_encode(&t, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_non_null(strstr(buf, "\"record_ok\":false"));
  assert_int_equal(pfi_fleet_telemetry_decode(buf, (size_t)len, &u, &err), 0);
  assert_int_equal(u.record_failed, 1);
  t.record_failed = 0;
  len = pfi_fleet_telemetry_encode(&t, buf, sizeof buf, &err);
  assert_null(strstr(buf, "record_ok"));
  assert_int_equal(pfi_fleet_telemetry_decode(buf, (size_t)len, &u, &err), 0);
  assert_int_equal(u.record_failed, 0);
  static const char badr[] =
      "{\"v\":1,\"node\":\"n1\",\"t\":100,\"seq_applied\":0,"
      "\"mode\":\"idle\",\"record_ok\":\"no\",\"gpus\":[]}";
  assert_int_equal(pfi_fleet_telemetry_decode(badr, strlen(badr), &u, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "record_ok"));
}

static void test_telemetry_event_codec(void **state) {
  struct pfi_fleet_telemetry t, u;
  struct pfi_error err;
  char buf[PFI_FLEET_MSG_MAX];
  memset(&t, 0, sizeof t);
  strcpy(t.node, "n-7");
  t.t_s = 1234.25;
  t.seq_applied = 42;
  t.mode = PFI_AGENT_HOLD;
  t.n = 1;
  strcpy(t.gpu[0].uuid, "GPU-1");
  t.gpu[0].min_mw = 200000;
  t.gpu[0].max_mw = 700000;
  t.gpu[0].cap_mw = 500000;
  t.gpu[0].power_w = 312.5;
  strcpy(t.gpu[0].job, "job-1");
  t.n_jobs = 1;
  strcpy(t.job[0].id, "job-1");
  t.job[0].tokens_per_s = 1e5;
  int len = pfi_fleet_telemetry_encode(&t, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_telemetry_decode(buf, (size_t)len, &u, &err), 0);
  assert_string_equal(u.node, "n-7");
  ASSERT_EQ_INT(u.seq_applied, 42);
  ASSERT_EQ_INT(u.mode, PFI_AGENT_HOLD);
  ASSERT_NEAR(u.gpu[0].power_w, 312.5, 0);
  ASSERT_EQ_INT(u.gpu[0].cap_mw, 500000);
  ASSERT_NEAR(u.job[0].tokens_per_s, 1e5, 0);
  static const char bad[] =
      "{\"v\":1,\"node\":\"n\",\"t\":1,\"seq_applied\":0,\"mode\":\"x\","
      "\"gpus\":[]}";
  assert_int_equal(pfi_fleet_telemetry_decode(bad, strlen(bad), &u, &err),
                   PFI_EPARSE);
  struct pfi_fleet_event e = {"ev", 10, 20, 1500, 0, 0, PFI_LEVEL_GPU}, f;
  len = pfi_fleet_event_encode(&e, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_event_decode(buf, (size_t)len, &f, &err), 0);
  ASSERT_NEAR(f.target_w, 1500, 0);
  static const char back[] =
      "{\"v\":1,\"id\":\"e\",\"start\":5,\"end\":5,\"target_w\":1}";
  assert_int_equal(pfi_fleet_event_decode(back, strlen(back), &f, &err),
                   PFI_EPARSE);
}

/* Events stated at the node or meter level: the codec (an older record
 * without "level" reads as GPU power), the freshness rule of the nodes'
 * other power and the conversion to a GPU target, worked by hand. */
static void test_event_levels(void **state) {
  (void)state;
  char buf[1024];
  struct pfi_error err;
  struct pfi_fleet_event e = {"ev", 10, 20, 4000, 0, 0, PFI_LEVEL_METER}, f;
  int len = pfi_fleet_event_encode(&e, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_non_null(strstr(buf, "\"level\":\"meter\""));
  assert_int_equal(pfi_fleet_event_decode(buf, (size_t)len, &f, &err), 0);
  assert_int_equal(f.level, PFI_LEVEL_METER);
  e.level = PFI_LEVEL_GPU; /* written as an older pfid wrote it */
  len = pfi_fleet_event_encode(&e, buf, sizeof buf, &err);
  assert_null(strstr(buf, "level"));
  static const char old[] = "{\"v\":1,\"id\":\"e\",\"start\":5,\"end\":6,"
                            "\"target_w\":1000,\"cancelled\":false}";
  f.level = 7;
  assert_int_equal(pfi_fleet_event_decode(old, strlen(old), &f, &err), 0);
  assert_int_equal(f.level, PFI_LEVEL_GPU);
  static const char badlv[] = "{\"v\":1,\"id\":\"e\",\"start\":5,\"end\":6,"
                              "\"target_w\":1000,\"level\":\"kW\"}";
  assert_int_equal(pfi_fleet_event_decode(badlv, strlen(badlv), &f, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "\"level\""));
  assert_int_equal(pfi_fleet_level_by_name("node"), PFI_LEVEL_NODE);
  assert_int_equal(pfi_fleet_level_by_name("rack"), -1);

  /* node_other_w 500 W, supplies rated 2000 W (0.2:0.90, 0.5:0.95,
   * 1.0:0.92), PUE 1.25, 1000 W of facility loads. */
  static const char conf[] = "node_other_w = 500\npsu_rated_w = 2000\n"
                             "psu_curve = 0.2:0.90,0.5:0.95,1.0:0.92\n"
                             "pue = 1.25\nfacility_other_w = 1000\n";
  struct pfi_meter_config mc;
  assert_int_equal(
      pfi_meter_config_load_mem("m.conf", conf, strlen(conf), &mc, &err), 0);
  ASSERT_NEAR(pfi_fleet_node_other_w(&mc, 300, 1), 300, 0);
  assert_true(isnan(pfi_fleet_node_other_w(&mc, 300, 0))); /* stale: 500 */
  ASSERT_NEAR(pfi_fleet_node_other_w(&mc, 700, 0), 700, 0);
  assert_true(isnan(pfi_fleet_node_other_w(&mc, NAN, 1)));

  /* Two nodes: GPUs 1500 W and 500 W, other power 300 W measured and
   * 500 W configured. */
  double gw[2] = {1500, 500}, ow[2] = {300, NAN}, g, sf;
  /* Node level, 3000 W: 3000 - 800 = 2200 W of GPU power. */
  assert_int_equal(pfi_fleet_event_gpu_target(&mc, gw, ow, 2, PFI_LEVEL_NODE,
                                              3000, &g, &sf, &err),
                   0);
  ASSERT_NEAR(g, 2200, 1e-9);
  ASSERT_NEAR(sf, 0, 0);
  /* Meter level at the meter power of a 2000 W GPU total shared 3:1:
   * node A 1500 + 300 = 1800 W DC, load 0.9, efficiency
   * 0.95 - 0.03 * 0.4 / 0.5 = 0.926; node B 500 + 500 = 1000 W, load 0.5,
   * 0.95; meter 1.25 * (1800 / 0.926 + 1000 / 0.95) + 1000. */
  double meter = 1.25 * (1800 / 0.926 + 1000 / 0.95) + 1000;
  assert_int_equal(pfi_fleet_event_gpu_target(&mc, gw, ow, 2, PFI_LEVEL_METER,
                                              meter, &g, &sf, &err),
                   0);
  ASSERT_NEAR(g, 2000, 0.01);
  assert_true(g <= 2000); /* the safe side of the bisection */
  /* The GPU level: the target itself. */
  assert_int_equal(pfi_fleet_event_gpu_target(&mc, gw, ow, 2, PFI_LEVEL_GPU,
                                              1234, &g, &sf, &err),
                   0);
  ASSERT_NEAR(g, 1234, 0);
  /* Infeasible at the meter, 1500 W: with no GPU power node A draws 300 W
   * at load 0.15 (0.90, the curve's first point), node B 500 W at 0.25
   * (0.90 + 0.05 * 0.05 / 0.3); 1.25 * (300 / 0.9 + 500 / 0.908333) + 1000
   * = 2104.74 W, short by 604.74 W. */
  double floor_w = 1.25 * (300 / 0.9 + 500 / (0.90 + 0.05 * 0.05 / 0.3)) + 1000;
  assert_int_equal(pfi_fleet_event_gpu_target(&mc, gw, ow, 2, PFI_LEVEL_METER,
                                              1500, &g, &sf, &err),
                   1);
  ASSERT_NEAR(g, 0, 0);
  ASSERT_NEAR(sf, floor_w - 1500, 1e-6);
  ASSERT_NEAR(sf, 604.74, 0.01);
  /* A curve whose efficiency rises faster than the load (0.30 at 10 %,
   * 0.95 at 20 %: 0.1 / 0.3 > 0.2 / 0.95, the wall falls as the load
   * rises) is refused at its line; the curve above is safe. */
  double lo, hi;
  assert_int_equal(pfi_fleet_meter_safe(&mc, &lo, &hi), 1);
  char path[] = "/tmp/pfi-meter-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  static const char unsafe[] = "pue = 1.2\npsu_rated_w = 3000\n"
                               "  psu_curve = 0.1:0.30,0.2:0.95,1.0:0.92\n";
  assert_int_equal(write(fd, unsafe, strlen(unsafe)), (int)strlen(unsafe));
  close(fd);
  assert_int_equal(pfi_fleet_meter_config_load(path, &mc, &err), PFI_EPARSE);
  assert_int_equal(err.line, 3);
  assert_int_equal(err.column, 3);
  assert_non_null(strstr(err.msg, "from load 0.1 to 0.2"));
  unlink(path);
  assert_int_equal(
      pfi_meter_config_load_mem("m.conf", conf, strlen(conf), &mc, &err), 0);
  /* No node reporting: no conversion. */
  assert_int_equal(pfi_fleet_event_gpu_target(&mc, gw, ow, 0, PFI_LEVEL_NODE,
                                              3000, &g, &sf, &err),
                   PFI_EINVAL);
}

static struct pfi_agent *open_agent(const char *backend, const char *p,
                                    double now) {
  struct pfi_agent_opts o = {"n1", backend, p, record, NULL, NULL, NULL, NULL};
  struct pfi_agent *ag = NULL;
  struct pfi_error err;
  int rc = pfi_agent_open(&ag, &o, now, &err);
  if (rc < 0)
    fail_msg("agent open: %s", err.msg);
  return ag;
}

/* The lease rules, drift, replay and a restart, in one timeline. */
static void test_agent_rules(void **state) {
  char buf[4096];
  struct pfi_error err;
  struct pfi_agent_stats st;
  other_set(0, 650000); /* the limits before: not the default (700 W) */
  other_set(1, 650000);
  struct pfi_agent *ag = open_agent("emu", params, 1000);
  size_t len = assign(buf, sizeof buf, 1, "ev1", 2000, 5, 400000, 450000, 0);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 1000, 0, &err), 1);
  ASSERT_EQ_INT(other_get(0), 400000);
  ASSERT_EQ_INT(other_get(1), 450000);
  /* Replayed and for another node: ignored, caps unchanged. */
  assert_int_equal(pfi_agent_handle(ag, buf, len, 1000, 0.1, &err), 0);
  size_t l2 = assign(buf, sizeof buf, 2, "ev1", 2000, 5, 500000, 500000, 0);
  memcpy(strstr(buf, "\"n1\""), "\"n9\"", 4);
  assert_int_equal(pfi_agent_handle(ag, buf, l2, 1000, 0.2, &err), 0);
  ASSERT_EQ_INT(other_get(0), 400000);
  /* Out of the GPU's range: rejected whole, nothing moves. */
  len = assign(buf, sizeof buf, 3, "ev1", 2000, 5, 100000, 450000, 0);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 1000, 0.3, &err), PFI_EINVAL);
  ASSERT_EQ_INT(other_get(1), 450000);
  /* Another tool changes a limit: re-applied on the next tick. */
  other_set(0, 600000);
  struct pfi_fleet_telemetry t;
  assert_int_equal(pfi_agent_tick(ag, 1001, 1, &t, &err), 0);
  ASSERT_EQ_INT(other_get(0), 400000);
  ASSERT_EQ_INT(t.reapplied, 1);
  ASSERT_EQ_INT(t.gpu[0].assigned_mw, 400000);
  ASSERT_EQ_INT(t.gpu[0].cap_mw, 400000);
  /* Lease lost during the event (mono 6 > 0 + 5): held, not raised. */
  assert_int_equal(pfi_agent_tick(ag, 1010, 6, &t, &err), 0);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_HOLD);
  ASSERT_EQ_INT(other_get(0), 400000);
  ASSERT_EQ_INT(other_get(1), 450000);
  /* The controller is back with a newer assignment. */
  len = assign(buf, sizeof buf, 4, "ev1", 2000, 5, 380000, 390000, 0);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 1011, 7, &err), 1);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.mode, PFI_AGENT_TRACKING);
  ASSERT_EQ_INT(st.ignored, 1);
  ASSERT_EQ_INT(st.rejected, 1);
  /* Killed and restarted mid-event: the record resumes the same caps, in
   * hold, and the sequence numbers seen before stay seen. */
  pfi_agent_close(ag);
  other_set(1, 700000); /* and a driver reload while it was down */
  ag = open_agent("emu", params, 1020);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.mode, PFI_AGENT_HOLD);
  ASSERT_EQ_INT(st.seq, 4);
  ASSERT_EQ_INT(other_get(0), 380000);
  ASSERT_EQ_INT(other_get(1), 390000);
  /* (The restarted agent's monotonic clock: Unix time - 1020.) */
  assert_int_equal(pfi_agent_handle(ag, buf, len, 1020, 0, &err), 0);
  /* The event ends while held: the limits recorded before the first
   * change come back (650 W, not the 700 W default). */
  assert_int_equal(pfi_agent_tick(ag, 1999.9, 979.9, &t, &err), 0);
  ASSERT_EQ_INT(other_get(0), 380000);
  assert_int_equal(pfi_agent_tick(ag, 2000, 980, &t, &err), 0);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_IDLE);
  ASSERT_EQ_INT(other_get(0), 650000);
  ASSERT_EQ_INT(other_get(1), 650000);
  /* Outside an event a lost controller means restore at once. */
  len = assign(buf, sizeof buf, 5, NULL, 0, 5, 300000, 300000, 0);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 2001, 981, &err), 1);
  ASSERT_EQ_INT(other_get(1), 300000);
  assert_int_equal(pfi_agent_tick(ag, 2002, 985.9, &t, &err), 0);
  ASSERT_EQ_INT(other_get(1), 300000);
  assert_int_equal(pfi_agent_tick(ag, 2003, 986.1, &t, &err), 0);
  ASSERT_EQ_INT(other_get(1), 650000);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_IDLE);
  /* An explicit restore. */
  len = assign(buf, sizeof buf, 6, NULL, 0, 5, 300000, 300000, 0);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 2004, 984, &err), 1);
  len = assign(buf, sizeof buf, 7, NULL, 0, 5, 0, 0, 1);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 2004, 984, &err), 1);
  ASSERT_EQ_INT(other_get(0), 650000);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.restores, 3);
  pfi_agent_close(ag);
  /* A second agent on the same GPUs is refused. */
  ag = open_agent("emu", params, 3000);
  struct pfi_agent *ag2 = NULL;
  struct pfi_agent_opts o = {"n1", "emu", params, record,
                             NULL, NULL,  NULL,   NULL};
  assert_int_equal(pfi_agent_open(&ag2, &o, 3000, &err), PFI_EBUSY);
  pfi_agent_close(ag);
}

/* A step of the wall clock: the hold and the event's end
 * run on the monotonic clock, the end converted once when it arrived. The
 * monotonic clock here is Unix time - 1000 until the step. */
static void test_agent_clock_step(void **state) {
  char buf[4096];
  struct pfi_error err;
  struct pfi_agent_stats st;
  struct pfi_fleet_telemetry t;
  other_set(0, 700000);
  other_set(1, 700000);
  struct pfi_agent *ag = open_agent("emu", params, 1000);
  /* (Sequence numbers above test_agent_rules's, kept in the record.) */
  /* Event ev1 ends at Unix 2000: monotonic 1000. */
  size_t len = assign(buf, sizeof buf, 11, "ev1", 2000, 5, 300000, 300000, 0);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 1000, 0, &err), 1);
  assert_int_equal(pfi_agent_tick(ag, 1001, 1, &t, &err), 0);
  ASSERT_NEAR(pfi_agent_event_left(ag, 1), 999, 1e-9);
  /* The wall clock steps +3600 s; the same event and end arrive again: the
   * end keeps its conversion (999 s left, not none). */
  len = assign(buf, sizeof buf, 12, "ev1", 2000, 5, 300000, 300000, 0);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 4602, 2, &err), 1);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.clock_steps, 1);
  ASSERT_NEAR(st.clock_step_s, 3600, 1e-6);
  ASSERT_NEAR(pfi_agent_event_left(ag, 2), 998, 1e-9);
  /* The lease is lost (monotonic 8 > 2 + 5) with the wall clock 2,610 s
   * past the event's Unix end: held, caps unchanged. */
  assert_int_equal(pfi_agent_tick(ag, 4608, 8, &t, &err), 0);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_HOLD);
  ASSERT_EQ_INT(other_get(0), 300000);
  /* Stepped back by 3,200 s (before the event's end by the wall clock):
   * the hold still ends at monotonic 1000. */
  assert_int_equal(pfi_agent_tick(ag, 1409, 9, &t, &err), 0);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.clock_steps, 2);
  ASSERT_NEAR(st.clock_step_s, -3200, 1e-6);
  assert_int_equal(pfi_agent_tick(ag, 2399.9, 999.9, &t, &err), 0);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_HOLD);
  ASSERT_EQ_INT(other_get(1), 300000);
  assert_int_equal(pfi_agent_tick(ag, 2400, 1000, &t, &err), 0);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_IDLE);
  ASSERT_EQ_INT(other_get(0), 700000);
  ASSERT_EQ_INT(other_get(1), 700000);
  ASSERT_NEAR(pfi_agent_event_left(ag, 1000), 0, 0);
  /* A start during the event (by the record and the wall clock at open):
   * its end is converted at the first call, then a step moves nothing. */
  len = assign(buf, sizeof buf, 13, "ev2", 3000, 5, 250000, 250000, 0);
  assert_int_equal(pfi_agent_handle(ag, buf, len, 2500, 1100, &err), 1);
  pfi_agent_close(ag);
  ag = open_agent("emu", params, 2600);
  assert_int_equal(pfi_agent_tick(ag, 2600, 50, &t, &err), 0);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_HOLD);
  ASSERT_NEAR(pfi_agent_event_left(ag, 50), 400, 1e-9);
  assert_int_equal(pfi_agent_tick(ag, 6201, 51, &t, &err), 0);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_HOLD);
  ASSERT_EQ_INT(other_get(0), 250000);
  assert_int_equal(pfi_agent_tick(ag, 6550, 450, &t, &err), 0);
  ASSERT_EQ_INT(t.mode, PFI_AGENT_IDLE);
  ASSERT_EQ_INT(other_get(0), 700000);
  pfi_agent_close(ag);
}

/* A GPU that refuses its cap: the other GPU goes back, nothing is left
 * changed. */
static void test_agent_all_or_none(void **state) {
  char buf[4096], fp[400];
  struct pfi_error err;
  other_set(0, 700000);
  other_set(1, 700000);
  snprintf(fp, sizeof fp, "fail_set_after=1,inner_params=%s", params);
  struct pfi_agent *ag = open_agent("fault", fp, 1000);
  size_t len = assign(buf, sizeof buf, 100, "ev2", 2000, 5, 400000, 400000, 0);
  assert_true(pfi_agent_handle(ag, buf, len, 1000, 0, &err) < 0);
  ASSERT_EQ_INT(other_get(0), 700000);
  ASSERT_EQ_INT(other_get(1), 700000);
  struct pfi_agent_stats st;
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.mode, PFI_AGENT_IDLE);
  pfi_agent_close(ag);
  /* Nothing stays recorded: another pfi (here as pfi cap would) may take
   * the GPUs. */
  struct pfi_device *dev;
  struct pfi_capset *cs = NULL;
  unsigned gpus[2] = {0, 1};
  assert_int_equal(pfi_device_open(&dev, "emu", params, &err), 0);
  if (pfi_capset_open(&cs, NULL, dev, "emu", params, gpus, 2, "cap", 0, &err) <
      0)
    fail_msg("after a failed apply: %s", err.msg);
  pfi_capset_close(cs);
  pfi_device_close(dev);
}

static void test_tail_rate(void **state) {
  char path[400];
  double rate = -1;
  struct pfi_error err;
  snprintf(path, sizeof path, "%s/job.jsonl", dir);
  FILE *fp = fopen(path, "w");
  /* Cumulative tokens: (3000 - 1000) / (12 - 10) = 1000 tokens/s. */
  fputs("{\"t\": 9, \"tokens\": 0}\n{\"t\": 10, \"tokens\": 1000}\n"
        "{\"t\": 12, \"tokens\": 3000}\n{\"t\": 13, \"tok",
        fp);
  fclose(fp);
  assert_int_equal(pfi_fleet_tail_rate(path, &rate, &err), 1);
  ASSERT_NEAR(rate, 1000, 1e-9);
  fp = fopen(path, "a");
  fputs("ens\": 3500, \"tokens_per_s\": 777}\n", fp);
  fclose(fp);
  assert_int_equal(pfi_fleet_tail_rate(path, &rate, &err), 1);
  ASSERT_NEAR(rate, 777, 0);
  snprintf(path, sizeof path, "%s/absent.jsonl", dir);
  assert_int_equal(pfi_fleet_tail_rate(path, &rate, &err), 0);
}

/* The age of a job's newest throughput line against a bound of 30 s,
 * worked by hand: now 1000. */
static void test_tput_current(void **state) {
  double age = -1;
  /* The line's own "t": 5 s old, current; 30 s old exactly, current; 30.5
   * s, not. */
  assert_int_equal(pfi_fleet_tput_current(1000, 995, NAN, 30, &age), 1);
  ASSERT_NEAR(age, 5, 1e-12);
  assert_int_equal(pfi_fleet_tput_current(1000, 970, NAN, 30, &age), 1);
  ASSERT_NEAR(age, 30, 1e-12);
  assert_int_equal(pfi_fleet_tput_current(1000, 969.5, NAN, 30, &age), 0);
  ASSERT_NEAR(age, 30.5, 1e-12);
  /* The line's time wins over the file's: an old line in a file touched
   * now is old, a new line in a file whose time was set back is new. */
  assert_int_equal(pfi_fleet_tput_current(1000, 900, 1000, 30, &age), 0);
  ASSERT_NEAR(age, 100, 1e-12);
  assert_int_equal(pfi_fleet_tput_current(1000, 999, 1, 30, &age), 1);
  ASSERT_NEAR(age, 1, 1e-12);
  /* No "t" (elapsed_s, or none): the file's modification time. */
  assert_int_equal(pfi_fleet_tput_current(1000, NAN, 990, 30, &age), 1);
  ASSERT_NEAR(age, 10, 1e-12);
  assert_int_equal(pfi_fleet_tput_current(1000, NAN, 960, 30, &age), 0);
  ASSERT_NEAR(age, 40, 1e-12);
  /* Ahead of the clock: by 20 s, current; by 31 s or in milliseconds
   * (1e6: 999,000 s ahead), not. */
  assert_int_equal(pfi_fleet_tput_current(1000, 1020, NAN, 30, &age), 1);
  ASSERT_NEAR(age, -20, 1e-12);
  assert_int_equal(pfi_fleet_tput_current(1000, 1031, NAN, 30, &age), 0);
  assert_int_equal(pfi_fleet_tput_current(1000, 1e6, NAN, 30, &age), 0);
  ASSERT_NEAR(age, -999000, 1e-6);
  /* No time at all, or no bound: not current. */
  assert_int_equal(pfi_fleet_tput_current(1000, NAN, NAN, 30, &age), 0);
  assert_true(isnan(age));
  assert_int_equal(pfi_fleet_tput_current(1000, 995, NAN, 0, NULL), 0);
  assert_int_equal(pfi_fleet_tput_current(1000, 995, NAN, NAN, NULL), 0);
}

/* A job whose throughput file stops being written (--tput-max-age 10 s):
 * its last line is its throughput for 10 s, then none (its phase and
 * announced pause with it), counted; a new line brings it back. */
static void test_agent_tput_stale(void **state) {
  char jm[400], tp[400], f[500];
  struct pfi_error err;
  snprintf(jm, sizeof jm, "%s/stalemap", dir);
  snprintf(tp, sizeof tp, "%s/staletput", dir);
  assert_int_equal(mkdir(jm, 0700) | mkdir(tp, 0700), 0);
  snprintf(f, sizeof f, "%s/0", jm);
  FILE *fp = fopen(f, "w");
  fputs("slurm-3\n", fp);
  fclose(fp);
  snprintf(f, sizeof f, "%s/slurm-3.jsonl", tp);
  fp = fopen(f, "w");
  fputs("{\"t\": 7000, \"tokens_per_s\": 500, \"phase\": \"training\", "
        "\"next_pause_s\": 60}\n",
        fp);
  fclose(fp);
  struct pfi_agent_opts o = {.node = "n1",
                             .backend = "emu",
                             .params = params,
                             .record = record,
                             .jobmap_dir = jm,
                             .tput_dir = tp,
                             .tput_max_age_s = 10};
  struct pfi_agent *ag = NULL;
  assert_int_equal(pfi_agent_open(&ag, &o, 7000, &err), 0);
  struct pfi_fleet_telemetry t;
  struct pfi_agent_stats st;
  /* 9.5 s old: current. */
  assert_int_equal(pfi_agent_tick(ag, 7009.5, 100, &t, &err), 0);
  ASSERT_EQ_INT(t.n_jobs, 1);
  assert_string_equal(t.job[0].id, "slurm-3");
  ASSERT_NEAR(t.job[0].tokens_per_s, 500, 0);
  assert_int_equal(t.job[0].phase, PFI_PHASE_TRAINING);
  ASSERT_NEAR(t.job[0].pause_in_s, 60 - 9.5, 1e-9);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.tput_stale, 0);
  ASSERT_EQ_INT(st.tput_stale_jobs, 0);
  /* 10.5 s and 40 s old: no throughput, phase and pause unknown; two stale
   * reads, one job. */
  assert_int_equal(pfi_agent_tick(ag, 7010.5, 101, &t, &err), 0);
  assert_true(t.job[0].tokens_per_s < 0);
  assert_int_equal(t.job[0].phase, -1);
  assert_true(t.job[0].pause_in_s < 0);
  assert_int_equal(pfi_agent_tick(ag, 7040, 130, &t, &err), 0);
  assert_true(t.job[0].tokens_per_s < 0);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.tput_stale, 2);
  ASSERT_EQ_INT(st.tput_stale_jobs, 1);
  /* The job writes again: its rate is back, the count of stale jobs 0. */
  fp = fopen(f, "a");
  fputs("{\"t\": 7041, \"tokens_per_s\": 650}\n", fp);
  fclose(fp);
  assert_int_equal(pfi_agent_tick(ag, 7042, 132, &t, &err), 0);
  ASSERT_NEAR(t.job[0].tokens_per_s, 650, 0);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.tput_stale, 2);
  ASSERT_EQ_INT(st.tput_stale_jobs, 0);
  /* A line without "t": the file's modification time, set to 7050. */
  fp = fopen(f, "w");
  fputs("{\"tokens_per_s\": 800}\n", fp);
  fclose(fp);
  struct timespec tm[2] = {{7050, 0}, {7050, 0}};
  assert_int_equal(utimensat(AT_FDCWD, f, tm, 0), 0);
  assert_int_equal(pfi_agent_tick(ag, 7055, 140, &t, &err), 0);
  ASSERT_NEAR(t.job[0].tokens_per_s, 800, 0);
  assert_int_equal(pfi_agent_tick(ag, 7061, 146, &t, &err), 0);
  assert_true(t.job[0].tokens_per_s < 0);
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.tput_stale, 3);
  pfi_agent_close(ag);
}

/* Jobs as the Slurm prolog maps them: a file per GPU index holding the
 * job's name, its tier in the tier directory, its throughput JSONL. */
static void test_agent_jobs(void **state) {
  char jm[400], td[400], tp[400], f[500];
  struct pfi_error err;
  snprintf(jm, sizeof jm, "%s/jobmap", dir);
  snprintf(td, sizeof td, "%s/tiers", dir);
  snprintf(tp, sizeof tp, "%s/tput", dir);
  assert_int_equal(mkdir(jm, 0700) | mkdir(td, 0700) | mkdir(tp, 0700), 0);
  snprintf(f, sizeof f, "%s/1", jm);
  FILE *fp = fopen(f, "w");
  fputs("slurm-7\n", fp);
  fclose(fp);
  snprintf(f, sizeof f, "%s/slurm-7", td);
  fp = fopen(f, "w");
  fputs("0.25\n", fp);
  fclose(fp);
  snprintf(f, sizeof f, "%s/slurm-7.jsonl", tp);
  fp = fopen(f, "w");
  fputs("{\"t\": 4998, \"tokens_per_s\": 4321.5}\n", fp);
  fclose(fp);
  struct pfi_agent_opts o = {"n1", "emu", params, record, jm, tp, td, NULL};
  struct pfi_agent *ag = NULL;
  assert_int_equal(pfi_agent_open(&ag, &o, 5000, &err), 0);
  struct pfi_fleet_telemetry t;
  assert_int_equal(pfi_agent_tick(ag, 5000, 0, &t, &err), 0);
  assert_string_equal(t.gpu[0].job, "");
  assert_string_equal(t.gpu[1].job, "slurm-7");
  ASSERT_EQ_INT(t.n_jobs, 1);
  ASSERT_NEAR(t.job[0].max_loss, 0.25, 0);
  ASSERT_NEAR(t.job[0].tokens_per_s, 4321.5, 0);
  /* Posted by the job (the --tput-listen endpoint): wins over the file
   * while fresh; cumulative tokens give the rate between two posts. */
  double r = -1;
  static const char p1[] = "{\"t\": 6, \"tokens_per_s\": 99.5}\n";
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", p1, sizeof p1 - 1,
                                             -1, -1, 1, &r, &err),
                   1);
  ASSERT_NEAR(r, 99.5, 0);
  assert_int_equal(pfi_agent_tick(ag, 5001, 2, &t, &err), 0);
  ASSERT_NEAR(t.job[0].tokens_per_s, 99.5, 0);
  static const char c1[] = "{\"t\": 10, \"tokens\": 1000}",
                    c2[] = "{\"t\": 14, \"tokens\": 9000}";
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", c1, sizeof c1 - 1,
                                             -1, -1, 3, &r, &err),
                   0);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", c2, sizeof c2 - 1,
                                             -1, -1, 4, &r, &err),
                   1);
  ASSERT_NEAR(r, 2000, 0); /* 8000 tokens in 4 s */
  assert_int_equal(pfi_agent_tick(ag, 5002, 5, &t, &err), 0);
  ASSERT_NEAR(t.job[0].tokens_per_s, 2000, 0);
  /* Stale (older than PFI_AGENT_POST_TTL_S): the file again (its line 22 s
   * old, within PFI_AGENT_TPUT_MAX_AGE_S). */
  assert_int_equal(pfi_agent_tick(ag, 5020, 4 + PFI_AGENT_POST_TTL_S + 1, &t,
                                  &err), 0);
  ASSERT_NEAR(t.job[0].tokens_per_s, 4321.5, 0);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-8", p1, sizeof p1 - 1,
                                             -1, -1, 20, &r, &err),
                   PFI_ENOTFOUND);
  static const char b1[] = "{\"t\": 1, \"tokens_per_s\": \"fast\"}";
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", b1, sizeof b1 - 1,
                                             -1, -1, 20, &r, &err),
                   PFI_EPARSE);
  assert_string_equal(err.file, "body");
  ASSERT_EQ_INT(err.line, 1);
  static const char b2[] = "{\"tokens_per_s\": 1}\n{\"tokens_per_s\": 2}\n";
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", b2, sizeof b2 - 1,
                                             -1, -1, 20, &r, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "body:2"));
  /* The poster's own cgroup: this process is in no Slurm job; root may
   * post for any job, another user only for a job it owns (the mapping
   * file's owner; root's here). */
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", p1, sizeof p1 - 1,
                                             (long)getpid(), 0, 21, &r, &err),
                   1);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", p1, sizeof p1 - 1,
                                             (long)getpid(), 65534, 21, &r,
                                             &err),
                   PFI_ENOPERM);
  assert_non_null(strstr(err.msg, "uid 65534"));
  snprintf(f, sizeof f, "%s/1", jm);
  if (geteuid() == 0) {
    assert_int_equal(chown(f, 65534, 65534), 0);
    assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", p1, sizeof p1 - 1,
                                               (long)getpid(), 65534, 21, &r,
                                               &err),
                     1);
    assert_int_equal(chown(f, 0, 0), 0);
  }
  snprintf(f, sizeof f, "%s/slurm-7.jsonl", tp);
  /* Above pfid's bound (PFI_FLEET_TPUT_MAX = 1e15 tokens/s): refused, the
   * rate stays 99.5 (the post above); a cumulative count whose rate is
   * above it too. */
  static const char big[] = "{\"tokens_per_s\": 1e16}",
                    k1[] = "{\"t\": 30, \"tokens\": 0}",
                    k2[] = "{\"t\": 31, \"tokens\": 2e15}";
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", big, sizeof big - 1,
                                             -1, -1, 21.5, &r, &err),
                   PFI_ERANGE);
  assert_non_null(strstr(err.msg, "tokens_per_s"));
  assert_int_equal(pfi_agent_tick(ag, 5021, 22, &t, &err), 0);
  ASSERT_NEAR(t.job[0].tokens_per_s, 99.5, 0);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", k1, sizeof k1 - 1,
                                             -1, -1, 22, &r, &err),
                   0);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", k2, sizeof k2 - 1,
                                             -1, -1, 22.5, &r, &err),
                   PFI_ERANGE);
  /* The job's rate (PFI_AGENT_POST_RATE 20/s, a burst of 40): at 25, 2.5 s
   * after the posts above (fewer than 10 tokens spent, 50 refilled since),
   * its bucket is full again (40); 40 posts at one
   * instant pass, the 41st is refused (nothing changes: the rate is the
   * 40th's), 0.05 s later one more token (0.05 x 20 = 1) lets one pass, and
   * the next at that instant is refused. */
  static const char f1[] = "{\"tokens_per_s\": 77}",
                    f2[] = "{\"tokens_per_s\": 78}";
  for (int i = 0; i < 40; i++)
    assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", f1, sizeof f1 - 1,
                                               -1, -1, 25, &r, &err),
                     1);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", f2, sizeof f2 - 1,
                                             -1, -1, 25, &r, &err),
                   PFI_EBUSY);
  assert_non_null(strstr(err.msg, "more than 20 reports a second"));
  assert_int_equal(pfi_agent_tick(ag, 5022, 25.01, &t, &err), 0);
  ASSERT_NEAR(t.job[0].tokens_per_s, 77, 0);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", f2, sizeof f2 - 1,
                                             -1, -1, 25.05, &r, &err),
                   1);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", f2, sizeof f2 - 1,
                                             -1, -1, 25.05, &r, &err),
                   PFI_EBUSY);
  /* The trainer's phase and announced pause (docs/throughput-protocol.md):
   * from the file, its pause 7 s after the line's Unix time 5030, seen at
   * 5032: 5 s after the telemetry's time. */
  fp = fopen(f, "w");
  fputs("{\"t\": 5030, \"tokens_per_s\": 4000, \"phase\": \"training\", "
        "\"next_pause_s\": 7, \"next_pause_len_s\": 45}\n",
        fp);
  fclose(fp);
  assert_int_equal(pfi_agent_tick(ag, 5032, 40, &t, &err), 0);
  assert_int_equal(t.job[0].phase, PFI_PHASE_TRAINING);
  ASSERT_NEAR(t.job[0].pause_in_s, 5, 1e-9);
  ASSERT_NEAR(t.job[0].pause_len_s, 45, 0);
  /* Posted: a checkpoint in progress (no pause announced), then a pause
   * announced 3 s after the post's arrival (at 43; the tick at 44.5: 1.5 s
   * on), none once its start has passed. */
  static const char q1[] = "{\"tokens_per_s\": 0, \"phase\": \"checkpoint\"}",
                    q2[] = "{\"tokens_per_s\": 10, \"phase\": \"training\", "
                           "\"next_pause_s\": 3, \"end_in_s\": 9}";
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", q1, sizeof q1 - 1,
                                             -1, -1, 41, &r, &err),
                   1);
  assert_int_equal(pfi_agent_tick(ag, 5033, 42, &t, &err), 0);
  assert_int_equal(t.job[0].phase, PFI_PHASE_PAUSE);
  assert_true(t.job[0].pause_in_s < 0 && t.job[0].end_in_s < 0);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", q2, sizeof q2 - 1,
                                             -1, -1, 43, &r, &err),
                   1);
  assert_int_equal(pfi_agent_tick(ag, 5034, 44.5, &t, &err), 0);
  assert_int_equal(t.job[0].phase, PFI_PHASE_TRAINING);
  ASSERT_NEAR(t.job[0].pause_in_s, 1.5, 1e-9);
  assert_true(t.job[0].pause_len_s < 0);
  ASSERT_NEAR(t.job[0].end_in_s, 7.5, 1e-9); /* its end, 9 s after 43 */
  /* Through the telemetry message unchanged. */
  char msg[PFI_FLEET_MSG_MAX];
  static struct pfi_fleet_telemetry back;
  int len = pfi_fleet_telemetry_encode(&t, msg, sizeof msg, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_telemetry_decode(msg, (size_t)len, &back, &err),
                   0);
  assert_int_equal(back.job[0].phase, PFI_PHASE_TRAINING);
  ASSERT_NEAR(back.job[0].pause_in_s, 1.5, 1e-9);
  ASSERT_NEAR(back.job[0].end_in_s, 7.5, 1e-9);
  assert_int_equal(pfi_agent_tick(ag, 5036, 46.5, &t, &err), 0);
  assert_true(t.job[0].pause_in_s < 0);
  /* A phase no trainer sends: refused, naming the field. */
  static const char q3[] = "{\"tokens_per_s\": 1, \"phase\": \"nap\"}";
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", q3, sizeof q3 - 1,
                                             -1, -1, 47, &r, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "phase"));
  /* A file's throughput above the bound: left out of the job's telemetry
   * (unknown), counted, and the node's message still decodes. */
  fp = fopen(f, "w");
  fputs("{\"t\": 5040, \"tokens_per_s\": 1e16}\n", fp);
  fclose(fp);
  assert_int_equal(
      pfi_agent_tick(ag, 5060, 47 + PFI_AGENT_POST_TTL_S + 1, &t, &err), 0);
  assert_true(t.job[0].tokens_per_s < 0);
  struct pfi_agent_stats st;
  pfi_agent_stats(ag, &st);
  ASSERT_EQ_INT(st.tput_dropped, 1);
  len = pfi_fleet_telemetry_encode(&t, msg, sizeof msg, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_telemetry_decode(msg, (size_t)len, &back, &err),
                   0);
  assert_true(back.job[0].tokens_per_s < 0);
  assert_string_equal(back.job[0].id, "slurm-7");
  /* The encoder leaves out what the decoder would refuse. */
  t.job[0].tokens_per_s = 1e16;
  len = pfi_fleet_telemetry_encode(&t, msg, sizeof msg, &err);
  assert_int_equal(pfi_fleet_telemetry_decode(msg, (size_t)len, &back, &err),
                   0);
  assert_true(back.job[0].tokens_per_s < 0);
  pfi_agent_close(ag);
  /* The rate and burst as options (pfi-agent --tput-rate, --tput-burst):
   * 2 a second beyond a burst of 3. At 100 three posts pass and the 4th
   * is refused naming both; 0.5 s later one token (0.5 x 2) lets one
   * pass, and the next at that instant is refused. A negative rate or a
   * burst under one report is refused at open. */
  o.post_rate = 2;
  o.post_burst = 3;
  assert_int_equal(pfi_agent_open(&ag, &o, 5100, &err), 0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", p1, sizeof p1 - 1,
                                               -1, -1, 100, &r, &err),
                     1);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", p1, sizeof p1 - 1,
                                             -1, -1, 100, &r, &err),
                   PFI_EBUSY);
  assert_non_null(strstr(err.msg, "more than 2 reports a second (a burst of 3)"));
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", p1, sizeof p1 - 1,
                                             -1, -1, 100.5, &r, &err),
                   1);
  assert_int_equal(pfi_agent_post_throughput(ag, "slurm-7", p1, sizeof p1 - 1,
                                             -1, -1, 100.5, &r, &err),
                   PFI_EBUSY);
  pfi_agent_close(ag);
  o.post_rate = -1;
  assert_int_equal(pfi_agent_open(&ag, &o, 5100, &err), PFI_EINVAL);
  o.post_rate = 2;
  o.post_burst = 0.5;
  assert_int_equal(pfi_agent_open(&ag, &o, 5100, &err), PFI_EINVAL);
}

/* A process's Slurm job from its cgroup file, v1 and v2 layouts. */
static void test_cgroup_job(void **state) {
  char f[400], job[64];
  struct pfi_error err;
  snprintf(f, sizeof f, "%s/cgroup", dir);
  static const char *const text[] = {
      /* cgroup v2 under slurmd's cgroup/v2 plugin */
      "0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0\n",
      /* v1: several hierarchies */
      "12:memory:/slurm/uid_1000/job_77/step_batch\n"
      "11:devices:/slurm/uid_1000/job_77/step_batch/task_0\n",
      /* not Slurm: a systemd session; "job_" not a whole component */
      "0::/user.slice/user-0.slice/session-3.scope\n",
      "0::/system.slice/my_job_12.service/job_x\n"};
  const char *want[] = {"slurm-1234", "slurm-77", "", ""};
  for (int i = 0; i < 4; i++) {
    FILE *fp = fopen(f, "w");
    fputs(text[i], fp);
    fclose(fp);
    assert_int_equal(pfi_fleet_cgroup_job(0, f, job, sizeof job, &err),
                     want[i][0] ? 1 : 0);
    assert_string_equal(job, want[i]);
  }
  snprintf(f, sizeof f, "%s/absent", dir);
  assert_int_equal(pfi_fleet_cgroup_job(0, f, job, sizeof job, &err), PFI_EIO);
}

/* The value of metric line `name{job="id"}` in text, or NAN when absent. */
static double metric(const char *text, const char *name, const char *id) {
  char pre[200];
  snprintf(pre, sizeof pre, "\n%s{job=\"%s\"} ", name, id);
  const char *p = strstr(text, pre);
  return p ? strtod(p + strlen(pre), NULL) : NAN;
}

/* The prior's believed PFI worked by hand (docs/control.md: the prior
 * T/T_max = 1 - (1 - u)^g, u = P/P_max, its exponent from the PFI at the
 * middle of the job's range; the belief's PFI is the mean of
 * (1 - P/P_max) / (1 - T/T_max) at 5 powers from the job's lowest draw
 * up, 0.97 of the cap sum at the lowest caps until a cap-bound period
 * says otherwise). */
static double prior_pfi(double pfi, double lo_w, double pmax_w) {
  double um = (lo_w / pmax_w + 1) / 2, g = 1 - log(pfi) / log(1 - um), s = 0;
  for (int k = 0; k < 5; k++) {
    double u = (lo_w + (pmax_w - lo_w) * k / 5.0) / pmax_w;
    s += (1 - u) / pow(1 - u, g);
  }
  return s / 5;
}

/* pfid's per-job metrics from the control module's beliefs. */
static void test_job_metrics(void **state) {
  double lo[4] = {200, 200, 200, 200}, hi[4] = {700, 700, 700, 700};
  struct pfi_ctl *ctl = NULL;
  struct pfi_error err;
  assert_int_equal(pfi_ctl_open(&ctl, NULL, 4, lo, hi, &err), 0);
  size_t g0[2] = {0, 1}, g1[2] = {2, 3}, g2[1] = {0};
  /* a: no PFI estimate (the 1.5 prior); b: an estimate of 2.2; both with
   * their uncapped point known. */
  struct pfi_ctl_job a = {"slurm-1", NULL, 2,    g0,   NAN, NAN, NAN, 1,
                          0,         0,    1300, 1000, 0,   0,   0};
  struct pfi_ctl_job b = {"slurm-2", NULL, 2,    g1,  2.2, NAN, NAN, 0.25,
                          0,         0,    1200, 500, 0,   0,   0};
  assert_true(pfi_ctl_job_add(ctl, &a, &err) >= 0);
  assert_true(pfi_ctl_job_add(ctl, &b, &err) >= 0);
  const char *ids[] = {"slurm-1", "slurm-2", "slurm-3"};
  struct pfi_buf t = {0};
  pfi_fleet_metrics_jobs(&t, ctl, ids, 3);
  assert_false(t.oom);
  double lo_w = 0.97 * 2 * 200;
  ASSERT_NEAR(metric(t.s, "pfi_job_power_flexibility_index", "slurm-1"),
              prior_pfi(1.5, lo_w, 1300), 1e-12);
  ASSERT_NEAR(metric(t.s, "pfi_job_power_flexibility_index", "slurm-2"),
              prior_pfi(2.2, lo_w, 1200), 1e-12);
  ASSERT_NEAR(metric(t.s, "pfi_job_learned_points", "slurm-1"), 0, 0);
  /* A job the module does not know has no series; the headers stay. */
  assert_true(isnan(metric(t.s, "pfi_job_power_flexibility_index", "slurm-3")));
  assert_non_null(strstr(t.s, "# TYPE pfi_job_power_flexibility_index gauge\n"));
  pfi_buf_release(&t);
  /* Uncapped point unknown: no PFI yet, its points (0) still shown. */
  struct pfi_ctl_job c = {"slurm-3", NULL, 1,   g2,  NAN, NAN, NAN, 1,
                          0,         0,    NAN, NAN, 0,   0,   0};
  assert_int_equal(pfi_ctl_job_remove(ctl, pfi_ctl_job_find(ctl, "slurm-1"),
                                      &err), 0);
  assert_true(pfi_ctl_job_add(ctl, &c, &err) >= 0);
  pfi_fleet_metrics_jobs(&t, ctl, ids, 3);
  assert_true(isnan(metric(t.s, "pfi_job_power_flexibility_index", "slurm-3")));
  ASSERT_NEAR(metric(t.s, "pfi_job_learned_points", "slurm-3"), 0, 0);
  assert_true(isnan(metric(t.s, "pfi_job_learned_points", "slurm-1")));
  pfi_buf_release(&t);
  /* Outside an event (no module): headers, no series. */
  pfi_fleet_metrics_jobs(&t, NULL, ids, 3);
  assert_null(strstr(t.s, "{job="));
  pfi_buf_release(&t);
  pfi_ctl_close(ctl);
}

/* A tier set through pfid's API, as the bucket holds it. */
static void test_tier_codec(void **state) {
  struct pfi_fleet_tier t = {"slurm-9", 0.25, "flex25", 0, 0, 0}, u;
  struct pfi_error err;
  char buf[512];
  int len = pfi_fleet_tier_encode(&t, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_tier_decode(buf, (size_t)len, &u, &err), 0);
  assert_string_equal(u.job, "slurm-9");
  assert_string_equal(u.name, "flex25");
  ASSERT_NEAR(u.max_loss, 0.25, 0);
  static const char over[] = "{\"v\":1,\"job\":\"j\",\"max_loss\":1.5}";
  assert_int_equal(pfi_fleet_tier_decode(over, sizeof over - 1, &u, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "\"max_loss\""));
  static const char nojob[] = "{\"v\":1,\"job\":\"a.b\",\"max_loss\":0}";
  assert_int_equal(pfi_fleet_tier_decode(nojob, sizeof nojob - 1, &u, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "\"job\""));
  double loss = -1;
  assert_int_equal(pfi_fleet_tier_lookup("flex10", &loss), 0);
  ASSERT_NEAR(loss, 0.1, 0);
  assert_int_equal(pfi_fleet_tier_lookup("flex11", &loss), -1);
  assert_string_equal(pfi_fleet_tier_named(3, &loss), "flex50");
  ASSERT_NEAR(loss, 0.5, 0);
  assert_null(pfi_fleet_tier_named(4, &loss));
}

/* The rest of the contract: the API's tier with its terms, the agent's
 * tier file line, the telemetry carrying a job's terms, an event's known
 * time. */
static void test_contract_codec(void **state) {
  (void)state;
  struct pfi_fleet_tier t = {"slurm-9", 0.5, "", 1800, 600, 1234.5}, u;
  struct pfi_error err;
  char buf[1024];
  int len = pfi_fleet_tier_encode(&t, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_tier_decode(buf, (size_t)len, &u, &err), 0);
  ASSERT_NEAR(u.max_event_s, 1800, 0);
  ASSERT_NEAR(u.notice_s, 600, 0);
  ASSERT_NEAR(u.deadline_tput, 1234.5, 0);
  static const char neg[] =
      "{\"v\":1,\"job\":\"j\",\"max_loss\":0.1,\"notice_s\":-5}";
  assert_int_equal(pfi_fleet_tier_decode(neg, sizeof neg - 1, &u, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "\"notice_s\""));
  struct pfi_fleet_job j;
  assert_int_equal(pfi_fleet_tier_line("0.25\n", &j), 0);
  ASSERT_NEAR(j.max_loss, 0.25, 0);
  ASSERT_NEAR(j.max_event_s + j.notice_s + j.deadline_tput, 0, 0);
  assert_int_equal(pfi_fleet_tier_line("0.5,1800,,900.5\n", &j), 0);
  ASSERT_NEAR(j.max_loss, 0.5, 0);
  ASSERT_NEAR(j.max_event_s, 1800, 0);
  ASSERT_NEAR(j.notice_s, 0, 0);
  ASSERT_NEAR(j.deadline_tput, 900.5, 0);
  assert_int_equal(pfi_fleet_tier_line("1,,,1500", &j), 0);
  ASSERT_NEAR(j.deadline_tput, 1500, 0);
  assert_int_equal(pfi_fleet_tier_line("1.5", &j), -1);
  assert_true(j.max_loss < 0);
  assert_int_equal(pfi_fleet_tier_line(",1800", &j), -1);
  assert_int_equal(pfi_fleet_tier_line("0.1,x", &j), -1);
  assert_int_equal(pfi_fleet_tier_line("0.1,1,2,3,4", &j), -1);
  assert_int_equal(pfi_fleet_tier_line("0.1,-1", &j), -1);
  struct pfi_fleet_telemetry tel, back;
  memset(&tel, 0, sizeof tel);
  snprintf(tel.node, sizeof tel.node, "n1");
  tel.t_s = 5;
  tel.node_w = -1;
  tel.n_jobs = 1;
  snprintf(tel.job[0].id, sizeof tel.job[0].id, "slurm-1");
  tel.job[0].tokens_per_s = 10;
  tel.job[0].max_loss = 0.1;
  tel.job[0].max_event_s = 60;
  tel.job[0].notice_s = 30;
  tel.job[0].deadline_tput = 8;
  len = pfi_fleet_telemetry_encode(&tel, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_telemetry_decode(buf, (size_t)len, &back, &err),
                   0);
  ASSERT_NEAR(back.job[0].max_event_s, 60, 0);
  ASSERT_NEAR(back.job[0].notice_s, 30, 0);
  ASSERT_NEAR(back.job[0].deadline_tput, 8, 0);
  struct pfi_fleet_event e = {"ev", 100, 200, 1500, 0, 40, PFI_LEVEL_GPU}, f;
  len = pfi_fleet_event_encode(&e, buf, sizeof buf, &err);
  assert_true(len > 0);
  assert_int_equal(pfi_fleet_event_decode(buf, (size_t)len, &f, &err), 0);
  ASSERT_NEAR(f.known_s, 40, 0);
  static const char badk[] = "{\"v\":1,\"id\":\"ev\",\"start\":1,"
                             "\"end\":2,\"target_w\":5,\"known\":\"x\"}";
  assert_int_equal(pfi_fleet_event_decode(badk, sizeof badk - 1, &f, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.msg, "\"known\""));
}

/* --nats: a cluster's servers, comma-separated (docs/fleet.md "A NATS
 * cluster"); the expected URLs written out by hand. */
static void test_nats_servers_split(void **state) {
  (void)state;
  char buf[128];
  const char *u[3];
  struct pfi_error err;
  assert_int_equal(pfi_nats_servers_split("nats://a:4222", buf, sizeof buf, u,
                                          3, &err),
                   1);
  assert_string_equal(u[0], "nats://a:4222");
  assert_int_equal(pfi_nats_servers_split(" nats://a:1 ,nats://b:2,, nats://c:3 ",
                                          buf, sizeof buf, u, 3, &err),
                   3);
  assert_string_equal(u[0], "nats://a:1");
  assert_string_equal(u[1], "nats://b:2");
  assert_string_equal(u[2], "nats://c:3");
  /* No URL, one too many, longer than the buffer: refused, naming --nats. */
  const char *bad[] = {"", " , ,", "a,b,c,d"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(
        pfi_nats_servers_split(bad[i], buf, sizeof buf, u, 3, &err),
        PFI_EINVAL);
    assert_non_null(strstr(err.msg, "--nats"));
  }
  char small[8];
  assert_int_equal(pfi_nats_servers_split("nats://a:4222", small, sizeof small,
                                          u, 3, &err),
                   PFI_EINVAL);
}

/* The host of a NATS URL and whether it is loopback (the plain-text rule,
 * docs/fleet.md "Security"); the expected hosts written out by hand. */
static void test_nats_url_host(void **state) {
  (void)state;
  char h[64];
  struct pfi_error err;
  const char *cases[][2] = {
      {"nats://127.0.0.1:4222", "127.0.0.1"},
      {"tls://nats.example:4222", "nats.example"},
      {"nats://user:p@ss@10.0.0.5:4222", "10.0.0.5"},
      {"tls://[::1]:4222", "::1"},
      {"[fe80::1]:4222", "fe80::1"},
      {"localhost:4222", "localhost"},
      {"nats.example", "nats.example"},
      {"nats://a.b/x@y", "a.b"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    assert_int_equal(pfi_nats_url_host(cases[i][0], h, sizeof h, &err),
                     (int)strlen(cases[i][1]));
    assert_string_equal(h, cases[i][1]);
  }
  const char *bad[] = {"", "nats://", "nats://u@:4222", "tls://[::1:4222",
                       ":4222"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(pfi_nats_url_host(bad[i], h, sizeof h, &err), PFI_EINVAL);
    assert_non_null(strstr(err.msg, "--nats"));
  }
  char small[4];
  assert_int_equal(
      pfi_nats_url_host("nats://abcd:1", small, sizeof small, &err),
      PFI_EINVAL);
  const char *loop[] = {"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3",
                        "::1"};
  for (size_t i = 0; i < sizeof loop / sizeof *loop; i++)
    assert_int_equal(pfi_nats_host_loopback(loop[i]), 1);
  const char *off[] = {"10.0.0.5",     "127.0.0.1.example",
                       "127.0.0",      "127.0.0.256",
                       "127.0.0.1.",   "1127.0.0.1",
                       "::2",          "localhost.example",
                       "127.0.0.0001", ""};
  for (size_t i = 0; i < sizeof off / sizeof *off; i++)
    assert_int_equal(pfi_nats_host_loopback(off[i]), 0);
}

/* The plain-text rule and the accounts' rules, before any connection. */
static void test_nats_describe(void **state) {
  (void)state;
  char d[512];
  struct pfi_error err;
  struct pfi_nats_opts o = {0};
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), 0);
  assert_string_equal(d, "plain text (loopback)");
  o.url = "nats://127.0.0.1:1,nats://10.0.0.5:2";
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "10.0.0.5 is not on loopback"));
  o.insecure = 1;
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), 0);
  assert_string_equal(d, "PLAIN TEXT to 10.0.0.5 (--nats-insecure)");
  o.insecure = 0;
  o.url = "tls://nats.example:1,nats.example:2";
  o.tls_ca = "ca.pem";
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), 0);
  assert_string_equal(d,
                      "TLS, server certificates from ca.pem for nats.example");
  o.url = "tls://a.example:1,tls://b.example:2";
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), 0);
  assert_string_equal(
      d, "TLS, server certificates from ca.pem, each for its URL's host");
  o.tls_name = "nats.example";
  o.tls_cert = "c.pem";
  o.tls_key = "c.key";
  o.nkey_file = "u.nk";
  o.user = "UABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRSTUVW";
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), 0);
  assert_string_equal(
      d, "TLS, server certificates from ca.pem for "
         "nats.example, client certificate, nkey user "
         "UABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRSTUVW");
  o.user = "pfid";
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "public key"));
  o.user = NULL;
  o.nkey_file = NULL;
  o.tls_key = NULL;
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), PFI_EINVAL);
  o.tls_key = "c.key";
  o.creds_file = "u.creds";
  o.password_file = "pw";
  assert_int_equal(pfi_nats_describe(&o, d, sizeof d, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "at most one"));
}

int main(void) {
  if (!mkdtemp(dir))
    return 1;
  snprintf(params, sizeof params, "gpus=2,state=%s/emu", dir);
  snprintf(record, sizeof record, "%s/agent.db", dir);
  /* The fault backend's emulated GPUs lock in the emulator's default
   * state directory: this test's own. */
  char emu[320];
  snprintf(emu, sizeof emu, "%s/emu", dir);
  setenv("PFI_EMU_STATE", emu, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_assign_codec),
      cmocka_unit_test(test_telemetry_event_codec),
      cmocka_unit_test(test_telemetry_node_power),
      cmocka_unit_test(test_trust_bounds),
      cmocka_unit_test(test_restore_and_ctl_state),
      cmocka_unit_test(test_agent_rules),
      cmocka_unit_test(test_agent_clock_step),
      cmocka_unit_test(test_agent_all_or_none),
      cmocka_unit_test(test_tail_rate),
      cmocka_unit_test(test_agent_jobs),
      cmocka_unit_test(test_tput_current),
      cmocka_unit_test(test_agent_tput_stale),
      cmocka_unit_test(test_cgroup_job),
      cmocka_unit_test(test_job_metrics),
      cmocka_unit_test(test_tier_codec),
      cmocka_unit_test(test_contract_codec),
      cmocka_unit_test(test_event_levels),
      cmocka_unit_test(test_nats_servers_split),
      cmocka_unit_test(test_nats_url_host),
      cmocka_unit_test(test_nats_describe),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    rc = rc ? rc : 1;
  return rc;
}
