/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Timelines, OpenADR 3 event decoding, meter power and compliance. Every
 * expected value is worked by hand in the comment beside it. */
#include <arpa/inet.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "pfi/alloc.h"
#include "pfi/bridge.h"
#include "pfi/compliance.h"
#include "pfi/eventlog.h"
#include "pfi/flexcap.h"
#include "pfi/http.h"
#include "pfi/meter.h"
#include "pfi/openadr.h"
#include "pfi/timeline.h"

static void test_rfc3339(void **state) {
  (void)state;
  int64_t t;
  struct pfi_error err;
  /* 2025-05-04T16:10:00-07:00 = 23:10:00Z. Days 1970-01-01..2025-05-04:
   * 55 years with 14 leap days = 20089 days to 2025-01-01, + 31+28+31+30+3
   * = 123 -> 20212 days; 20212 * 86400 + 23*3600 + 600 = 1746400200. */
  assert_int_equal(
      pfi_time_parse_rfc3339("2025-05-04T16:10:00-07:00", &t, &err), 0);
  ASSERT_EQ_INT(t, 1746400200);
  assert_int_equal(pfi_time_parse_rfc3339("2025-05-04T23:10:00.75Z", &t, &err),
                   0);
  ASSERT_EQ_INT(t, 1746400200);
  assert_int_equal(pfi_time_parse_rfc3339("1970-01-01", &t, &err), 0);
  ASSERT_EQ_INT(t, 0);
  /* 0001-01-01: 719162 days before the epoch. */
  assert_int_equal(pfi_time_parse_rfc3339("0001-01-01", &t, &err), 0);
  ASSERT_EQ_INT(t, -719162LL * 86400);
  char buf[32];
  assert_string_equal(pfi_time_format_rfc3339(1746400200, buf, sizeof buf),
                      "2025-05-04T23:10:00Z");
  assert_int_equal(pfi_time_parse_rfc3339("2025-02-29", &t, &err), PFI_ERANGE);
  assert_int_equal(pfi_time_parse_rfc3339("2024-02-29T24:00:00Z", &t, &err),
                   PFI_ERANGE);
  assert_int_equal(pfi_time_parse_rfc3339("2025-05-04T10:00Zx", &t, &err),
                   PFI_EPARSE);
  ASSERT_EQ_INT(err.column, 18); /* the x after "Z" */
}

