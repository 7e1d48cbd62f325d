#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The shipped systemd units (contrib/systemd/) start the daemons: each
# passes `systemd-analyze verify` with no complaint (the binaries' paths
# set to the built ones), and their ExecStart= lines run as systemd would
# run them, here by hand: each LoadCredential=NAME:/etc/pfi/FILE copied
# into a credentials directory (0500, files 0400) named by
# $CREDENTIALS_DIRECTORY, /etc/pfi, /var/lib/pfi and the $*_ARGS of
# /etc/default/* pointed at the test's own. pfid then takes the token of
# its credential, and the agent's telemetry reaches it. The Kubernetes
# manifest is checked by its structure (no cluster here).
. "$(dirname "$0")/lib.sh"
U=contrib/systemd
if command -v systemd-analyze >/dev/null; then
  for f in pfid pfi-agent; do
    sed -e "s|/usr/local/sbin/pfid|$PFID|; s|/usr/local/sbin/pfi-agent|$PFI_AGENT|" \
      "$U/$f.service" >"$T/$f.service"
    systemd-analyze verify "$T/$f.service" >"$T/verify.$f" 2>&1 ||
      fail "systemd-analyze verify $f.service: $(cat "$T/verify.$f")"
    grep "$T/$f.service" "$T/verify.$f" && fail "systemd-analyze verify $f.service complains"
  done
else
  echo "no systemd-analyze: the units' syntax is not checked"
fi

setup_nats n1
mkdir -p "$T/etc" "$T/state"
cp "$T/pw.pfid" "$T/etc/pfid.pw"
cp "$T/pw.n1" "$T/etc/agent.pw"
secret "$T/etc/api.token"
cp "$T/etc/api.token" "$T/token" # the api helper's token

# run UNIT ARGS_VAR ARGS: ExecStart of contrib/systemd/UNIT.service with
# its credentials, in the background; PID in RUN_PID.
run() {
  local unit=$1 var=$2 args=$3 c name src
  local cd="$T/creds.$unit"
  mkdir "$cd"
  while IFS= read -r c; do
    name=${c%%:*} src=${c#*:}
    cp "$T/etc/${src#/etc/pfi/}" "$cd/$name" || fail "$unit: LoadCredential=$c"
    chmod 0400 "$cd/$name"
  done < <(sed -n 's/^LoadCredential=//p' "$U/$unit.service")
  chmod 0500 "$cd"
  local cmd
  cmd=$(sed -n 's/^ExecStart=//p' "$U/$unit.service")
  [ -n "$cmd" ] || fail "$unit: no ExecStart="
  cmd=${cmd//\$$var/$args}
  cmd=${cmd//\/usr\/local\/sbin\/pfid/$PFID}
  cmd=${cmd//\/usr\/local\/sbin\/pfi-agent/$PFI_AGENT}
  cmd=${cmd//\/var\/lib\/pfi/$T/state}
  echo "$unit: $cmd" >>"$T/units.log"
  # Word splitting as systemd's for these lines (no quotes in them).
  CREDENTIALS_DIRECTORY="$cd" PFI_LOCK_DIR= $cmd >>"$T/$unit.log" 2>&1 &
  RUN_PID=$!
  PIDS+=("$RUN_PID")
}
API[a]=$(free_port)
run pfid PFID_ARGS "--id a --nats $NATS_URL --api 127.0.0.1:${API[a]} --period 0.5 --stale 2"
mkdir -p "$T/emu.n1"
run pfi-agent PFI_AGENT_ARGS "--node n1 --nats $NATS_URL --emulate --params gpus=2,state=$T/emu.n1 --period 0.5"
live1() { api a GET /v1/status | grep -q '"nodes":1,"stale_nodes":0'; }
until_true 30 live1 || fail "pfid.service and pfi-agent.service: no live node: $(cat "$T/body")"
"$PFI" ctl --url "http://127.0.0.1:${API[a]}" --token-file "$T/etc/api.token" \
  submit ev1 +3600 +7200 1000 >"$T/ctl.out" 2>&1 || fail "submit with the unit's token: $(cat "$T/ctl.out")"
[ -s "$T/state/pfid.db" ] || fail "pfid.service: no records in its state directory"

# The Kubernetes manifest (no cluster here: its structure only): every
# secret file an argument names lies in a Secret volume's mount, pfid's
# records on a PersistentVolumeClaim, NATS over TLS with its CA file in a
# mounted volume, no listener on 0.0.0.0, and pfid's API over HTTPS.
python3 - contrib/kubernetes/pfi-fleet.yaml >"$T/k8s" 2>&1 <<'PY' || fail "manifest: $(cat "$T/k8s")"
import sys, yaml
bad = []
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d["kind"] not in ("DaemonSet", "Deployment", "StatefulSet"):
        continue
    spec = d["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    claims = {c["metadata"]["name"] for c in d["spec"].get("volumeClaimTemplates", [])}
    for c in spec["containers"]:
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        for a in c["args"]:
            k, _, v = a.partition("=")
            where = lambda path: next((n for m, n in mounts.items() if path.startswith(m + "/")), None)
            if k in ("--password-file", "--token-file", "--tokens", "--nats-key", "--nats-nkey", "--nats-creds", "--tls-key"):
                n = where(v)
                if not n or "secret" not in vols.get(n, {}):
                    bad.append("%s %s: not in a Secret volume" % (c["name"], a))
            if k == "--nats" and not all(u.strip().startswith("tls://") for u in v.split(",")):
                bad.append("%s %s: NATS not over TLS" % (c["name"], a))
            if k == "--nats-ca" and not where(v):
                bad.append("%s %s: not in a mounted volume" % (c["name"], a))
            if k == "--records" and where(v) not in claims:
                bad.append("%s %s: not on a PersistentVolumeClaim" % (c["name"], a))
            if "0.0.0.0" in v:
                bad.append("%s %s: every address" % (c["name"], a))
        # pfid's API off loopback is HTTPS (docs/security.md "TLS").
        keys = {a.partition("=")[0] for a in c["args"]}
        if any(a.startswith("--api=") for a in c["args"]) and not {"--tls-cert", "--tls-key"} <= keys:
            bad.append("%s: --api without --tls-cert and --tls-key" % c["name"])
if bad:
    sys.exit("\n".join(bad))
PY

[ "$fails" = 0 ] || { cat "$T/units.log"; tail -n 20 "$T"/*.log >&2; exit 1; }
echo "fleet units: ok"
