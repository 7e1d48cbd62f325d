#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfid's records on a full file system (docs/fleet.md, `pfid --records`): the
# records file on a small tmpfs that the test fills; an event then cuts two
# agents. The rows that cannot be written show in /v1/status (records.ok
# false, pending > 0, the error), /metrics (pfi_pfid_records_ok 0,
# pending, failed) and on stderr; the caps are applied all the same. Once
# the space is back every held row is written: the event's log row and
# each node's cut, as /v1/records and the file show. Needs root (mount);
# skipped (77) otherwise.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/rec"
mount -t tmpfs -o size=4m tmpfs "$T/rec" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'kill "${PFID_PID[a]}" 2>/dev/null; wait "${PFID_PID[a]}" 2>/dev/null; umount "$T/rec" 2>/dev/null; cleanup' EXIT
setup_nats n1 n2
agent_start n1 2
agent_start n2 2
pfid_start a --records "$T/rec/records.db"
live2() { api a GET /v1/status | grep -q '"nodes":2,"stale_nodes":0'; }
until_true 30 live2 || { fail "two live nodes"; exit 1; }
# recs FIELD: the status's records.FIELD.
recs() { api a GET /v1/status | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["records"].get(sys.argv[1])))' "$1"; }
[ "$(recs ok)" = true ] || fail "records not ok before the disk is full: $(recs ok)"
metric() { curl -s -m 5 "http://127.0.0.1:${API[a]}/metrics" | awk -v m="$1" '$1 == m { print $2; exit }'; }

# The file system full: nothing more can be written.
dd if=/dev/zero of="$T/rec/fill" bs=4k >/dev/null 2>&1
api a POST /v1/events "$(event_json ev1 0 300 1600)" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
until_true 20 caps_are n1 200,200 || fail "n1 caps $(caps n1), expected 200,200"
until_true 20 caps_are n2 200,200 || fail "n2 caps $(caps n2), expected 200,200"
failing() { [ "$(recs ok)" = false ] && [ "$(recs pending)" -ge 3 ]; }
until_true 20 failing || fail "status does not show the records failing: $(api a GET /v1/status)"
recs error | grep -qi "full\|space" || fail "records.error: $(recs error)"
[ "$(metric pfi_pfid_records_ok)" = 0 ] || fail "pfi_pfid_records_ok $(metric pfi_pfid_records_ok)"
[ "$(metric pfi_pfid_records_pending)" -ge 3 ] || fail "pfi_pfid_records_pending $(metric pfi_pfid_records_pending)"
[ "$(metric pfi_pfid_records_failed_total)" -ge 1 ] || fail "pfi_pfid_records_failed_total $(metric pfi_pfid_records_failed_total)"
grep -q "records: cannot write" "$T/pfid.a.log" || fail "no line on stderr"
# Not yet in the file.
n=$(sql "$T/rec/records.db" "SELECT count(*) FROM fleet_assignments WHERE event='ev1'")
[ "$n" = 0 ] || fail "$n rows of ev1 written while the disk is full"

# Space again: every held row is written.
rm -f "$T/rec/fill"
written() { [ "$(recs ok)" = true ] && [ "$(recs pending)" = 0 ]; }
until_true 20 written || fail "the held rows not written: $(api a GET /v1/status)"
for n in n1 n2; do
  c=$(sql "$T/rec/records.db" "SELECT count(*) FROM fleet_assignments WHERE event='ev1' AND node='$n' AND kind='cut' AND caps_mw='200000,200000'")
  [ "$c" -ge 1 ] || fail "$n's cut not in the records after the space came back"
done
c=$(sql "$T/rec/records.db" "SELECT count(*) FROM fleet_log WHERE what='event' AND detail LIKE 'ev1:%'")
[ "$c" = 1 ] || fail "the event's log row: $c"
api a GET /v1/records | grep -q '"ev1"' || fail "/v1/records without ev1's rows"
[ "$(metric pfi_pfid_records_ok)" = 1 ] || fail "pfi_pfid_records_ok after: $(metric pfi_pfid_records_ok)"
[ "$(recs dropped)" = 0 ] || fail "rows dropped: $(recs dropped)"
[ "$fails" = 0 ] || { tail -n 20 "$T"/pfid.*.log >&2; exit 1; }
echo "fleet records on a full disk: ok"
