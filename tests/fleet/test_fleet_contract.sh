#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The tier contract kept live by pfid's controller (docs/fleet.md
# "Tiers", docs/control.md "Contract"). Three emulated agents, a job on
# each node's two GPUs as the Slurm prolog maps them: slurm-5 with a tier
# set through the API whose longest event is 15 s, slurm-6 in flex25,
# whose row in pfid's tier file (--tiers) needs ten minutes' notice,
# slurm-7 untiered with a deadline in its tier file (the agent's). An event through the API
# starting now (notice: its submission, about 0 s): slurm-6 is never cut,
# slurm-5 is cut and then released 15 s after the event's start (its caps
# back at the pre-event 700 W while the event goes on, decisions recorded
# with the reason "contract"), slurm-7 takes the cut. Bad terms are 400
# naming the field; GET /v1/tiers and /v1/events show the terms.
. "$(dirname "$0")/lib.sh"

setup_nats n1 n2 n3
# Each node's GPUs run a 2-GPU training workload (lib.sh load_agent_start),
# the agent reading the job's tier from the tier file in $T/tiers.NODE.
i=5
for n in n1 n2 n3; do
  mkdir -p "$T/tiers.$n"
  load_agent_start $n slurm-$i --tier-dir "$T/tiers.$n"
  i=$((i + 1))
done
# slurm-7's deadline: 1,500 tokens/s (it reports 2,000 whatever its caps).
echo "1,,,1500" >"$T/tiers.n3/slurm-7"
printf 'tier,max_loss,max_event_s,notice_s\nflex25,0.25,,600\n' >"$T/tiers.csv"
pfid_start a --tiers "$T/tiers.csv"
live3() { api a GET /v1/status | grep -q '"nodes":3,"stale_nodes":0'; }
until_true 30 live3 || { fail "three live nodes"; exit 1; }

# Bad terms: 400 naming the field, nothing set.
bad() { # bad BODY WORD
  local b
  b=$(api a PUT /v1/tiers/slurm-5 "$1")
  [ "$(cat "$T/code")" = 400 ] || fail "PUT $1: HTTP $(cat "$T/code"), expected 400"
  case "$b" in *"$2"*) ;; *) fail "PUT $1: '$b' does not name $2" ;; esac
}
bad '{"max_loss":0.5,"max_event_s":-1}' '\"max_event_s\"'
bad '{"max_loss":0.5,"notice_s":"10m"}' '\"notice_s\"'
bad '{"max_loss":0.5,"deadline_tput":-3}' '\"deadline_tput\"'
bad '{"max_event_s":15}' 'one of'

api a PUT /v1/tiers/slurm-5 '{"max_loss":0.5,"max_event_s":15}' >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "PUT slurm-5: HTTP $(cat "$T/code")"
api a PUT /v1/tiers/slurm-6 '{"tier":"flex25"}' >/dev/null
[ "$(cat "$T/code")" = 200 ] || fail "PUT slurm-6: HTTP $(cat "$T/code")"
# terms JOB: "max_event_s notice_s source deadline_tput" in GET /v1/tiers.
terms() {
  api a GET /v1/tiers | python3 -c '
import json, sys
j = [x for x in json.load(sys.stdin)["jobs"] if x["job"] == sys.argv[1]]
print("absent" if not j else "%s %s %s %s" % (j[0]["max_event_s"], j[0]["notice_s"], j[0]["terms_source"], j[0]["deadline_tput"]))' "$1"
}
seen() { [ "$(terms slurm-5)" = "15.0 None api None" ] && [ "$(terms slurm-6)" = "None 600.0 file None" ] &&
         [ "$(terms slurm-7)" = "None None none 1500.0" ]; }
until_true 20 seen || fail "terms: slurm-5 '$(terms slurm-5)', slurm-6 '$(terms slurm-6)', slurm-7 '$(terms slurm-7)'"
# The module learns each job's uncapped draw before the event.
M="http://127.0.0.1:${API[a]}/metrics"
known() { for j in 5 6 7; do curl -s -m 5 "$M" | grep -q "^pfi_job_learned_points{job=\"slurm-$j\"} " || return 1; done; }
until_true 30 known || fail "pfid does not know the jobs"
sleep 3 # (not a check) a few uncapped periods learned