static void test_duration(void **state) {
  (void)state;
  double s;
  int forever;
  struct pfi_error err;
  assert_int_equal(pfi_duration_parse_iso8601("PT1H30M", &s, &forever, &err),
                   0);
  ASSERT_NEAR(s, 5400, 0);
  assert_int_equal(pfi_duration_parse_iso8601("P1DT0.5S", &s, &forever, &err),
                   0);
  ASSERT_NEAR(s, 86400.5, 1e-9);
  assert_int_equal(pfi_duration_parse_iso8601("P2W", &s, &forever, &err), 0);
  ASSERT_NEAR(s, 14 * 86400, 0);
  assert_int_equal(pfi_duration_parse_iso8601("-PT5M", &s, &forever, &err), 0);
  ASSERT_NEAR(s, -300, 0);
  assert_int_equal(pfi_duration_parse_iso8601("P9999Y", &s, &forever, &err), 0);
  assert_int_equal(forever, 1);
  assert_int_equal(pfi_duration_parse_iso8601("PT0S", &s, &forever, &err), 0);
  ASSERT_NEAR(s, 0, 0);
  assert_int_equal(forever, 0);
  const char *bad[] = {"P",     "PT",  "1H",   "PT1.5M", "P1D2Y",
                       "P1W1D", "PTH", "P1DT", "PT1H1H"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (pfi_duration_parse_iso8601(bad[i], &s, &forever, &err) != PFI_EPARSE)
      fail_msg("'%s' accepted as %g s", bad[i], s);
}

static struct pfi_target_span span(int64_t a, int64_t b, double w, int src,
                                   int prio, int64_t sched, const char *ev) {
  struct pfi_target_span s;
  memset(&s, 0, sizeof s);
  s.start_s = a;
  s.end_s = b;
  s.limit_w = w;
  s.source = src;
  s.priority = prio;
  s.scheduled_s = sched;
  snprintf(s.event, sizeof s.event, "%s", ev);
  return s;
}

static void test_resolve(void **state) {
  (void)state;
  struct pfi_timeline in, out;
  pfi_timeline_init(&in);
  pfi_timeline_init(&out);
  struct pfi_error err;
  /* OpenADR: A 100 W over [0,100) scheduled at 10; B 300 W over [50,150)
   * scheduled at 20 (later: wins its overlap [50,100)); C 50 W over
   * [120,130) but priority 5 versus B's 0: B wins there. Schedule file:
   * 200 W over [140,200): lower than B's 300 over [140,150) -> 200 wins. */
  struct pfi_target_span s[] = {
      span(0, 100, 100, PFI_SRC_OPENADR, 0, 10, "A"),
      span(50, 150, 300, PFI_SRC_OPENADR, 0, 20, "B"),
      span(120, 130, 50, PFI_SRC_OPENADR, 5, 30, "C"),
      span(140, 200, 200, PFI_SRC_SCHEDULE, 0, 0, "S"),
  };
  for (size_t i = 0; i < 4; i++)
    assert_int_equal(pfi_timeline_add(&in, &s[i], &err), 0);
  assert_int_equal(pfi_timeline_resolve(&in, &out, &err), 3);
  /* [0,50) A 100; [50,140) B 300; [140,200) S 200. */
  ASSERT_EQ_INT(out.spans[0].start_s, 0);
  ASSERT_EQ_INT(out.spans[0].end_s, 50);
  ASSERT_NEAR(out.spans[0].limit_w, 100, 0);
  ASSERT_EQ_INT(out.spans[1].start_s, 50);
  ASSERT_EQ_INT(out.spans[1].end_s, 140);
  ASSERT_NEAR(out.spans[1].limit_w, 300, 0);
  assert_string_equal(out.spans[1].event, "B");
  ASSERT_EQ_INT(out.spans[2].end_s, 200);
  assert_string_equal(out.spans[2].event, "S");
  assert_null(pfi_timeline_at(&out, 200));
  assert_string_equal(pfi_timeline_at(&out, 49)->event, "A");
  assert_string_equal(pfi_timeline_at(&out, 125)->event, "B");
  /* Input order does not matter. */
  struct pfi_timeline rev, out2;
  pfi_timeline_init(&rev);
  pfi_timeline_init(&out2);
  for (size_t i = 4; i-- > 0;)
    pfi_timeline_add(&rev, &s[i], &err);
  assert_int_equal(pfi_timeline_resolve(&rev, &out2, &err), 3);
  for (size_t i = 0; i < 3; i++) {
    ASSERT_EQ_INT(out2.spans[i].start_s, out.spans[i].start_s);
    ASSERT_NEAR(out2.spans[i].limit_w, out.spans[i].limit_w, 0);
  }
  /* One id twice at the same priority and time (a VTN that sends event
   * D twice, 400 W and 250 W over [0,10)): 250 W, in either order. */
  for (int order = 0; order < 2; order++) {
    struct pfi_target_span d1 = span(0, 10, 400, PFI_SRC_OPENADR, 0, 5, "D"),
                           d2 = span(0, 10, 250, PFI_SRC_OPENADR, 0, 5, "D");
    struct pfi_timeline dd;
    pfi_timeline_init(&dd);
    assert_int_equal(pfi_timeline_add(&dd, order ? &d2 : &d1, &err), 0);
    assert_int_equal(pfi_timeline_add(&dd, order ? &d1 : &d2, &err), 0);
    assert_int_equal(pfi_timeline_resolve(&dd, &out2, &err), 1);
    ASSERT_NEAR(out2.spans[0].limit_w, 250, 0);
    pfi_timeline_release(&dd);
  }
  /* Mixed levels are refused. */
  in.spans[3].level = PFI_LEVEL_METER;
  assert_int_equal(pfi_timeline_resolve(&in, &out, &err), PFI_EINVAL);
  pfi_timeline_release(&in);
  pfi_timeline_release(&out);
  pfi_timeline_release(&rev);
  pfi_timeline_release(&out2);
}

static void test_schedule(void **state) {
  (void)state;
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_error err;
  const char *ok = "start,end,limit,level\n"
                   "2025-05-04T23:10:00Z,2025-05-05T02:30:00Z,750kW,meter\n"
                   "100,200,75%,gpu\n";
  assert_int_equal(
      pfi_schedule_load_mem("s.csv", ok, strlen(ok), 1000, &tl, &err), 0);
  assert_int_equal(tl.n, 2);
  ASSERT_EQ_INT(tl.spans[0].start_s, 1746400200);
  ASSERT_EQ_INT(tl.spans[0].end_s, 1746400200 + 3 * 3600 + 20 * 60);
  ASSERT_NEAR(tl.spans[0].limit_w, 750000, 0);
  assert_int_equal(tl.spans[0].level, PFI_LEVEL_METER);
  ASSERT_NEAR(tl.spans[1].limit_w, 750, 0);
  assert_string_equal(tl.spans[1].event, "s.csv:3");
  tl.n = 0;
  const char *bad = "start,end,limit\n100,200,5 kWh\n";
  assert_int_equal(
      pfi_schedule_load_mem("b.csv", bad, strlen(bad), 0, &tl, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 2);
  assert_non_null(strstr(err.msg, "unit"));
  const char *rev = "start,end,limit\n200,100,5\n";
  assert_int_equal(
      pfi_schedule_load_mem("r.csv", rev, strlen(rev), 0, &tl, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 2);
  ASSERT_EQ_INT(err.column, 5);
  pfi_timeline_release(&tl);
}

/* now = 2026-01-01T00:00:00Z = 1767225600. */
#define NOW 1767225600LL

static int decode(const char *json, struct pfi_oadr_config *cfg,
                  struct pfi_timeline *tl, struct pfi_error *err) {
  tl->n = 0;
  return pfi_oadr_decode_events("events.json", json, strlen(json), cfg, tl,
                                NULL, err);
}

static void test_oadr_types(void **state) {
  (void)state;
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, NOW);
  cfg.baseline_w = 1000000; /* 1 MW */
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_error err;
  /* Two hourly intervals from 01:00Z: capacity 800 kW then 0.6 MW. */
  const char *cap =
      "[{\"id\":\"e1\",\"programID\":\"p\",\"createdDateTime\":"
      "\"2025-12-31T00:00:00Z\",\"payloadDescriptors\":[{\"objectType\":"
      "\"EVENT_PAYLOAD_DESCRIPTOR\",\"payloadType\":\"IMPORT_CAPACITY_LIMIT\","
      "\"units\":\"KW\"}],\"intervalPeriod\":{\"start\":"
      "\"2026-01-01T01:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":["
      "{\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
      "\"values\":[800]}]},{\"id\":1,\"payloads\":[{\"type\":"
      "\"IMPORT_CAPACITY_LIMIT\",\"values\":[600]},{\"type\":\"PRICE\","
      "\"values\":[0.2]}]}]}]";
  assert_int_equal(decode(cap, &cfg, &tl, &err), 2);
  ASSERT_EQ_INT(tl.spans[0].start_s, NOW + 3600);
  ASSERT_EQ_INT(tl.spans[0].end_s, NOW + 7200);
  ASSERT_NEAR(tl.spans[0].limit_w, 800000, 0);
  ASSERT_EQ_INT(tl.spans[1].start_s, NOW + 7200);
  ASSERT_NEAR(tl.spans[1].limit_w, 600000, 0);
  assert_int_equal(tl.spans[1].level, PFI_LEVEL_METER);
  ASSERT_EQ_INT(tl.spans[0].scheduled_s, NOW - 86400);
  /* Its creation: when it became known (the notice pfid keeps). */
  ASSERT_EQ_INT(tl.spans[0].created_s, NOW - 86400);
  ASSERT_EQ_INT(tl.spans[1].created_s, NOW - 86400);
  /* Relative: a change of -25 PERCENT from 1 MW -> 750 kW; 'do it now'
   * (0001-01-01) for 30 minutes. */
  const char *rel =
      "[{\"id\":\"e2\",\"programID\":\"p\",\"payloadDescriptors\":[{"
      "\"objectType\":\"EVENT_PAYLOAD_DESCRIPTOR\",\"payloadType\":"
      "\"DISPATCH_SETPOINT_RELATIVE\",\"units\":\"PERCENT\"}],"
      "\"intervalPeriod\":{\"start\":\"0001-01-01\",\"duration\":\"PT30M\"},"
      "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":"
      "\"DISPATCH_SETPOINT_RELATIVE\",\"values\":[-25]}]}]}]";
  assert_int_equal(decode(rel, &cfg, &tl, &err), 1);
  ASSERT_EQ_INT(tl.spans[0].start_s, NOW);
  ASSERT_EQ_INT(tl.spans[0].end_s, NOW + 1800);
  ASSERT_NEAR(tl.spans[0].limit_w, 750000, 1e-6);
  /* 'Do it now' is when the VTN last wrote the event: the same start at
   * every poll (read at NOW and 500 s later), not the VEN's clock. */
  const char *nowev =
      "[{\"id\":\"e2n\",\"programID\":\"p\",\"modificationDateTime\":"
      "\"2026-01-01T00:00:00Z\",\"intervalPeriod\":{\"start\":"
      "\"0001-01-01\",\"duration\":\"PT30M\"},\"intervals\":[{\"id\":0,"
      "\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[500]}"
      "]}]}]";
  int64_t t2026;
  assert_int_equal(pfi_time_parse_rfc3339("2026-01-01T00:00:00Z", &t2026, &err),
                   0);
  for (int k = 0; k < 2; k++) {
    struct pfi_oadr_config c2 = cfg;
    c2.now_s = t2026 + 500 * k;
    assert_int_equal(decode(nowev, &c2, &tl, &err), 1);
    ASSERT_EQ_INT(tl.spans[0].start_s, t2026);
    ASSERT_EQ_INT(tl.spans[0].end_s, t2026 + 1800);
  }
  /* Relative in kW: 1 MW + (-150 kW) = 850 kW. */
  const char *relk =
      "[{\"id\":\"e3\",\"programID\":\"p\",\"payloadDescriptors\":[{"
      "\"objectType\":\"EVENT_PAYLOAD_DESCRIPTOR\",\"payloadType\":"
      "\"DISPATCH_SETPOINT_RELATIVE\",\"units\":\"KW\"}],\"intervals\":[{"
      "\"id\":0,\"intervalPeriod\":{\"start\":\"2026-01-01T00:10:00Z\","
      "\"duration\":\"PT10M\"},\"payloads\":[{\"type\":"
      "\"DISPATCH_SETPOINT_RELATIVE\",\"values\":[-150]}]}]}]";
  assert_int_equal(decode(relk, &cfg, &tl, &err), 1);
  ASSERT_NEAR(tl.spans[0].limit_w, 850000, 1e-6);
  /* A positive change allows more than the baseline: 1 MW + 100 kW. */
  const char *relp =
      "[{\"id\":\"e3p\",\"programID\":\"p\",\"payloadDescriptors\":[{"
      "\"objectType\":\"EVENT_PAYLOAD_DESCRIPTOR\",\"payloadType\":"
      "\"DISPATCH_SETPOINT_RELATIVE\",\"units\":\"KW\"}],\"intervals\":[{"
      "\"id\":0,\"intervalPeriod\":{\"start\":\"2026-01-01T00:10:00Z\","
      "\"duration\":\"PT10M\"},\"payloads\":[{\"type\":"
      "\"DISPATCH_SETPOINT_RELATIVE\",\"values\":[100]}]}]}]";
  assert_int_equal(decode(relp, &cfg, &tl, &err), 1);
  ASSERT_NEAR(tl.spans[0].limit_w, 1100000, 1e-6);
  ASSERT_EQ_INT(tl.spans[0].start_s, NOW + 600);
  /* SIMPLE: levels 0 (no limit), 2 (0.75 of baseline), 3 (0.5), in three
   * 10-minute intervals following each other: level 0 gives no span. */
  const char *simple =
      "[{\"id\":\"e4\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
      "\"2026-01-01T00:00:00Z\",\"duration\":\"PT10M\"},\"intervals\":["
      "{\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[0]}]},"
      "{\"id\":1,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]},"
      "{\"id\":2,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[3]}]}]}]";
  assert_int_equal(decode(simple, &cfg, &tl, &err), 2);
  ASSERT_EQ_INT(tl.spans[0].start_s, NOW + 600);
  ASSERT_NEAR(tl.spans[0].limit_w, 750000, 1e-6);
  ASSERT_EQ_INT(tl.spans[1].start_s, NOW + 1200);
  ASSERT_NEAR(tl.spans[1].limit_w, 500000, 1e-6);
  /* DISPATCH_SETPOINT without units: the default unit (kW); a multi-valued
   * payload of 3 values over 30 min: three 10-minute sub-intervals. */
  const char *sp =
      "[{\"id\":\"e5\",\"programID\":\"p\",\"intervals\":[{\"id\":0,"
      "\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
      "\"PT30M\"},\"payloads\":[{\"type\":\"DISPATCH_SETPOINT\",\"values\":"
      "[900,800,700]}]}]}]";
  assert_int_equal(decode(sp, &cfg, &tl, &err), 3);
  ASSERT_EQ_INT(tl.spans[2].start_s, NOW + 1200);
  ASSERT_EQ_INT(tl.spans[2].end_s, NOW + 1800);
  ASSERT_NEAR(tl.spans[2].limit_w, 700000, 0);
  pfi_timeline_release(&tl);
}

static void test_oadr_timing(void **state) {
  (void)state;
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, NOW);
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_error err;
  /* P9999Y from now: one span cut at the horizon (now + 365 d). */
  const char *inf =
      "[{\"id\":\"f\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
      "\"0001-01-01T00:00:00\",\"duration\":\"P9999Y\"},\"intervals\":[{"
      "\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
      "\"values\":[500]}]}]}]";
  assert_int_equal(decode(inf, &cfg, &tl, &err), 1);
  ASSERT_EQ_INT(tl.spans[0].start_s, NOW);
  ASSERT_EQ_INT(tl.spans[0].end_s, NOW + 365 * 86400LL);
  /* event.duration PT25M over 10-minute intervals [A, B]: A B A(5 min). */
  const char *loop =
      "[{\"id\":\"l\",\"programID\":\"p\",\"duration\":\"PT25M\","
      "\"intervalPeriod\":{\"start\":\"2026-01-01T00:00:00Z\",\"duration\":"
      "\"PT5M\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":"
      "\"IMPORT_CAPACITY_LIMIT\",\"values\":[1]}]},{\"id\":1,\"payloads\":[{"
      "\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[2]}]}]}]";
  /* intervals of 5 min: [0,5) 1 kW, [5,10) 2 kW, repeated every 10 min up
   * to 25 min: [10,15) 1, [15,20) 2, [20,25) 1. */
  assert_int_equal(decode(loop, &cfg, &tl, &err), 5);
  ASSERT_EQ_INT(tl.spans[4].start_s, NOW + 1200);
  ASSERT_EQ_INT(tl.spans[4].end_s, NOW + 1500);
  ASSERT_NEAR(tl.spans[4].limit_w, 1000, 0);
  /* A past event yields nothing and is counted expired. */
  const char *past =
      "[{\"id\":\"o\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
      "\"2025-01-01T00:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{"
      "\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}]";
  cfg.baseline_w = 100;
  struct pfi_oadr_stats st;
  tl.n = 0;
  assert_int_equal(
      pfi_oadr_decode_events("x", past, strlen(past), &cfg, &tl, &st, &err), 0);
  assert_int_equal(st.expired, 1);
  /* randomizeStart PT10M: every start delayed by the same draw within
   * [0, 600] (never earlier: the end would come before the VTN's); the
   * same seed gives the same shift, and 200 event ids give shifts with a
   * mean near 300 (uniform on 0..600: sd of the mean
   * 600/sqrt(12)/sqrt(200) = 12.3 s; tolerance 4 sd = 49 s) spread over
   * both halves. */
  double sum = 0;
  int neg = 0, pos = 0;
  for (int k = 0; k < 200; k++) {
    char ev[1024];
    snprintf(ev, sizeof ev,
             "[{\"id\":\"r%d\",\"programID\":\"p\",\"intervalPeriod\":{"
             "\"start\":\"2026-01-01T01:00:00Z\",\"duration\":\"PT10M\","
             "\"randomizeStart\":\"PT10M\"},\"intervals\":[{\"id\":0,"
             "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]},{\"id\":1,"
             "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[2]}]}]}]",
             k);
    assert_int_equal(decode(ev, &cfg, &tl, &err), 2);
    int64_t sh = tl.spans[0].start_s - (NOW + 3600);
    if (sh < 0 || sh > 600)
      fail_msg("shift %lld outside [0, 600]", (long long)sh);
    ASSERT_EQ_INT(tl.spans[1].start_s, tl.spans[0].end_s);
    ASSERT_EQ_INT(tl.spans[0].end_s - tl.spans[0].start_s, 600);
    sum += (double)sh;
    neg += sh < 300;
    pos += sh > 300;
    int64_t again = tl.spans[0].start_s;
    assert_int_equal(decode(ev, &cfg, &tl, &err), 2);
    ASSERT_EQ_INT(tl.spans[0].start_s, again);
  }
  ASSERT_NEAR(sum / 200, 300, 49);
  assert_true(neg > 50 && pos > 50);
  pfi_timeline_release(&tl);
}

static void test_oadr_bad(void **state) {
  (void)state;
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, NOW);
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_error err;
  struct {
    const char *json, *want;
  } cases[] = {
      {"[{\"id\":\"a\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
       "\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{"
       "\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
       "\"values\":[\"lots\"]}]}]}]",
       "events[0].intervals[0].payloads[0].values[0]: expected a number"},
      {"[{\"id\":\"a\",\"programID\":\"p\",\"intervals\":[{\"id\":0,"
       "\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[1]}]}]}]",
       "events[0].intervals[0]: no duration"},
      {"[{\"programID\":\"p\"}]", "events[0]: id:"},
      {"[{\"id\":\"a\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
       "\"yesterday\"}}]",
       "events[0].intervalPeriod.start"},
      {"[{\"id\":\"a\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
       "\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{"
       "\"id\":0,\"payloads\":[{\"type\":\"SIMPLE\",\"values\":[7]}]}]}]",
       "SIMPLE level must be an integer 0-3"},
      /* Negative durations (ISO 8601 has them, no OpenADR field means
       * one): named, not read as an empty interval or a cut event. */
      {"[{\"id\":\"a\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
       "\"2026-01-01T00:00:00Z\",\"duration\":\"-PT1H\"},\"intervals\":[{"
       "\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
       "\"values\":[2]}]}]}]",
       "events[0].intervalPeriod.duration: a negative duration: -PT1H"},
      {"[{\"id\":\"a\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
       "\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{"
       "\"id\":0,\"intervalPeriod\":{\"duration\":\"-PT30M\"},"
       "\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[2]}]}"
       "]}]",
       "events[0].intervals[0].intervalPeriod.duration: a negative duration"},
      {"[{\"id\":\"a\",\"programID\":\"p\",\"duration\":"
       "\"-P999999999999Y\",\"intervalPeriod\":{\"start\":"
       "\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{"
       "\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
       "\"values\":[2]}]}]}]",
       "events[0].duration: a negative duration"},
      {"[{\"id\":\"a\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
       "\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\",\"randomizeStart\":"
       "\"-PT5M\"},\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":"
       "\"IMPORT_CAPACITY_LIMIT\",\"values\":[2]}]}]}]",
       "events[0].intervalPeriod.randomizeStart: a negative duration"},
      {"{\"id\":\"a\"}", "events: expected an array"},
      {"[{\"id\":\"a\",", "JSON"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl.n = 0;
    pfi_error_clear(&err);
    int rc = decode(cases[i].json, &cfg, &tl, &err);
    if (rc != PFI_EPARSE || !strstr(err.msg, cases[i].want))
      fail_msg("case %zu: rc %d, message '%s', expected '%s'", i, rc, err.msg,
               cases[i].want);
    assert_int_equal(tl.n, 0);
  }
  /* SIMPLE without a baseline is refused, naming what is missing. */
  const char *s = "[{\"id\":\"a\",\"programID\":\"p\",\"intervalPeriod\":{"
                  "\"start\":\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\"},"
                  "\"intervals\":[{\"id\":0,\"payloads\":[{\"type\":"
                  "\"SIMPLE\",\"values\":[1]}]}]}]";
  assert_int_equal(decode(s, &cfg, &tl, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "baseline"));
  pfi_timeline_release(&tl);
}

/* Two programs' events in one answer (a VTN that ignores the programID
 * filter): with cfg.program_id "p1" only p1's span is kept, 500 kW (no
 * units: the default kW, 500 x 1000 W), and p2's 100 kW is counted as
 * another program's; without it both are read. */
static const char two_programs[] =
    "[{\"id\":\"e1\",\"programID\":\"p1\",\"intervalPeriod\":{\"start\":"
    "\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,"
    "\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[500]}]}]},"
    "{\"id\":\"e2\",\"programID\":\"p2\",\"intervalPeriod\":{\"start\":"
    "\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,"
    "\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[100]}]}]}]";

static void test_oadr_other_program(void **state) {
  (void)state;
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, NOW);
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_error err;
  struct pfi_oadr_stats st;
  assert_int_equal(pfi_oadr_decode_events("e.json", two_programs,
                                          strlen(two_programs), &cfg, &tl, &st,
                                          &err),
                   2);
  cfg.program_id = "p1";
  tl.n = 0;
  assert_int_equal(pfi_oadr_decode_events("e.json", two_programs,
                                          strlen(two_programs), &cfg, &tl, &st,
                                          &err),
                   1);
  assert_string_equal(tl.spans[0].event, "e1");
  ASSERT_NEAR(tl.spans[0].limit_w, 500000, 0);
  assert_int_equal(st.other_program, 1);
  assert_int_equal(st.events, 2);
  pfi_timeline_release(&tl);
}

/* A VTN that answers GET /events with every program's events, whatever
 * the programID filter: token, program "prog" = id p1, and the two events
 * above. */
static void fake_vtn_nofilter(void *arg, const struct pfi_http_req *rq,
                              struct pfi_http_resp *rs) {
  (void)arg;
  const char *b = "{}";
  if (!strcmp(rq->path, "/auth/token"))
    b = "{\"access_token\":\"t\",\"token_type\":\"Bearer\",\"expires_in\":"
        "3600}";
  else if (!strcmp(rq->path, "/programs"))
    b = "[{\"id\":\"p1\",\"programName\":\"prog\"}]";
  else if (!strcmp(rq->path, "/events"))
    b = two_programs;
  else
    rs->status = 404;
  rs->body = strdup(b);
  rs->len = strlen(b);
}

static void test_ven_other_program(void **state) {
  (void)state;
  struct pfi_error err;
  struct pfi_http *h;
  assert_int_equal(
      pfi_http_start(&h, "127.0.0.1:0", fake_vtn_nofilter, NULL, &err), 0);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u", pfi_http_port(h));
  struct pfi_ven_config vc = {.vtn_url = url,
                              .client_id = "ven1",
                              .client_secret = "s",
                              .program_name = "prog"};
  struct pfi_ven *v;
  assert_int_equal(pfi_ven_open(&vc, &v, &err), 0);
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, NOW);
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_oadr_stats st;
  int rc = pfi_ven_poll(v, &cfg, &tl, &st, &err);
  if (rc < 0)
    fail_msg("poll: %s", err.msg);
  assert_int_equal(rc, 1);
  assert_string_equal(tl.spans[0].event, "e1");
  ASSERT_NEAR(tl.spans[0].limit_w, 500000, 0);
  assert_int_equal(st.other_program, 1);
  pfi_timeline_release(&tl);
  pfi_ven_close(v);
  pfi_http_stop(h);
}

