#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The shipped alert rules and dashboard (contrib/prometheus/pfi-rules.yml,
# contrib/grafana/pfi.json): promtool accepts the rules and their unit
# tests (tests/fleet/pfi-rules.test.yml); every metric name the rules and
# the dashboard use is one pfid or an agent exports (read from their
# /metrics in this fleet, or, for a series only shown in some states, a
# literal in src/fleet/metrics.c or api.c); Prometheus on loopback loads
# the rules, evaluates them on the fleet's own metrics (health ok, none
# firing while the fleet is well) and, the agent killed, takes
# PfiAgentDown and PfiNodeStale to pending.
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || { echo "SKIP: no prometheus"; exit 77; }
command -v promtool >/dev/null || { echo "SKIP: no promtool"; exit 77; }
RULES="$PWD/contrib/prometheus/pfi-rules.yml"
DASH="$PWD/contrib/grafana/pfi.json"
promtool check rules "$RULES" >"$T/check" 2>&1 || fail "promtool check rules: $(cat "$T/check")"
promtool test rules tests/fleet/pfi-rules.test.yml >"$T/test" 2>&1 || fail "promtool test rules: $(cat "$T/test")"

setup_nats n1
M1=$(free_port) PP=$(free_port)
agent_start n1 2 --metrics "127.0.0.1:$M1"
pfid_start a
live1() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live1 || fail "one live node"
# An event, so that the assigned limits are shown too.
api a POST /v1/events "$(event_json ev1 0 120 1000)" >/dev/null
assigned() { curl -s -m 5 "http://127.0.0.1:$M1/metrics" | grep -q '^pfi_gpu_power_limit_requested_watts'; }
until_true 30 assigned || fail "no assigned limits in the agent's /metrics"
curl -s -m 5 "http://127.0.0.1:$M1/metrics" >"$T/m.agent"
curl -s -m 5 "http://127.0.0.1:${API[a]}/metrics" >"$T/m.pfid"
python3 - "$RULES" "$DASH" "$T/m.agent" "$T/m.pfid" src/fleet/metrics.c src/fleet/api.c >"$T/names" 2>&1 <<'PY' ||
import json, re, sys
rules, dash, agent, pfid, *srcs = sys.argv[1:]
exprs = [open(rules).read()]
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("expr", "definition") and isinstance(v, str):
                exprs.append(v)
            else:
                walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(json.load(open(dash)))
used = set(re.findall(r"\bpfi_[a-z0-9_]+", "\n".join(exprs)))
# The rules file whole: its annotations and comments name metrics too.
live = set()
for f in (agent, pfid):
    for line in open(f):
        if line and line[0] != "#":
            live.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
src = "".join(open(f).read() for f in srcs)
bad = 0
for n in sorted(used):
    if n in live:
        print("live   ", n)
    elif re.search(r'"' + n + r'[ {\\"]', src):
        print("source ", n)
    else:
        print("MISSING", n)
        bad += 1
print(len(used), "names,", bad, "missing")
sys.exit(1 if bad or len(used) < 20 else 0)
PY
  fail "metric names: $(grep -v '^live\|^source' "$T/names")"

cat >"$T/prometheus.yml" <<EOC
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: ["$RULES"]
scrape_configs:
  - job_name: pfi-agent
    static_configs: [ { targets: ["127.0.0.1:$M1"] } ]
  - job_name: pfid
    static_configs: [ { targets: ["127.0.0.1:${API[a]}"] } ]
EOC
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
  --web.listen-address="127.0.0.1:$PP" >"$T/prometheus.log" 2>&1 &
PIDS+=("$!")
# rules: "name health state" per alerting rule, sorted.
rules() {
  curl -s -m 5 "http://127.0.0.1:$PP/api/v1/rules" | python3 -c 'import json,sys
try: g = json.load(sys.stdin)["data"]["groups"]
except Exception: g = []
for r in sorted((r for x in g for r in x["rules"]), key=lambda r: r["name"]):
    print(r["name"], r.get("health"), r.get("state"))'
}
want_well="PfiAgentDown ok inactive
PfiCapsNotRestored ok inactive
PfiNoLeader ok inactive
PfiNodeStale ok inactive
PfiRecordsFailing ok inactive
PfiRecoveryOverWindow ok inactive
PfiTargetMissed ok inactive"
well() { [ "$(rules)" = "$want_well" ]; }
# Scraped at least twice, so that every rule has seen the fleet.
scraped() {
  curl -s -m 5 --get "http://127.0.0.1:$PP/api/v1/query" --data-urlencode 'query=count_over_time(pfi_pfid_leader[1m]) >= 3 and on() count_over_time(up{job="pfi-agent"}[1m]) >= 3' |
    grep -q '"value"'
}
until_true 60 scraped || fail "Prometheus did not scrape the fleet"
until_true 30 well || fail "rules on a well fleet: $(rules)"
kill "${AGENT_PID[n1]}"
pending() {
  rules >"$T/rules"
  grep -q '^PfiAgentDown ok pending$' "$T/rules" && grep -q '^PfiNodeStale ok pending$' "$T/rules"
}
until_true 60 pending || fail "agent killed: $(cat "$T/rules")"
[ "$fails" = 0 ] || { cat "$T/names"; tail -n 20 "$T/prometheus.log" >&2; exit 1; }
echo "fleet watch: ok"