# The event: 60 % of what the six GPUs draw now.
draw=$(api a GET /v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["power_w"])')
target=$(awk -v p="$draw" 'BEGIN { printf "%.0f", 0.6 * p }')
api a POST /v1/events "$(event_json ev1 0 90 "$target")" >/dev/null
[ "$(cat "$T/code")" = 201 ] || fail "POST event: HTTP $(cat "$T/code")"
# Its notice: the submission, at its start: (about) none.
notice() {
  api a GET /v1/events | python3 -c '
import json, sys
e = json.load(sys.stdin)
assert e and e[0]["known"] > 0 and 0 <= e[0]["notice_s"] < 5, e' 2>/dev/null
}
until_true 10 notice || fail "event notice: $(api a GET /v1/events)"
# slurm-5 and slurm-7 are cut.
cut() { [ "$(caps "$1" | awk -F, '{print ($1 < 650 && $2 < 650)}')" = 1 ]; }
until_true 20 cut n1 || fail "slurm-5 not cut: $(caps n1) target $target draw $draw $(api a GET /v1/status) $(sql "$T/records.db" "SELECT t_s, job, reason, cap_req_w, shortfall_w FROM fleet_decisions LIMIT 20") $(tail -5 "$T/pfid.a.log")"
until_true 20 cut n3 || fail "slurm-7 not cut: $(caps n3)"
# held JOB: pfid's word on the job in GET /v1/jobs (what the bridge logs
# for the compliance report: docs/grid.md).
held() {
  api a GET /v1/jobs | python3 -c '
import json, sys
print([x["held"] for x in json.load(sys.stdin) if x["job"] == sys.argv[1]][0])' "$1"
}
until_true 10 eval '[ "$(held slurm-7)" = True ]' || fail "slurm-7 not held: $(api a GET /v1/jobs)"
[ "$(held slurm-6)" = False ] || fail "slurm-6 held: $(api a GET /v1/jobs)"
# Released: its caps back at 700 W while the event lasts, no longer held.
until_true 40 caps_are n1 "700,700" || fail "slurm-5 not released: $(caps n1) $(api a GET /v1/status) $(api a GET /v1/jobs) $(sql "$T/records.db" "SELECT epoch, seq, t_s, job, reason, cap_req_w, cap_enf_w, draw_w, shortfall_w FROM fleet_decisions ORDER BY epoch, seq" | tail -40) $(tail -20 "$T/pfid.a.log")"
[ "$(held slurm-5)" = False ] || fail "slurm-5 held after its release: $(api a GET /v1/jobs)"
ev_on=$(api a GET /v1/status | python3 -c 'import json,sys; print(json.load(sys.stdin)["event"])')
[ "$ev_on" = ev1 ] || fail "the event ended before the release ('$ev_on')"
q() { sql "$T/records.db" "$1"; }
# The decisions in the order they were made (epoch, seq; a row's t_s is
# the decision's time): slurm-5's contract ones from
# 15 s after the event's start (the first no earlier), its caps rising from
# the first of them, never lower after; slurm-6's never below 700 W, its
# exemption recorded.
start=$(api a GET /v1/events | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["start"])')
q "SELECT job, reason, cap_req_w, t_s FROM fleet_decisions WHERE event = 'ev1' ORDER BY epoch, seq" >"$T/dec"
python3 - "$T/dec" "$start" <<'PY' || fail "decisions: $(cat "$T/dec" | head -40)"
import sys
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.strip()]
start = float(sys.argv[2])
s5 = [(r, float(c), float(t)) for j, r, c, t in rows if j == "slurm-5"]
i = next(k for k, x in enumerate(s5) if x[0] == "contract")
assert s5[i][2] >= start + 15 - 1, ("released early", s5[i], start)
assert min(c for _, c, _ in s5[:i]) < 650, ("never cut before", s5[:i])
after = [c for _, c, _ in s5[i:]]
assert all(b >= a - 1e-6 for a, b in zip(after, after[1:])), ("cut after release", after)
assert all(r in ("contract", "recovery") for r, _, _ in s5[i:]), s5[i:]
s6 = [(r, float(c)) for j, r, c, t in rows if j == "slurm-6"]
assert s6 and all(c >= 700 - 1e-6 for _, c in s6), s6
assert any(r == "contract" for r, _ in s6), s6
s7 = [float(c) for j, r, c, t in rows if j == "slurm-7"]
assert s7 and min(s7) < 650, s7
PY
[ "$(caps n2)" = "700,700" ] || fail "slurm-6 caps $(caps n2)"
api a DELETE /v1/events/ev1 >/dev/null
[ "$fails" = 0 ] || exit 1
echo "contract: ok"