static void test_notification(void **state) {
  (void)state;
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, NOW);
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_error err;
  char id[PFI_TIMELINE_ID_MAX];
  int del;
  const char *n =
      "{\"objectType\":\"EVENT\",\"operation\":\"CREATE\",\"object\":{\"id\":"
      "\"9\",\"programID\":\"p\",\"intervalPeriod\":{\"start\":"
      "\"2026-01-01T00:00:00Z\",\"duration\":\"PT1H\"},\"intervals\":[{"
      "\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
      "\"values\":[2]}]}]}}";
  assert_int_equal(
      pfi_oadr_decode_notification(n, strlen(n), &cfg, &tl, id, &del, &err), 1);
  assert_string_equal(id, "9");
  assert_int_equal(del, 0);
  ASSERT_NEAR(tl.spans[0].limit_w, 2000, 0);
  const char *d = "{\"objectType\":\"EVENT\",\"operation\":\"DELETE\","
                  "\"object\":{\"id\":\"9\"}}";
  assert_int_equal(
      pfi_oadr_decode_notification(d, strlen(d), &cfg, &tl, id, &del, &err), 0);
  assert_int_equal(del, 1);
  pfi_timeline_release(&tl);
}

/* The reference VTN's notifications: a JSON string holding the JSON, keys
 * snake_case at every depth; its "YYYY-MM-DD HH:MM:SS" times, read as UTC
 * (2026-01-01 00:10:00 is NOW + 600). Each decodes as its camelCase
 * original would. */
static void test_notification_reference(void **state) {
  (void)state;
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, NOW);
  struct pfi_timeline tl;
  pfi_timeline_init(&tl);
  struct pfi_error err;
  char id[PFI_TIMELINE_ID_MAX];
  int del;
  /* snake_case, "do it now" (start 0001-01-01: the modification time),
   * 2 kW for an hour. */
  const char *n =
      "{\"object_type\":\"EVENT\",\"operation\":\"CREATE\",\"object\":{"
      "\"id\":\"9\",\"program_id\":\"p\",\"created_date_time\":"
      "\"2026-01-01 00:05:00\",\"modification_date_time\":\"2026-01-01 "
      "00:10:00\",\"payload_descriptors\":[{\"object_type\":"
      "\"EVENT_PAYLOAD_DESCRIPTOR\",\"payload_type\":"
      "\"IMPORT_CAPACITY_LIMIT\",\"units\":\"W\"}],\"interval_period\":{"
      "\"start\":\"0001-01-01\",\"duration\":\"PT1H\"},\"intervals\":[{"
      "\"id\":0,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
      "\"values\":[2000]}]}]}}";
  assert_int_equal(
      pfi_oadr_decode_notification(n, strlen(n), &cfg, &tl, id, &del, &err), 1);
  assert_string_equal(id, "9");
  ASSERT_EQ_INT(tl.spans[0].start_s, NOW + 600);
  ASSERT_EQ_INT(tl.spans[0].end_s, NOW + 600 + 3600);
  ASSERT_NEAR(tl.spans[0].limit_w, 2000, 0); /* units W, not the kW default */
  ASSERT_EQ_INT(tl.spans[0].created_s, NOW + 300);
  /* The same as a JSON string holding it. */
  json_t *str = json_string(n);
  char *wrapped = json_dumps(str, JSON_ENCODE_ANY);
  json_decref(str);
  assert_non_null(wrapped);
  assert_true(wrapped[0] == '"');
  tl.n = 0;
  assert_int_equal(pfi_oadr_decode_notification(wrapped, strlen(wrapped), &cfg,
                                                &tl, id, &del, &err),
                   1);
  assert_string_equal(id, "9");
  ASSERT_EQ_INT(tl.spans[0].start_s, NOW + 600);
  ASSERT_NEAR(tl.spans[0].limit_w, 2000, 0);
  free(wrapped);
  /* A camelCase key wins over its snake_case twin. */
  const char *both =
      "{\"objectType\":\"EVENT\",\"object_type\":\"PROGRAM\","
      "\"operation\":\"DELETE\",\"object\":{\"id\":\"4\"}}";
  assert_int_equal(pfi_oadr_decode_notification(both, strlen(both), &cfg, &tl,
                                                id, &del, &err),
                   0);
  ASSERT_EQ_INT(del, 1);
  assert_string_equal(id, "4");
  /* A string that holds no JSON, or JSON that is no notification: errors
   * naming it. */
  const char *bad = "\"{nope\"";
  assert_int_equal(pfi_oadr_decode_notification(bad, strlen(bad), &cfg, &tl,
                                                id, &del, &err),
                   PFI_EPARSE);
  assert_non_null(strstr(err.file, "the string's JSON"));
  const char *num = "\"42\"";
  assert_int_equal(pfi_oadr_decode_notification(num, strlen(num), &cfg, &tl,
                                                id, &del, &err),
                   PFI_EPARSE);
  pfi_timeline_release(&tl);
}

static void test_report_json(void **state) {
  (void)state;
  struct pfi_ven_report_value v[] = {
      {"USAGE", 1234.5, "WH", "DIRECT_READ"},
      {"LOAD_SHED_DELTA_AVAILABLE", 50000, "W", "FORECAST"}};
  struct pfi_ven_report r = {.event_id = "7",
                             .report_name = "r",
                             .start_s = 1746400200,
                             .duration_s = 900,
                             .values = v,
                             .nvalues = 2};
  char *s;
  struct pfi_error err;
  assert_int_equal(pfi_ven_report_json(&r, "site-1", "p", &s, &err), 0);
  assert_non_null(strstr(s, "\"eventID\":\"7\""));
  assert_non_null(strstr(s, "\"clientName\":\"site-1\""));
  assert_non_null(strstr(s, "\"start\":\"2025-05-04T23:10:00Z\""));
  assert_non_null(strstr(s, "\"duration\":\"PT900S\""));
  assert_non_null(strstr(s, "\"type\":\"USAGE\",\"values\":[1234.5]"));
  assert_non_null(strstr(s, "\"resourceName\":\"AGGREGATED_REPORT\""));
  free(s);
  v[0].value = NAN;
  assert_int_equal(pfi_ven_report_json(&r, "site-1", "p", &s, &err),
                   PFI_EINVAL);
}

