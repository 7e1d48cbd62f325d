#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Values that are bad input, each refused with exit 2 and a message naming
# where (option, or file:line:column) instead of a crash or a silent
# wrong result:
#   - pfi grid meter --gpu-w -1: a usage error (it aborted on a double free,
#     exit 134; under the sanitizer build it must exit 2 cleanly);
#   - a curves file's cap_w of 1e308 W (pfi index took it): at most
#     100 kW per GPU;
#   - a --gpu-map row with no GPUs for a job of the plan (it was planned
#     with none, and pfi cap --plan would change nothing for it);
#   - a Prometheus sample beyond the range of a double (1e999) gets the
#     warning a malformed value gets (it was dropped silently, as +Inf);
#   - --duration 30 of pfi sweep and pfi reproduce, where the default is
#     written 30m: a run length needs its unit.
. "$(dirname "$0")/lib.sh"
export PFI_BACKEND=emu

# ---- grid meter --gpu-w out of range ----
for v in -1 1e10 "500,-1"; do
  "$PFI" grid meter --gpu-w "$v" --powercap /x >"$T/out" 2>"$T/err"
  rc=$?
  [ "$rc" = 2 ] || fail "grid meter --gpu-w $v: exit $rc, expected 2: $(head -3 "$T/err")"
  grep -q "^pfi grid: --gpu-w / --other-w: .*got '$v'" "$T/err" || fail "grid meter --gpu-w $v: $(head -3 "$T/err")"
done
# --other-w out of range after a good --gpu-w: both lists freed once.
"$PFI" grid meter --gpu-w 500,600 --other-w 100,-5 --powercap /x >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] || fail "grid meter --other-w 100,-5: exit $rc, expected 2: $(head -3 "$T/err")"

# ---- cap_w beyond any GPU ----
printf 'job,cap_w,power_w,tokens_per_s\na,300,290,80\na,1e308,690,100\n' >"$T/huge.csv"
"$PFI" index "$T/huge.csv" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] || fail "index cap_w 1e308: exit $rc, expected 2"
[ "$(cat "$T/err")" = "pfi index: $T/huge.csv:3:3: field 'cap_w': 1e+308 W is not a GPU's power cap (at most 100000 W)" ] ||
  fail "index cap_w 1e308: '$(cat "$T/err")'"
[ -s "$T/out" ] && fail "index cap_w 1e308 printed: $(head -2 "$T/out")"
# 100 kW itself is a cap (the bound is inclusive), 100.001 kW is not.
printf 'job,cap_w,power_w,tokens_per_s\na,300,290,80\na,100000,690,100\n' >"$T/edge.csv"
"$PFI" index "$T/edge.csv" >/dev/null 2>"$T/err" || fail "index cap_w 100000: $(cat "$T/err")"
printf 'job,cap_w,power_w,tokens_per_s\na,300,290,80\na,100001,690,100\n' >"$T/over.csv"
"$PFI" index "$T/over.csv" >/dev/null 2>&1
[ $? = 2 ] || fail "index cap_w 100001: not refused"

# ---- a gpu-map row without GPUs ----
M="job=dataset+network+batch_size+optimizer,cap_w=power_limit,power_w=average_power,tokens_per_s=1/time_per_epoch"
grep -E '^dataset|^imagenet,resnet50,(64|128),' data/real/zeus-nsdi23/summary_power_v100.csv >"$T/two.csv"
printf 'job,gpu_ids\nimagenet/resnet50/64/adadelta,0\nimagenet/resnet50/128/adadelta,\n' >"$T/gpus.csv"
"$PFI" allocate --curves "$T/two.csv" --map "$M" --cut 4% --plan "$T/two.plan" --gpu-map "$T/gpus.csv" \
  >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] || fail "gpu-map row without GPUs: exit $rc, expected 2"
grep -q "^pfi allocate: $T/gpus.csv:3:[0-9]*: field 'gpu_ids': empty: job 'imagenet/resnet50/128/adadelta' needs its GPUs" "$T/err" ||
  fail "gpu-map row without GPUs: $(cat "$T/err")"
[ -e "$T/two.plan" ] && fail "gpu-map row without GPUs: a plan was written"
# A row for a job outside the plan may still be empty (it is ignored).
printf 'job,gpu_ids\nimagenet/resnet50/64/adadelta,0\nimagenet/resnet50/128/adadelta,1\nother,\n' >"$T/gpus2.csv"
"$PFI" allocate --curves "$T/two.csv" --map "$M" --cut 4% --plan "$T/two.plan" --gpu-map "$T/gpus2.csv" \
  >/dev/null 2>"$T/err" || fail "gpu-map with an empty row of another job: $(cat "$T/err")"

# ---- Prometheus values beyond a double ----
for v in 1e999 -1e999; do
  {
    echo '# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).'
    echo "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"n1\"} $v"
    echo 'DCGM_FI_DEV_POWER_USAGE{gpu="1",Hostname="n1"} 100'
  } >"$T/p.prom"
  rm -f "$T/p.db"
  "$PFI" trace import-prom "$T/p.prom" --db "$T/p.db" >"$T/out" 2>"$T/err" || fail "import-prom $v: exit $?"
  grep -q "^pfi trace import-prom: $T/p.prom:2:48: value is beyond the range of a double (line skipped)$" "$T/err" ||
    fail "import-prom $v: no warning: $(cat "$T/err")"
  grep -q "1 GPU sample(s) .*(malformed lines skipped)" "$T/err" || fail "import-prom $v: $(cat "$T/err")"
  "$PFI" trace import-prom "$T/p.prom" --db "$T/p2.db" --strict >/dev/null 2>&1
  [ $? = 2 ] || fail "import-prom --strict $v: not refused"
done
# +Inf is the format's own word for an infinite reading: kept as "not
# valid", without a warning (unchanged).
sed -i 's/-1e999/+Inf/' "$T/p.prom"
rm -f "$T/p.db"
"$PFI" trace import-prom "$T/p.prom" --db "$T/p.db" >"$T/out" 2>"$T/err" || fail "import-prom +Inf"
grep -q "line skipped" "$T/err" && fail "import-prom +Inf warned: $(cat "$T/err")"

# ---- a run length without its unit ----
"$PFI" sweep --backend emu --emulate dense-ft-llama70b-x16 --caps 700 --duration 30 --db "$T/s.db" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] || fail "sweep --duration 30: exit $rc, expected 2"
grep -q "^pfi sweep: --duration: '30': a run length needs its unit: 30s or 30m" "$T/err" ||
  fail "sweep --duration 30: $(cat "$T/err")"
[ -e "$T/s.db" ] && fail "sweep --duration 30 created its store"
"$PFI" reproduce --duration 30 --out "$T/r" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] || fail "reproduce --duration 30: exit $rc, expected 2"
grep -q "'30': a run length needs its unit: 30s or 30m" "$T/err" || fail "reproduce --duration 30: $(cat "$T/err")"
# The help says so.
"$PFI" sweep --help | grep -q -- "--duration D .*with its unit" || fail "sweep --help: --duration's unit"
"$PFI" reproduce --help | grep -q -- "--duration D .*with its unit" || fail "reproduce --help: --duration's unit"
exit $((fails > 0))