static void test_meter(void **state) {
  (void)state;
  struct pfi_meter_config cfg;
  struct pfi_error err;
  const char *conf = "# site\nnode_other_w = 1000\npsu_rated_w = 10000\n"
                     "psu_curve = 0.1:0.90, 0.5:0.96, 1.0:0.91\npue = 1.25\n";
  assert_int_equal(
      pfi_meter_config_load_mem("m.conf", conf, strlen(conf), &cfg, &err), 0);
  /* load 0.3: between 0.1 (0.90) and 0.5 (0.96): 0.90 + 0.06*0.2/0.4
   * = 0.93. */
  ASSERT_NEAR(pfi_meter_psu_eff(&cfg, 0.3), 0.93, 1e-12);
  ASSERT_NEAR(pfi_meter_psu_eff(&cfg, 0.05), 0.90, 0);
  ASSERT_NEAR(pfi_meter_psu_eff(&cfg, 2), 0.91, 0);
  /* Two nodes: GPU 4000 W (other measured 600) and 2000 W (unmeasured ->
   * 1000). DC 4600 and 3000; loads 0.46, 0.30; eff 0.90+0.06*0.36/0.4 =
   * 0.954 and 0.93; wall 4600/0.954 + 3000/0.93; facility x1.25. */
  double gpu[] = {4000, 2000}, other[] = {600, NAN}, g, dc, fac;
  assert_int_equal(pfi_meter_levels(&cfg, gpu, other, 2, &g, &dc, &fac, &err),
                   0);
  ASSERT_NEAR(g, 6000, 0);
  ASSERT_NEAR(dc, 7600, 0);
  double want = 1.25 * (4600 / 0.954 + 3000 / 0.93);
  ASSERT_NEAR(fac, want, 1e-9);
  /* Node-level limit 7000 W: GPUs get 7000 - 1600 = 5400 W. */
  double gl;
  assert_int_equal(
      pfi_meter_gpu_limit(&cfg, gpu, other, 2, PFI_LEVEL_NODE, 7000, &gl, &err),
      0);
  ASSERT_NEAR(gl, 5400, 1e-2);
  /* Meter-level limit: the GPU total whose facility power equals it;
   * checked by evaluating the chain at the answer (scaled shares). */
  assert_int_equal(pfi_meter_gpu_limit(&cfg, gpu, other, 2, PFI_LEVEL_METER,
                                       8000, &gl, &err),
                   0);
  double g2[] = {gl * 4000 / 6000, gl * 2000 / 6000};
  assert_int_equal(pfi_meter_levels(&cfg, g2, other, 2, NULL, NULL, &fac, &err),
                   0);
  ASSERT_NEAR(fac, 8000, 0.01);
  /* Below the no-GPU draw: 1.25 * (600/0.90 + 1000/0.90) = 2222.2 W. */
  assert_int_equal(pfi_meter_gpu_limit(&cfg, gpu, other, 2, PFI_LEVEL_METER,
                                       2000, &gl, &err),
                   PFI_EINFEASIBLE);
  assert_non_null(strstr(err.msg, "short by 222.2 W"));
  /* Bad configurations name the line and column. */
  const char *bad[] = {"pue = 0.9\n", "psu_curve = 0.5:0.9,0.4:0.9\n",
                       "x = 1\n", "node_other_w 5\n", "psu_curve = 0.5:1.2\n"};
  long col[] = {7, 21, 1, 1, 17};
  for (size_t i = 0; i < 5; i++) {
    pfi_error_clear(&err);
    if (pfi_meter_config_load_mem("b.conf", bad[i], strlen(bad[i]), &cfg,
                                  &err) != PFI_EPARSE ||
        err.line != 1 || err.column != col[i])
      fail_msg("case %zu: line %ld column %ld (%s), expected 1:%ld", i,
               err.line, err.column, err.msg, col[i]);
  }
}

static void write_file(const char *path, const char *s) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(s, f);
  fclose(f);
}

/* The forward chain at another GPU total (what the bridge reports at the
 * VTN's level). Two nodes drawing 4000 and 2000 W of GPU power (shares
 * 2/3, 1/3), other 600 W (measured) and 1000 W (node_other_w); one
 * efficiency 0.9 at every load, PUE 1.25, 500 W of facility loads. At
 * 3000 W of GPU power: node DC 2000 + 600 + 1000 + 1000 = 4600 W, meter
 * 1.25 x 4600 / 0.9 + 500 = 6888.888... W; at 6000 W (now): 7600 and
 * 1.25 x 7600 / 0.9 + 500 = 11055.555... W; so shedding 3000 W of GPU
 * power sheds 3000 W at the node and 4166.666... W at the meter. */
static void test_meter_power_at(void **state) {
  (void)state;
  struct pfi_meter_config cfg;
  pfi_meter_config_init(&cfg);
  cfg.node_other_w = 1000;
  cfg.psu_eff[0] = 0.9;
  cfg.pue = 1.25;
  cfg.facility_other_w = 500;
  struct pfi_error err;
  double gpu[] = {4000, 2000}, other[] = {600, NAN}, w;
  assert_int_equal(
      pfi_meter_power_at(&cfg, gpu, other, 2, PFI_LEVEL_GPU, 3000, &w, &err),
      0);
  ASSERT_NEAR(w, 3000, 0);
  assert_int_equal(
      pfi_meter_power_at(&cfg, gpu, other, 2, PFI_LEVEL_NODE, 3000, &w, &err),
      0);
  ASSERT_NEAR(w, 4600, 1e-9);
  assert_int_equal(
      pfi_meter_power_at(&cfg, gpu, other, 2, PFI_LEVEL_METER, 3000, &w, &err),
      0);
  ASSERT_NEAR(w, 1.25 * 4600 / 0.9 + 500, 1e-9);
  double hi;
  assert_int_equal(
      pfi_meter_power_at(&cfg, gpu, other, 2, PFI_LEVEL_METER, 6000, &hi, &err),
      0);
  ASSERT_NEAR(hi, 1.25 * 7600 / 0.9 + 500, 1e-9);
  ASSERT_NEAR(hi - w, 3000 * 1.25 / 0.9, 1e-9);
  /* It is the inverse of pfi_meter_gpu_limit: the meter limit 6888.9 W
   * gives back 3000 W of GPU power. */
  double g;
  assert_int_equal(pfi_meter_gpu_limit(&cfg, gpu, other, 2, PFI_LEVEL_METER,
                                       1.25 * 4600 / 0.9 + 500, &g, &err),
                   0);
  ASSERT_NEAR(g, 3000, 1e-2);
  /* No nodes at the meter, a NaN total: refused. */
  assert_int_equal(
      pfi_meter_power_at(&cfg, gpu, other, 0, PFI_LEVEL_METER, 3000, &w, &err),
      PFI_EINVAL);
  assert_int_equal(
      pfi_meter_power_at(&cfg, gpu, other, 2, PFI_LEVEL_NODE, NAN, &w, &err),
      PFI_EINVAL);
}

static void test_rapl(void **state) {
  (void)state;
  char root[] = "/tmp/pfi-rapl-XXXXXX";
  assert_non_null(mkdtemp(root));
  const char *zones[] = {"intel-rapl:0", "intel-rapl:0:0", "intel-rapl:0:1",
                         "intel-rapl:1"};
  const char *names[] = {"package-0", "core", "dram", "psys"};
  for (int i = 0; i < 4; i++) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, zones[i]);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/%s/name", root, zones[i]);
    write_file(p, names[i]);
    snprintf(p, sizeof p, "%s/%s/energy_uj", root, zones[i]);
    write_file(p, "1000000\n");
    snprintf(p, sizeof p, "%s/%s/max_energy_range_uj", root, zones[i]);
    write_file(p, "262143328850\n");
  }
  struct pfi_rapl r;
  struct pfi_error err;
  assert_int_equal(pfi_rapl_open(root, &r, &err), 4);
  double e0[4], e1[4];
  assert_int_equal(pfi_rapl_read(&r, e0, &err), 0);
  /* package: 1e6 -> wrapped to 50e6 past the range; dram +20e6 uJ. Over 2 s:
   * package (262143328850 - 1e6 + 50e6) uJ ... no wrap for a sane reading:
   * use package 1e6 -> 201e6 (+200 J) and dram 1e6 -> 21e6 (+20 J):
   * (200 + 20) J / 2 s = 110 W; core and psys left out. */
  memcpy(e1, e0, sizeof e1);
  e1[0] = 201e6; /* zones are sorted: :0, :0:0, :0:1, :1 */
  e1[1] = 999e6;
  e1[2] = 21e6;
  e1[3] = 999e6;
  assert_string_equal(r.zone[2].name, "dram");
  ASSERT_NEAR(pfi_rapl_power_w(&r, e0, e1, 2), 110, 1e-9);
  /* A wrapped package counter: from max - 100e6 to 100e6 is +200 J. */
  e0[0] = 262143328850.0 - 100e6;
  e1[0] = 100e6;
  e0[2] = e1[2] = 0;
  ASSERT_NEAR(pfi_rapl_power_w(&r, e0, e1, 2), 100, 1e-6);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  assert_int_equal(system(cmd), 0);
  /* A machine without powercap: no zones, not an error. */
  assert_int_equal(pfi_rapl_open("/nonexistent-powercap", &r, &err), 0);
}

static void test_dcmi(void **state) {
  (void)state;
  double w;
  struct pfi_error err;
  const char *ipmitool =
      "\n    Instantaneous power reading:                   220 Watts\n"
      "    Minimum during sampling period:                 80 Watts\n"
      "    Power reading state is:                   activated\n";
  assert_int_equal(pfi_dcmi_parse(ipmitool, strlen(ipmitool), &w, &err), 0);
  ASSERT_NEAR(w, 220, 0);
  const char *freeipmi = "Current Power                        : 415 Watts\n"
                         "Minimum Power over sampling duration : 300 watts\n";
  assert_int_equal(pfi_dcmi_parse(freeipmi, strlen(freeipmi), &w, &err), 0);
  ASSERT_NEAR(w, 415, 0);
  const char *off = "Power Measurement                    : Deactivated\n";
  assert_int_equal(pfi_dcmi_parse(off, strlen(off), &w, &err), PFI_ENOTSUP);
  /* freeipmi prints its 0 W reading before the state: still not one. */
  const char *off_after =
      "Current Power                        : 0 Watts\n"
      "Power Measurement                    : Deactivated\n";
  assert_int_equal(pfi_dcmi_parse(off_after, strlen(off_after), &w, &err),
                   PFI_ENOTSUP);
  assert_int_equal(pfi_dcmi_parse("junk", 4, &w, &err), PFI_EPARSE);
  assert_non_null(strstr(err.msg, "in 1 line(s) of output, the first 'junk'"));
}

static void test_compliance(void **state) {
  (void)state;
  /* 4 periods of 60 s. Baseline 1000 W at the GPU level, meter baseline
   * 1300 W. Targets 750 each; realized 740, 760, 745, 750 (760 > 750 *
   * 1.005 = 753.75: 60 s above target, worst +10 W). Meter 1000 each:
   * shed (1300-1000) * 240 s / 3600 = 20 Wh. Requested cut 250; realized
   * 1000 - 748.75 = 251.25. */
  double target[] = {750, 750, 750, 750}, real[] = {740, 760, 745, 750},
         meter[] = {1000, 1000, 1000, 1000};
  struct pfi_tier tiers[] = {{"flex10", 0.10, 4 * 3600, 0},
                             {"flex25", 0.25, 600, 1800}};
  struct pfi_contract_job jobs[] = {
      {"a", "t1", "flex10", 100, NAN},
      {"b", "t1", "flex25", 300, NAN},
      {"c", "t2", "flex10", 50, 49},
  };
  /* Throughput per period: a 95 (loss 5 %), b 210 (30 % > 25 %), c 45
   * (10 %, within 10 % + tol, but below the deadline 49). */
  double tput[] = {95, 210, 45, 95, 210, 45, 95, 210, 45, 95, 210, 45};
  struct pfi_compliance_input in = {.nt = 4,
                                    .dt_s = 60,
                                    .target_w = target,
                                    .realized_w = real,
                                    .meter_w = meter,
                                    .baseline_w = 1000,
                                    .baseline_meter_w = 1300,
                                    .nj = 3,
                                    .jobs = jobs,
                                    .tput = tput,
                                    .ntier = 2,
                                    .tiers = tiers,
                                    .event_s = 1200,
                                    .notice_s = 900,
                                    .tol = 0.005};
  struct pfi_compliance c;
  struct pfi_error err;
  assert_int_equal(pfi_compliance_compute(&in, &c, &err), 0);
  ASSERT_NEAR(c.requested_cut_w, 250, 1e-12);
  ASSERT_NEAR(c.realized_cut_w, 251.25, 1e-12);
  ASSERT_NEAR(c.energy_shed_wh, 20, 1e-12);
  ASSERT_NEAR(c.above_target_s, 60, 0);
  ASSERT_NEAR(c.worst_over_w, 10, 0);
  ASSERT_NEAR(c.job[0].loss, 0.05, 1e-12);
  assert_int_equal(c.job[0].violation, 0);
  /* b: 30 % loss over 25 %, a 1200 s event over 600 s, 900 s notice under
   * 1800 s: three reasons. */
  assert_int_equal(c.job[1].violation, 1);
  assert_non_null(strstr(c.job[1].why, "lost 30.0 %"));
  assert_non_null(strstr(c.job[1].why, "event of 1200 s"));
  assert_non_null(strstr(c.job[1].why, "notice of 900 s"));
  assert_int_equal(c.job[2].violation, 1);
  assert_non_null(strstr(c.job[2].why, "deadline"));
  assert_null(strstr(c.job[2].why, "lost"));
  /* Tenants: t1 = 1 - (95+210)/(100+300) = 0.2375; t2 = 0.1. */
  assert_int_equal(c.ntenant, 2);
  ASSERT_NEAR(c.tenant[0].loss, 0.2375, 1e-12);
  assert_int_equal(c.tenant[0].violations, 1);
  ASSERT_NEAR(c.tenant[1].loss, 0.1, 1e-12);
  assert_int_equal(c.violations, 2);
  pfi_compliance_release(&c);
  jobs[2].tier = "gold";
  assert_int_equal(pfi_compliance_compute(&in, &c, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "job c: unknown tier"));
}

/* The contract kept live (docs/control.md "Contract"): the longest event
 * and the notice judged on how long each job was held under its caps,
 * counted in periods of 60 s (a count that exceeds the longest event by
 * more than a period breaks it). flex25: longest event 600 s, notice
 * 1800 s; the event 1200 s with 900 s notice. a: released at its longest
 * event (held 660 s: the 11th period, in which it was released: no
 * violation); b: its tier's notice exempted it (held 0: none); c: held
 * 720 s (two periods over: the longest event; and cut on short notice).
 * Throughput at the baseline: no loss. Then the same from a log with the
 * held column: one sample a minute, a held 1,1,0,0 (120 s), b 0,0,0,0, c
 * 1,1,1,1 (240 s) against a 60 s longest event. */
static void test_compliance_held(void **state) {
  (void)state;
  double target[] = {750, 750, 750, 750}, real[] = {740, 740, 740, 740},
         meter[] = {1000, 1000, 1000, 1000};
  struct pfi_tier tiers[] = {{"flex25", 0.25, 600, 1800}};
  struct pfi_contract_job jobs[] = {{"a", "t1", "flex25", 100, NAN},
                                    {"b", "t1", "flex25", 100, NAN},
                                    {"c", "t2", "flex25", 100, NAN}};
  double tput[12], held[] = {660, 0, 720};
  for (int k = 0; k < 12; k++)
    tput[k] = 100;
  struct pfi_compliance_input in = {.nt = 4,
                                    .dt_s = 60,
                                    .target_w = target,
                                    .realized_w = real,
                                    .meter_w = meter,
                                    .baseline_w = 1000,
                                    .baseline_meter_w = 1300,
                                    .nj = 3,
                                    .jobs = jobs,
                                    .tput = tput,
                                    .ntier = 1,
                                    .tiers = tiers,
                                    .event_s = 1200,
                                    .notice_s = 900,
                                    .tol = 0.005,
                                    .held_s = held};
  struct pfi_compliance c;
  struct pfi_error err;
  assert_int_equal(pfi_compliance_compute(&in, &c, &err), 0);
  assert_int_equal(c.job[0].violation, 1); /* a: held, on short notice */
  assert_null(strstr(c.job[0].why, "held under"));
  assert_non_null(strstr(c.job[0].why, "notice of 900 s"));
  assert_int_equal(c.job[1].violation, 0);
  assert_string_equal(c.job[1].why, "");
  assert_int_equal(c.job[2].violation, 1);
  assert_non_null(strstr(c.job[2].why, "held under its caps 720 s"));
  assert_int_equal(c.violations, 2);
  pfi_compliance_release(&c);
  /* With the notice the tier needs, a is compliant too. */
  in.notice_s = 1800;
  assert_int_equal(pfi_compliance_compute(&in, &c, &err), 0);
  assert_int_equal(c.job[0].violation, 0);
  assert_int_equal(c.job[2].violation, 1);
  assert_null(strstr(c.job[2].why, "notice"));
  pfi_compliance_release(&c);
  held[1] = -1;
  assert_int_equal(pfi_compliance_compute(&in, &c, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "job b: held_s"));

  const char *series = "t_s,target_w,power_w\n0,0,1000\n60,0,1000\n"
                       "120,750,740\n180,750,740\n240,750,740\n300,750,740\n";
  char jobs_csv[2048];
  size_t w = (size_t)snprintf(jobs_csv, sizeof jobs_csv,
                              "t_s,job,tokens_per_s,held\n");
  const char *ha = "0011000", *hc = "0011110"; /* t = 0, 60, ..., 300 */
  for (int q = 0; q < 6; q++)
    w += (size_t)snprintf(jobs_csv + w, sizeof jobs_csv - w,
                          "%d,a,100,%c\n%d,b,100,0\n%d,c,100,%c\n", 60 * q,
                          ha[q], 60 * q, 60 * q, hc[q]);
  struct pfi_eventlog log;
  assert_int_equal(
      pfi_eventlog_load_mem(&log, series, strlen(series), jobs_csv, w, &err),
      0);
  struct pfi_tier t2[] = {{"flex25", 0.25, 60, 0}};
  struct pfi_meter_config mc;
  pfi_meter_config_init(&mc);
  double *m;
  struct pfi_contract_job *cj;
  assert_int_equal(pfi_eventlog_compliance(&log, &mc, 1, jobs, 3, t2, 1, 0, &in,
                                           &m, &cj, &err),
                   0);
  assert_non_null(in.held_s);
  ASSERT_NEAR(in.held_s[0], 120, 1e-9);
  ASSERT_NEAR(in.held_s[1], 0, 0);
  ASSERT_NEAR(in.held_s[2], 240, 1e-9);
  assert_int_equal(pfi_compliance_compute(&in, &c, &err), 0);
  assert_int_equal(c.job[0].violation, 0);
  assert_int_equal(c.job[1].violation, 0);
  assert_int_equal(c.job[2].violation, 1);
  assert_non_null(strstr(c.job[2].why, "held under its caps 240 s"));
  pfi_compliance_release(&c);
  free(m);
  free(cj);
  pfi_eventlog_release(&log);
  /* A held cell that is not 0, 1 or empty: located. */
  char bad[] = "t_s,job,tokens_per_s,held\n0,a,100,0\n60,a,100,yes\n";
  int rc = pfi_eventlog_load_mem(&log, series, strlen(series), bad, strlen(bad),
                                 &err);
  assert_int_equal(rc, PFI_EPARSE);
  assert_non_null(strstr(err.msg, "held"));
  assert_int_equal(err.line, 3);
}

static void test_flexcap(void **state) {
  (void)state;
  /* a: T = 50 + 0.1 (P - 200) on [200, 700], tier flex10: floor where
   * T = 90, P = 600. b: T = 90 + 0.02 (P - 200), tier flex25 (1 h longest
   * event): 75 is below its lowest point, floor 200. T0 = 200. The oracle
   * sheds from b first (0.02/W) then a (0.1/W): loss 0.02 S up to 500 W,
   * then 10 + 0.1 (S - 500) up to the largest cut, 600 W. Quotes at 1, 2,
   * 5, 10, 20 % (2, 4, 10, 20, 40 tokens): 100, 200, 500, 600, 600 W. */
  struct pfi_tier tiers[] = {{"flex10", 0.10, INFINITY, 0},
                             {"flex25", 0.25, 3600, 0}};
  double p[] = {200, 700}, ta[] = {50, 100}, tb[] = {90, 100};
  double tb_lo[] = {85, 100}, tb_hi[] = {95, 100};
  struct pfi_flex_job jobs[] = {{"a", p, ta, NULL, NULL, 2, &tiers[0], 0},
                                {"b", p, tb, NULL, NULL, 2, &tiers[1], 0}};
  struct pfi_flexcap fc;
  struct pfi_error err;
  double fl;
  assert_int_equal(pfi_flex_floor(&jobs[0], 600, 0, NULL, &fl, &err), 0);
  ASSERT_NEAR(fl, 600, 1e-9);
  assert_int_equal(pfi_flexcap_compute(jobs, 2, 1800, 0, 400, &fc, &err), 0);
  double want[] = {100, 200, 500, 600, 600};
  for (int k = 0; k < 5; k++)
    ASSERT_NEAR(fc.quote_w[k], want[k], 1e-3);
  ASSERT_NEAR(fc.floor_w, 800, 1e-9);
  assert_int_equal(fc.eligible, 2);
  /* A 2-hour event: b's tier allows 1 h, so only a: loss 0.1 S up to 100 W:
   * quotes 20, 40, 100, 100, 100 W. */
  assert_int_equal(pfi_flexcap_compute(jobs, 2, 7200, 0, 400, &fc, &err), 0);
  double want2[] = {20, 40, 100, 100, 100};
  for (int k = 0; k < 5; k++)
    ASSERT_NEAR(fc.quote_w[k], want2[k], 1e-3);
  assert_int_equal(fc.eligible, 1);
  /* Intervals on both jobs (a's exact): b's slope 0.03 (lo) or 0.01 (hi)
   * per W: the 1 % quote (2 tokens) ranges over 2/0.03 = 66.67 .. 200 W. */
  jobs[0].tput_lo = jobs[0].tput_hi = ta;
  jobs[1].tput_lo = tb_lo;
  jobs[1].tput_hi = tb_hi;
  assert_int_equal(pfi_flexcap_compute(jobs, 2, 1800, 0, 400, &fc, &err), 0);
  ASSERT_NEAR(fc.quote_w[0], 100, 1e-3);
  ASSERT_NEAR(fc.quote_lo_w[0], 200.0 / 3, 1e-3);
  ASSERT_NEAR(fc.quote_hi_w[0], 200, 1e-3);
  /* Tier files. */
  const char *tf = "tier,max_loss,max_event_s,notice_s\nflex0,0,,\n"
                   "flex25,25%,14400,3600\n";
  struct pfi_tier *tv;
  size_t nt;
  assert_int_equal(pfi_tiers_load_mem("t.csv", tf, strlen(tf), &tv, &nt, &err),
                   0);
  assert_int_equal(nt, 2);
  ASSERT_NEAR(tv[1].max_loss, 0.25, 1e-15);
  ASSERT_NEAR(tv[1].max_event_s, 14400, 0);
  assert_true(isinf(tv[0].max_event_s));
  free(tv);
  const char *bad = "tier,max_loss\nflex,1.5\n";
  assert_int_equal(
      pfi_tiers_load_mem("b.csv", bad, strlen(bad), &tv, &nt, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 2);
  ASSERT_EQ_INT(err.column, 6);
}

/* The quotes under an objective (pfi_flexcap_compute_objective): the jobs
 * of test_flexcap with b's throughput reported in a unit 1000 times
 * smaller (90,000 -> 100,000 per s).
 *  - Raw sum: a sheds first (0.1/W against b's 20/W) down to its floor,
 *    10 units at 100 W, then b: the 1 % quote (1 % of 100,100 = 1001
 *    units) is 100 + (1001 - 10) / 20 = 149.55 W.
 *  - work without GPU counts (each job counts once: a 0.5 -> 1, slope
 *    0.001/W; b 0.9 -> 1, 0.0002/W; 2 in all): b first, 0.0002 S up to
 *    500 W, then a, 0.1 + 0.001 (S - 500) up to 600 W: quotes at 0.02,
 *    0.04, 0.1, 0.2, 0.4 are 100, 200, 500, 600, 600 W, test_flexcap's,
 *    whatever b's unit.
 *  - work with a on 8 GPUs and b on 32 (a 0.008/W, b 0.0064/W; 40 in all):
 *    b 0.0064 S up to 500 W (3.2), then 3.2 + 0.008 (S - 500) up to 600 W
 *    (4.0): quotes at 0.4, 0.8, 2, 4, 8 are 62.5, 125, 312.5, 600, 600 W.
 *  - a minimum share of 95 % under work: a's floor rises to 650 W (T =
 *    95), b's to 450 W: floor_w 1100, and at most 300 W to shed. */
static void test_flexcap_objective(void **state) {
  (void)state;
  struct pfi_tier tiers[] = {{"flex10", 0.10, INFINITY, 0},
                             {"flex25", 0.25, 3600, 0}};
  double p[] = {200, 700}, ta[] = {50, 100}, tb[] = {90000, 100000};
  struct pfi_flex_job jobs[] = {{"a", p, ta, NULL, NULL, 2, &tiers[0], 0},
                                {"b", p, tb, NULL, NULL, 2, &tiers[1], 0}};
  struct pfi_flexcap fc;
  struct pfi_error err;
  assert_int_equal(pfi_flexcap_compute(jobs, 2, 1800, 0, 400, &fc, &err), 0);
  ASSERT_NEAR(fc.quote_w[0], 149.55, 1e-3);
  struct pfi_objective o;
  pfi_objective_init(&o);
  assert_int_equal(
      pfi_flexcap_compute_objective(jobs, 2, 1800, 0, 400, &o, &fc, &err), 0);
  double want[] = {100, 200, 500, 600, 600};
  for (int k = 0; k < 5; k++)
    ASSERT_NEAR(fc.quote_w[k], want[k], 1e-3);
  ASSERT_NEAR(fc.floor_w, 800, 1e-9);
  ASSERT_NEAR(fc.uncapped_w, 1400, 1e-9);
  /* The same with b in its original units: the same quotes. */
  double tb1[] = {90, 100};
  jobs[1].tput = tb1;
  struct pfi_flexcap fc1;
  assert_int_equal(
      pfi_flexcap_compute_objective(jobs, 2, 1800, 0, 400, &o, &fc1, &err), 0);
  for (int k = 0; k < 5; k++)
    ASSERT_NEAR(fc1.quote_w[k], fc.quote_w[k], 1e-9);
  jobs[1].tput = tb;
  /* GPU counts. */
  jobs[0].gpus = 8;
  jobs[1].gpus = 32;
  assert_int_equal(
      pfi_flexcap_compute_objective(jobs, 2, 1800, 0, 400, &o, &fc, &err), 0);
  double want8[] = {62.5, 125, 312.5, 600, 600};
  for (int k = 0; k < 5; k++)
    ASSERT_NEAR(fc.quote_w[k], want8[k], 1e-3);
  /* A minimum share raises the floors. */
  o.min_share = 0.95;
  assert_int_equal(
      pfi_flexcap_compute_objective(jobs, 2, 1800, 0, 400, &o, &fc, &err), 0);
  ASSERT_NEAR(fc.floor_w, 1100, 1e-6);
  assert_true(fc.quote_w[4] <= 300 + 1e-6);
  /* GPU counts for one job only: the work objective cannot weigh them. */
  o.min_share = 0;
  jobs[0].gpus = 0;
  assert_int_equal(
      pfi_flexcap_compute_objective(jobs, 2, 1800, 0, 400, &o, &fc, &err),
      PFI_EINVAL);
  assert_non_null(strstr(err.msg, "job a has no GPU count"));
}

/* A tier file's names must be distinct: the first row (in file order) that
 * repeats an earlier name is refused with its line, wherever the earlier one
 * is; distinct names that sort next to each other pass. 100,000 distinct
 * rows load (the check sorts; it used to compare every pair), and the same
 * rows with one name repeated at the end are refused at that row. */
static void test_tiers_duplicates(void **state) {
  (void)state;
  struct pfi_error err;
  struct pfi_tier *tv = NULL;
  size_t nt = 0;
  /* Lines: 2 a, 3 b, 4 c, 5 ab, 6 b (repeats line 3), 7 a (repeats 2). */
  const char *dup = "tier,max_loss\na,0.1\nb,0.1\nc,0.1\nab,0.1\nb,0.2\n"
                    "a,0.3\n";
  assert_int_equal(
      pfi_tiers_load_mem("d.csv", dup, strlen(dup), &tv, &nt, &err),
      PFI_EPARSE);
  ASSERT_EQ_INT(err.line, 6);
  assert_non_null(strstr(err.msg, "'b' is defined twice"));
  assert_null(tv);
  const char *ok = "tier,max_loss\nb,0.1\na,0.1\nab,0.2\nba,0.3\n";
  assert_int_equal(pfi_tiers_load_mem("o.csv", ok, strlen(ok), &tv, &nt, &err),
                   0);
  assert_int_equal(nt, 4);
  assert_string_equal(tv[0].name, "b");
  assert_string_equal(tv[3].name, "ba");
  free(tv);
  enum { N = 100000 };
  size_t cap = 32 + (size_t)N * 24;
  char *big = malloc(cap);
  assert_non_null(big);
  size_t len = (size_t)snprintf(big, cap, "tier,max_loss\n");
  for (int i = 0; i < N; i++)
    len += (size_t)snprintf(big + len, cap - len, "t%d,0.%d\n", N - i, i % 10);
  assert_int_equal(pfi_tiers_load_mem("big.csv", big, len, &tv, &nt, &err), 0);
  assert_int_equal(nt, N);
  assert_string_equal(tv[0].name, "t100000");
  free(tv);
  tv = NULL;
  len += (size_t)snprintf(big + len, cap - len, "t77,0.5\n");
  assert_int_equal(pfi_tiers_load_mem("big.csv", big, len, &tv, &nt, &err),
                   PFI_EPARSE);
  ASSERT_EQ_INT(err.line, N + 2);
  assert_non_null(strstr(err.msg, "'t77' is defined twice"));
  free(big);
}

/* pfid's GET /v1/nodes as the bridge reads it: n1 with a fresh RAPL
 * reading, n2 with a stale BMC reading below the configured baseline, n3
 * stale (no telemetry for a while: its last GPU power), n4 without node
 * power, n5 with a stale reading above the configured baseline. */
static void fake_nodes(void *arg, const struct pfi_http_req *rq,
                       struct pfi_http_resp *rs) {
  (void)arg;
  (void)rq;
  rs->body = strdup(
      "[{\"node\":\"n1\",\"stale\":false,\"gpus\":[{\"power_w\":2500},"
      "{\"power_w\":1500}],\"node_power\":{\"w\":4600,\"source\":\"rapl\","
      "\"age_s\":0,\"fresh\":true,\"other_w\":600}},"
      "{\"node\":\"n2\",\"stale\":false,\"gpus\":[{\"power_w\":2000}],"
      "\"node_power\":{\"w\":2500,\"source\":\"dcmi\",\"age_s\":45,"
      "\"fresh\":false,\"other_w\":500}},"
      "{\"node\":\"n3\",\"stale\":true,\"gpus\":[{\"power_w\":700}]},"
      "{\"node\":\"n4\",\"stale\":false,\"gpus\":[{\"power_w\":1000}]},"
      "{\"node\":\"n5\",\"stale\":false,\"gpus\":[{\"power_w\":500}],"
      "\"node_power\":{\"w\":2000,\"source\":\"rapl\",\"age_s\":40,"
      "\"fresh\":false,\"other_w\":1500}}]");
  rs->len = strlen(rs->body);
}

/* The bridge's conversion with measured node power: other_w is node -
 * GPU power where the reading is fresh; a reading that is not fresh counts
 * no lower than the configured node_other_w; a stale node still counts
 * (it draws at the meter). By hand, node_other_w 1000: other = 600 (n1) +
 * 1000 (n2: its stale 500 is below the baseline) + 1000 (n3, stale) +
 * 1000 (n4) + 1500 (n5: its stale reading, above the baseline) = 5100 W
 * beside 4000 + 2000 + 700 + 1000 + 500 = 8200 W of GPU power. A 9000 W
 * node-level limit leaves 9000 - 5100 = 3900 W of GPU power; a 16000 W
 * meter limit at PUE 2 (efficiency 1) leaves 16000 / 2 - 5100 = 2900 W.
 * Leaving n3 out and n5 at the baseline would give 5400 and 4400 W: more
 * GPU power than the meter allows. With the baseline everywhere (other_w
 * NULL) they are 9000 - 5000 = 4000 and 3000 W. */
static void test_bridge_measured_other(void **state) {
  (void)state;
  struct pfi_error err;
  struct pfi_http *h;
  assert_int_equal(pfi_http_start(&h, "127.0.0.1:0", fake_nodes, NULL, &err),
                   0);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u", pfi_http_port(h));
  struct pfi_pfid_client *c;
  assert_int_equal(pfi_pfid_client_open(url, NULL, &c, &err), 0);
  struct pfi_meter_config cfg;
  pfi_meter_config_init(&cfg);
  cfg.node_other_w = 1000;
  double g[8], o[8];
  assert_int_equal(pfi_pfid_client_nodes(c, &cfg, g, o, 8, &err), 5);
  ASSERT_NEAR(g[0], 4000, 0);
  ASSERT_NEAR(o[0], 600, 0);
  ASSERT_NEAR(g[1], 2000, 0);
  assert_true(isnan(o[1]));
  ASSERT_NEAR(g[2], 700, 0);
  assert_true(isnan(o[2]));
  ASSERT_NEAR(g[3], 1000, 0);
  assert_true(isnan(o[3]));
  ASSERT_NEAR(g[4], 500, 0);
  ASSERT_NEAR(o[4], 1500, 0);
  /* Without a configuration a reading that is not fresh is not used. */
  double o2[8];
  assert_int_equal(pfi_pfid_client_nodes(c, NULL, g, o2, 8, &err), 5);
  assert_true(isnan(o2[4]));
  pfi_pfid_client_close(c);
  pfi_http_stop(h);
  double lim;
  assert_int_equal(
      pfi_meter_gpu_limit(&cfg, g, o, 5, PFI_LEVEL_NODE, 9000, &lim, &err), 0);
  ASSERT_NEAR(lim, 3900, 1e-6);
  assert_int_equal(
      pfi_meter_gpu_limit(&cfg, g, NULL, 5, PFI_LEVEL_NODE, 9000, &lim, &err),
      0);
  ASSERT_NEAR(lim, 4000, 1e-6);
  cfg.pue = 2;
  assert_int_equal(
      pfi_meter_gpu_limit(&cfg, g, o, 5, PFI_LEVEL_METER, 16000, &lim, &err),
      0);
  ASSERT_NEAR(lim, 2900, 1e-3); /* bisection to 1 mW */
}

/* One HTTP/1.1 request to 127.0.0.1:port over a plain socket (no client
 * library between the test and the server); returns the status code, and
 * the answer's first bytes in `ans`. */
static int raw_http(unsigned port, const char *method, const char *path,
                    const char *auth, const char *body, size_t len, char *ans,
                    size_t an) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  char head[512];
  int hl = snprintf(head, sizeof head,
                    "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close"
                    "\r\nContent-Type: application/json\r\n%s%s%s"
                    "Content-Length: %zu\r\n\r\n",
                    method, path, auth ? "Authorization: " : "",
                    auth ? auth : "", auth ? "\r\n" : "", len);
  assert_int_equal(send(fd, head, (size_t)hl, MSG_NOSIGNAL), hl);
  for (size_t off = 0; off < len;) {
    ssize_t k = send(fd, body + off, len - off, MSG_NOSIGNAL);
    if (k <= 0)
      break; /* the server may answer 413 and close before the end */
    off += (size_t)k;
  }
  size_t got = 0;
  ssize_t k;
  while (got + 1 < an && (k = recv(fd, ans + got, an - 1 - got, 0)) > 0)
    got += (size_t)k;
  ans[got] = 0;
  close(fd);
  int status = 0;
  sscanf(ans, "HTTP/1.1 %d", &status);
  return status;
}

static int readable(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

/* The webhook listener: the bearer token checked (401 without one, 403 for
 * another), bodies bounded (413), malformed ones refused with a problem
 * naming the field (400), accepted ones queued and announced on the fd;
 * nothing refused is queued. */
static void test_oadr_listener(void **state) {
  (void)state;
  struct pfi_error err;
  char tok[PFI_OADR_BEARER_LEN], tok2[PFI_OADR_BEARER_LEN];
  assert_int_equal(pfi_oadr_bearer_new(tok, &err), 0);
  assert_int_equal(pfi_oadr_bearer_new(tok2, &err), 0);
  ASSERT_EQ_INT(strlen(tok), 64);
  ASSERT_EQ_INT(strspn(tok, "0123456789abcdef"), 64);
  assert_string_not_equal(tok, tok2);
  struct pfi_oadr_config cfg;
  pfi_oadr_config_init(&cfg, 0);
  struct pfi_oadr_listener *l;
  assert_int_equal(
      pfi_oadr_listen("127.0.0.1:0", "/notify", "s3cret", &cfg, &l, &err), 0);
  unsigned port = pfi_oadr_listener_port(l);
  assert_true(port > 0);
  int fd = pfi_oadr_listener_fd(l);
  static char ans[8192];
  const char *del = "{\"objectType\":\"EVENT\",\"operation\":\"DELETE\","
                    "\"object\":{\"id\":\"7\",\"programID\":\"1\"}}";
  size_t dl = strlen(del);
  ASSERT_EQ_INT(
      raw_http(port, "POST", "/notify", NULL, del, dl, ans, sizeof ans), 401);
  assert_non_null(strstr(ans, "WWW-Authenticate: Bearer"));
  ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Bearer s3cre", del, dl, ans,
                         sizeof ans),
                403);
  ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Bearer s3cret0", del, dl,
                         ans, sizeof ans),
                403);
  ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Basic s3cret", del, dl, ans,
                         sizeof ans),
                401);
  ASSERT_EQ_INT(
      raw_http(port, "GET", "/notify", "Bearer s3cret", "", 0, ans, sizeof ans),
      405);
  ASSERT_EQ_INT(raw_http(port, "POST", "/other", "Bearer s3cret", del, dl, ans,
                         sizeof ans),
                404);
  const char *bad = "{\"objectType\":\"EVENT\",\"operation\":\"CREATE\","
                    "\"object\":{\"programID\":\"1\"}}";
  ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Bearer s3cret", bad,
                         strlen(bad), ans, sizeof ans),
                400);
  assert_non_null(strstr(ans, "Content-Type: application/problem+json"));
  assert_non_null(strstr(ans, "\"status\":400"));
  assert_non_null(strstr(ans, "\"detail\":\"notification: object.id: "
                              "expected a string\""));
  /* An unknown operation is named in the detail cut to 20 bytes, here in
   * the middle of the 'é' after 19 'a' (C3 A9): the half character, not
   * UTF-8, is a '?', and the answer still a JSON problem. */
  const char *badop =
      "{\"objectType\":\"EVENT\",\"operation\":"
      "\"aaaaaaaaaaaaaaaaaaa\\u00e9\",\"object\":{\"id\":\"7\"}}";
  ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Bearer s3cret", badop,
                         strlen(badop), ans, sizeof ans),
                400);
  assert_non_null(strstr(ans, "\"detail\":\"notification: operation "
                              "'aaaaaaaaaaaaaaaaaaa?' is not CREATE, READ, "
                              "UPDATE or DELETE\""));
  /* 1 MiB + 1 byte: 413, without reaching the decoder. */
  size_t bl = PFI_OADR_NOTIFY_BODY_MAX + 1;
  char *big = malloc(bl);
  assert_non_null(big);
  memset(big, ' ', bl);
  memcpy(big, del, dl);
  ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Bearer s3cret", big, bl, ans,
                         sizeof ans),
                413);
  /* 1 MiB exactly (the notification and trailing blanks) is taken. */
  ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Bearer s3cret", big, bl - 1,
                         ans, sizeof ans),
                200);
  free(big);
  /* The callback check (GET <path>/echo?echo=V): V back, no token needed;
   * a value of other characters, or none, is 400; the check is no
   * notification. */
  ASSERT_EQ_INT(raw_http(port, "GET", "/notify/echo?echo=test_echo", NULL, "",
                         0, ans, sizeof ans),
                200);
  assert_non_null(strstr(ans, "Content-Type: text/plain"));
  assert_non_null(strstr(ans, "\r\n\r\ntest_echo"));
  ASSERT_EQ_INT(raw_http(port, "GET", "/notify/echo?echo=%3Cb%3E", NULL, "", 0,
                         ans, sizeof ans),
                400);
  ASSERT_EQ_INT(
      raw_http(port, "GET", "/notify/echo", NULL, "", 0, ans, sizeof ans), 400);
  ASSERT_EQ_INT(readable(fd), 1);
  /* The accepted one is queued, and so are the two malformed ones that
   * came with the token, before it, as undecoded notes (a reason to poll,
   * no data); nothing refused for its token or path is. */
  struct pfi_oadr_note n[4];
  struct pfi_oadr_listener_stats st;
  ASSERT_EQ_INT(pfi_oadr_listener_take(l, n, 4, &st), 3);
  ASSERT_EQ_INT(n[0].undecoded, 1);
  assert_string_equal(n[0].event_id, "");
  ASSERT_EQ_INT(n[1].undecoded, 1);
  ASSERT_EQ_INT(n[2].undecoded, 0);
  assert_string_equal(n[2].object_type, "EVENT");
  assert_string_equal(n[2].operation, "DELETE");
  assert_string_equal(n[2].event_id, "7");
  ASSERT_EQ_INT(st.accepted, 1);
  ASSERT_EQ_INT(st.unauthorized, 4);
  ASSERT_EQ_INT(st.malformed, 2);
  ASSERT_EQ_INT(st.other, 4);
  ASSERT_EQ_INT(st.echo, 1);
  ASSERT_EQ_INT(readable(fd), 0);
  ASSERT_EQ_INT(pfi_oadr_listener_take(l, n, 4, NULL), 0);
  /* A CREATE of an event with two hour-long intervals from now (the
   * listener's clock; "0001-01-01" is now): 2 spans;
   * then 70 more: all counted, the last 64 kept, the oldest of them given
   * first (notification 7 of the 70, index 6). */
  const char *cr =
      "{\"objectType\":\"EVENT\",\"operation\":\"CREATE\",\"object\":{\"id\":"
      "\"e%d\",\"programID\":\"1\",\"intervalPeriod\":{\"start\":\"0001-01-"
      "01\",\"duration\":\"PT1H\"},\"intervals\":[{\"id\":0,"
      "\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\",\"values\":[5]}]},"
      "{\"id\":1,\"payloads\":[{\"type\":\"IMPORT_CAPACITY_LIMIT\","
      "\"values\":[6]}]}]}}";
  char body[1024];
  for (int i = 0; i < 71; i++) {
    int k = snprintf(body, sizeof body, cr, i);
    ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Bearer s3cret", body,
                           (size_t)k, ans, sizeof ans),
                  200);
  }
  ASSERT_EQ_INT(pfi_oadr_listener_take(l, n, 4, &st), 71);
  assert_string_equal(n[0].event_id, "e7");
  assert_string_equal(n[0].operation, "CREATE");
  ASSERT_EQ_INT(n[0].spans, 2);
  assert_string_equal(n[1].event_id, "e8");
  ASSERT_EQ_INT(st.accepted, 72);
  /* The reference VTN's shape: a JSON string holding the notification,
   * snake_case keys: decoded as the camelCase one. */
  const char *ref =
      "\"{\\\"object_type\\\": \\\"EVENT\\\", \\\"operation\\\": "
      "\\\"UPDATE\\\", \\\"object\\\": {\\\"id\\\": \\\"r1\\\", "
      "\\\"program_id\\\": \\\"1\\\", \\\"interval_period\\\": "
      "{\\\"start\\\": \\\"0001-01-01\\\", \\\"duration\\\": \\\"PT1H\\\"}, "
      "\\\"intervals\\\": [{\\\"id\\\": 0, \\\"payloads\\\": [{\\\"type\\\": "
      "\\\"IMPORT_CAPACITY_LIMIT\\\", \\\"values\\\": [5]}]}]}}\"";
  ASSERT_EQ_INT(raw_http(port, "POST", "/notify", "Bearer s3cret", ref,
                         strlen(ref), ans, sizeof ans),
                200);
  ASSERT_EQ_INT(pfi_oadr_listener_take(l, n, 4, &st), 1);
  assert_string_equal(n[0].object_type, "EVENT");
  assert_string_equal(n[0].operation, "UPDATE");
  assert_string_equal(n[0].event_id, "r1");
  ASSERT_EQ_INT(n[0].spans, 1);
  pfi_oadr_listener_close(l);
  /* A bad address is PFI_EINVAL; no token, no listener. */
  assert_int_equal(
      pfi_oadr_listen("127.0.0.1:x", "/notify", "s3cret", &cfg, &l, &err),
      PFI_EINVAL);
  assert_int_equal(
      pfi_oadr_listen("127.0.0.1:0", "/notify", "", &cfg, &l, &err),
      PFI_EINVAL);
}

static void test_bridge(void **state) {
  (void)state;
  struct pfi_timeline in, gpu, res;
  pfi_timeline_init(&in);
  pfi_timeline_init(&gpu);
  pfi_timeline_init(&res);
  struct pfi_error err;
  /* Two back-to-back meter-level spans and one GPU-level span later. The
   * fleet: 2 nodes drawing 4000 and 2000 W of GPU power, node_other_w 1000,
   * PUE 2, efficiency 1: meter = 2 (gpu + 2000). A 14000 W meter limit
   * leaves 5000 W of GPU power; 3000 W at the meter is below the 4000 W
   * drawn with no GPU power: infeasible, 1 mW. */
  struct pfi_target_span s[] = {
      span(100, 200, 14000, PFI_SRC_OPENADR, 0, 0, "ev-a"),
      span(200, 300, 3000, PFI_SRC_OPENADR, 0, 0, "ev-b"),
      span(400, 500, 4500, PFI_SRC_SCHEDULE, 0, 0, "sched")};
  s[0].level = s[1].level = PFI_LEVEL_METER;
  s[0].created_s = 40; /* ev-a known at t = 40: 60 s of notice */
  for (int i = 0; i < 3; i++)
    pfi_timeline_add(&in, &s[i], &err);
  struct pfi_meter_config cfg;
  pfi_meter_config_init(&cfg);
  cfg.node_other_w = 1000;
  cfg.pue = 2;
  double g[] = {4000, 2000};
  size_t inf;
  assert_int_equal(pfi_bridge_to_gpu(&in, &cfg, g, NULL, 2, &gpu, &inf, &err),
                   0);
  assert_int_equal(inf, 1);
  ASSERT_NEAR(gpu.spans[0].limit_w, 5000, 0.01);
  ASSERT_NEAR(gpu.spans[1].limit_w, 1e-3, 0);
  ASSERT_NEAR(gpu.spans[2].limit_w, 4500, 0);
  assert_int_equal(pfi_timeline_resolve(&gpu, &res, &err), 3);
  /* At now = 150: all three ahead; the first ends 2 s into the second. */
  struct pfi_bridge_event ev[8];
  assert_int_equal(pfi_bridge_plan(&res, 150, 2, ev, 8, &err), 3);
  ASSERT_NEAR(ev[0].end_s, 202, 0);
  ASSERT_NEAR(ev[1].end_s, 300, 0);
  ASSERT_NEAR(ev[0].known_s, 40, 0); /* carried to pfid as "known" */
  ASSERT_NEAR(ev[1].known_s, 0, 0);  /* unknown: pfid's submission */
  assert_true(strncmp(ev[0].id, "oadr-100-", 9) == 0);
  assert_int_equal(strlen(ev[0].id), 17);
  /* pfid has: ev[0] as planned, ev[1] with another target, an old span the
   * VTN withdrew (live), one over already, an operator's event. Post ev[1]
   * and ev[2]; cancel only the withdrawn one. */
  struct pfi_bridge_event have[5];
  have[0] = ev[0];
  have[1] = ev[1];
  have[1].target_w = 99;
  memset(&have[2], 0, sizeof have[2]);
  snprintf(have[2].id, sizeof have[2].id, "oadr-50-deadbeef");
  have[2].end_s = 1000;
  have[3] = have[2];
  snprintf(have[3].id, sizeof have[3].id, "oadr-10-00000000");
  have[3].end_s = 120;
  have[4] = have[2];
  snprintf(have[4].id, sizeof have[4].id, "manual-1");
  struct pfi_bridge_diff d;
  pfi_bridge_diff(ev, 3, have, 5, 150, &d);
  assert_int_equal(d.npost, 2);
  assert_int_equal(d.post[0], 1);
  assert_int_equal(d.post[1], 2);
  assert_int_equal(d.ncancel, 1);
  assert_int_equal(d.cancel[0], 2);
  /* Planned at the meter (a pfid that keeps meter targets): the events
   * carry the level; one pfid has alike but at the GPU level is posted
   * again. */
  struct pfi_timeline met;
  pfi_timeline_init(&met);
  s[0].level = PFI_LEVEL_METER;
  assert_int_equal(pfi_timeline_add(&met, &s[0], &err), 0);
  assert_int_equal(pfi_bridge_plan(&met, 150, 2, ev, 8, &err), 1);
  assert_int_equal(ev[0].level, PFI_LEVEL_METER);
  ASSERT_NEAR(ev[0].target_w, s[0].limit_w, 0);
  have[0] = ev[0];
  pfi_bridge_diff(ev, 1, have, 1, 150, &d);
  assert_int_equal(d.npost, 0);
  have[0].level = PFI_LEVEL_GPU;
  pfi_bridge_diff(ev, 1, have, 1, 150, &d);
  assert_int_equal(d.npost, 1);
  pfi_timeline_release(&met);
  pfi_timeline_release(&in);
  pfi_timeline_release(&gpu);
  pfi_timeline_release(&res);
}

/* Live capacity from operating points (pfi_flex_live), by hand: with PFI 1
 * the model curves are straight lines (T = T_max P / P_max). Job A: 1000 W,
 * 100 tokens/s (0.1 per W), Flex 10: floor 900 W. Job B: 1000 W, 300
 * tokens/s (0.3 per W), no tier: floor its lowest caps, 400 W. At a total
 * loss q of 400 tokens/s the cheapest watts go first: A's, up to its 100 W
 * (10 tokens/s), then B's at 0.3 per W: q = 1 %: 40 W; 2 %: 80; 5 %: 100 +
 * 10 / 0.3 = 133.33; 10 %: 100 + 30 / 0.3 = 200; 20 %: 100 + 70 / 0.3 =
 * 333.33. A job without a throughput is left out and counted. */
static void test_flex_live(void **state) {
  (void)state;
  struct pfi_flex_live_job j[3] = {
      {"A", 1000, 100, 400, 1.0, 1.0, 0.10, NAN, 0, NULL, NULL},
      {"B", 1000, 300, 400, 1.0, 1.0, -1, NAN, 0, NULL, NULL},
      {"C", 500, -1, 200, NAN, NAN, 0.25, NAN, 0, NULL, NULL},
  };
  struct pfi_flexcap fc;
  struct pfi_error err;
  size_t skipped = 9;
  assert_int_equal(pfi_flex_live(j, 3, 200, &fc, &skipped, &err), 0);
  assert_int_equal(skipped, 1);
  assert_int_equal(fc.eligible, 2);
  ASSERT_NEAR(fc.uncapped_w, 2000, 1e-9);
  ASSERT_NEAR(fc.floor_w, 1300, 1e-6);
  const double want[PFI_CAPACITY_NQUOTE] = {40, 80, 100 + 10 / 0.3,
                                            100 + 30 / 0.3, 100 + 70 / 0.3};
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    ASSERT_NEAR(fc.quote_w[k], want[k], 0.01 * want[k]);
    ASSERT_NEAR(fc.quote_lo_w[k], fc.quote_w[k], 1e-9);
    ASSERT_NEAR(fc.quote_hi_w[k], fc.quote_w[k], 1e-9);
  }
  /* Without estimates: the prior 1.5 and its low end 1.0. The low end is
   * the straight line above; the central curve keeps more throughput per
   * watt cut, so it quotes at least as much. */
  j[0].pfi = j[0].pfi_lo = j[1].pfi = j[1].pfi_lo = NAN;
  assert_int_equal(pfi_flex_live(j, 3, 200, &fc, NULL, &err), 0);
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    ASSERT_NEAR(fc.quote_lo_w[k], want[k], 0.01 * want[k]);
    assert_true(fc.quote_w[k] >= fc.quote_lo_w[k] - 1e-9);
    assert_true(fc.quote_hi_w[k] >= fc.quote_w[k] - 1e-9);
  }
  /* A job drawing under its lowest caps (idle GPUs) has nothing to shed. */
  struct pfi_flex_live_job idle = {"I",  140, 1000, 400,  NAN, NAN,
                                   0.25, NAN, 0,    NULL, NULL};
  assert_int_equal(pfi_flex_live(&idle, 1, 200, &fc, NULL, &err), 0);
  ASSERT_NEAR(fc.floor_w, 140, 1e-6);
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++)
    assert_true(fc.quote_w[k] < 1e-6 && isfinite(fc.quote_w[k]));
  assert_int_equal(pfi_flex_live(&j[2], 1, 200, &fc, NULL, &err), PFI_EINVAL);
}

/* A believed curve: a straight line of `per_w` tokens/s per W. */
static double line_belief(const void *arg, double p) {
  return *(const double *)arg * p;
}

/* The live capacity on a belief (the control module's), tiers' longest
 * events and an estimate's interval. The jobs of test_flex_live, their
 * curves now given as beliefs (straight lines of 0.1 and 0.3 tokens/s per
 * W) over a prior of PFI 1.5 that must not be used: the same quotes by
 * hand. A's tier allows events up to 3600 s: the quotes hold for 3600 s.
 * For a longer event A is held at 1000 W and only B is cut: a loss of q x
 * 400 tokens/s costs q x 400 / 0.3 W: 13.33, 26.67, 66.67, 133.33, 266.67
 * W, for any length (no other bound). */
static void test_flex_live_belief(void **state) {
  (void)state;
  double ka = 0.1, kb = 0.3;
  struct pfi_flex_live_job j[2] = {
      {"A", 1000, 100, 400, 1.5, NAN, 0.10, NAN, 3600, line_belief, &ka},
      {"B", 1000, 300, 400, 1.5, NAN, -1, NAN, 0, line_belief, &kb},
  };
  struct pfi_flexcap fc;
  struct pfi_error err;
  assert_int_equal(pfi_flex_live(j, 2, 200, &fc, NULL, &err), 0);
  const double want[PFI_CAPACITY_NQUOTE] = {40, 80, 100 + 10 / 0.3,
                                            100 + 30 / 0.3, 100 + 70 / 0.3};
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    ASSERT_NEAR(fc.quote_w[k], want[k], 0.01 * want[k]);
    /* The low end (PFI 1.0 without an estimate) is the same line here;
     * no estimate's high end: the central curve. */
    ASSERT_NEAR(fc.quote_lo_w[k], want[k], 0.01 * want[k]);
    ASSERT_NEAR(fc.quote_hi_w[k], fc.quote_w[k], 1e-9);
  }
  ASSERT_NEAR(fc.duration_s, 3600, 0);
  assert_int_equal(fc.eligible, 2);
  assert_int_equal(pfi_flex_live_event(j, 2, 3601, 200, &fc, NULL, &err), 0);
  assert_int_equal(fc.eligible, 1);
  assert_true(isinf(fc.duration_s));
  ASSERT_NEAR(fc.floor_w, 1400, 1e-6);
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    double w = pfi_capacity_quotes[k] * 400 / 0.3;
    ASSERT_NEAR(fc.quote_w[k], w, 0.01 * w);
  }
  /* An estimate's interval: job B alone, central PFI 1 (the line), high
   * end PFI 2. For one job the quote at loss q is P_max minus the least
   * power where its curve is at (1 - q) T_max. By hand on the high curve,
   * sampled as the library samples it (9 powers on [400, 1000], linear
   * between): T(P) = 300 (1 - (1 - P/1000)^g). */
  struct pfi_flex_live_job b = {"B", 1000, 300, 400,  1.0, 1.0,
                                -1,  2.0,  0,   NULL, NULL};
  assert_int_equal(pfi_flex_live(&b, 1, 400, &fc, NULL, &err), 0);
  double g = pfi_curve_model_exponent(2.0, 400, 1000);
  double px[9], ty[9];
  for (int i = 0; i < 9; i++) {
    px[i] = 400 + 600 * i / 8.0;
    ty[i] = 300 * (1 - pow(1 - px[i] / 1000, g));
  }
  ty[8] = 300;
  for (int k = 0; k < PFI_CAPACITY_NQUOTE; k++) {
    double thr = (1 - pfi_capacity_quotes[k]) * 300, p = 400;
    for (int i = 8; i > 0; i--)
      if (ty[i - 1] < thr) {
        p = px[i - 1] +
            (thr - ty[i - 1]) * (px[i] - px[i - 1]) / (ty[i] - ty[i - 1]);
        break;
      }
    double want_hi = 1000 - p;
    double want_mid = pfi_capacity_quotes[k] * 1000; /* the line */
    ASSERT_NEAR(fc.quote_hi_w[k], want_hi, 0.01 * want_hi);
    ASSERT_NEAR(fc.quote_w[k], want_mid, 0.01 * want_mid);
    ASSERT_NEAR(fc.quote_lo_w[k], want_mid, 0.01 * want_mid);
    assert_true(fc.quote_hi_w[k] > fc.quote_w[k]);
  }
  /* A belief that is not a number is an error naming the job. */
  double bad = NAN;
  b.believe = line_belief;
  b.believe_arg = &bad;
  assert_int_equal(pfi_flex_live(&b, 1, 200, &fc, NULL, &err), PFI_EINVAL);
  assert_non_null(strstr(err.msg, "job B"));
  assert_int_equal(pfi_flex_live_event(&b, 1, -1, 200, &fc, NULL, &err),
                   PFI_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rfc3339),
      cmocka_unit_test(test_duration),
      cmocka_unit_test(test_resolve),
      cmocka_unit_test(test_schedule),
      cmocka_unit_test(test_oadr_types),
      cmocka_unit_test(test_oadr_timing),
      cmocka_unit_test(test_oadr_bad),
      cmocka_unit_test(test_oadr_other_program),
      cmocka_unit_test(test_ven_other_program),
      cmocka_unit_test(test_notification),
      cmocka_unit_test(test_notification_reference),
      cmocka_unit_test(test_report_json),
      cmocka_unit_test(test_meter),
      cmocka_unit_test(test_meter_power_at),
      cmocka_unit_test(test_rapl),
      cmocka_unit_test(test_dcmi),
      cmocka_unit_test(test_compliance),
      cmocka_unit_test(test_compliance_held),
      cmocka_unit_test(test_flexcap),
      cmocka_unit_test(test_flexcap_objective),
      cmocka_unit_test(test_bridge),
      cmocka_unit_test(test_bridge_measured_other),
      cmocka_unit_test(test_oadr_listener),
      cmocka_unit_test(test_flex_live),
      cmocka_unit_test(test_tiers_duplicates),
      cmocka_unit_test(test_flex_live_belief),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
