#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Inputs that must be refused, each with a located error and exit status 2:
# endless or binary input read with bounded memory, duplicate options,
# durations outside the one set of bounds every command shares.
. "$(dirname "$0")/lib.sh"

# expect_err PATTERN ARGS...: exit status 2 and a first stderr line that
# matches the extended regex PATTERN.
expect_err() {
  local pat=$1
  shift
  timeout 60 "$PFI" "$@" >"$T/out" 2>"$T/err" </dev/null
  local rc=$?
  [ "$rc" -eq 2 ] || fail "pfi $*: exit status $rc, expected 2 ($(head -1 "$T/err"))"
  head -1 "$T/err" | grep -Eq -- "$pat" || fail "pfi $*: stderr '$(head -1 "$T/err")' does not match '$pat'"
}

# rss_run LIMIT_MB PATTERN CMD...: runs CMD (a shell pipeline, timeout 60 s)
# and checks exit status 2, stderr matching PATTERN and a peak resident
# size of the pfi process below LIMIT_MB (getrusage of the children, so the
# largest of the pipeline's processes).
rss_run() {
  local limit=$1 pat=$2
  shift 2
  python3 - "$limit" "$pat" "$T/err" "$@" <<'PY' || fail "bounded read: $*: $(head -1 "$T/err")"
import re, resource, subprocess, sys
limit, pat, errf, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
with open(errf, "w") as e:
    try:
        r = subprocess.run(["bash", "-c", cmd], stdout=subprocess.DEVNULL,
                           stderr=e, timeout=60)
        rc = r.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
msg = open(errf).read()
ok = rc == 2 and re.search(pat, msg) and rss_mb < limit
if not ok:
    print(f"status {rc}, peak RSS {rss_mb:.0f} MB (limit {limit}), stderr {msg!r}",
          file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

# ---- NUL bytes and over-long lines: refused as soon as read ----
# An endless input: /dev/zero, and an endless line without a NUL. Reading
# either whole would never end; the error comes at 1:1 within the first
# megabyte. 300 MB of zeros from a pipe would take 300 MB to hold.
rss_run 150 "/dev/zero:1:1: NUL byte" "'$PFI' index /dev/zero"
rss_run 150 "/dev/zero:1:1: NUL byte" "'$PFI' trace import-prom /dev/zero --db '$T/z.db'"
rss_run 150 "<stdin>:1:1: NUL byte" "head -c 300000000 /dev/zero | '$PFI' index -"
rss_run 150 "<stdin>:1:1: line longer than 1048576 bytes" \
  "tr '\\0' a </dev/zero | head -c 300000000 | '$PFI' index -"
rss_run 150 "<stdin>:2:1: line longer than 1048576 bytes" \
  "{ echo job,cap_w,power_w,tokens_per_s; tr '\\0' 7 </dev/zero; } | head -c 300000000 | '$PFI' stats pearson - --x cap_w --y power_w"
[ -e "$T/z.db" ] && fail "import-prom of /dev/zero created a store"
# A NUL after good lines is located where it is: line 3, column 4.
printf 'job,cap_w,power_w,tokens_per_s\na,100,1,9\na,2\0000,2,3\n' >"$T/nul.csv"
expect_err "nul.csv:3:4: NUL byte" index "$T/nul.csv"
# A line of exactly 1048576 bytes is read (and then fails as CSV: too few
# fields); one byte more is refused as over-long.
awk 'BEGIN { printf "job,cap_w,power_w,tokens_per_s\n"; s = "x"; while (length(s) < 1048576) s = s s; print substr(s, 1, 1048576) }' >"$T/max.csv"
expect_err "max.csv:2:" index "$T/max.csv"
grep -q "longer than" "$T/err" && fail "a line of 1048576 bytes refused: $(cat "$T/err")"
awk 'BEGIN { printf "job,cap_w,power_w,tokens_per_s\n"; s = "x"; while (length(s) < 1048577) s = s s; print substr(s, 1, 1048577) }' >"$T/over.csv"
expect_err "over.csv:2:1: line longer than 1048576 bytes" index "$T/over.csv"

# ---- pfi index: a cap or a column mapped twice ----
cat >"$T/three.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s
a,700,1000,100
a,500,800,95
a,300,600,80
CSV
expect_err "--caps: cap 300 W is listed twice" index "$T/three.csv" --caps 300,300,700
expect_err "--map: 'job' is mapped twice" index "$T/three.csv" --map job=a,job=b
expect_err "--map: column 'x' is mapped to both job and cap_w" index "$T/three.csv" --map job=x,cap_w=x
"$PFI" index "$T/three.csv" --caps 300,700 --definition ratio --format csv >"$T/out" ||
  fail "--caps 300,700"
# (1 - 0.6)/(1 - 0.8) = 2 with the two caps kept.
near "$(sed -n 2p "$T/out" | cut -d, -f2)" 2 1e-9 "ratio PFI on caps 300,700"

# ---- trace import-prom: many hosts, order of appearance, repeated times ----
# 5000 hosts of one GPU each, named in descending order: all are stored (no
# host limit near 1000), numbered as they appear (256 * rank), so the first
# line's host "n04999" is GPU 0 with its power 100 W, the last, "n00000",
# is GPU 256 * 4999 with 100 + 4999 % 500 = 599 W.
awk 'BEGIN { print "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W)."
  for (h = 0; h < 5000; h++)
    printf "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"n%05d\"} %d\n", 4999 - h, 100 + h % 500 }' >"$T/many.prom"
"$PFI" trace import-prom "$T/many.prom" --db "$T/many.db" 2>"$T/err" || fail "import-prom of 5000 hosts: $(head -3 "$T/err")"
grep -q skipped "$T/err" && fail "import-prom of 5000 hosts skipped some: $(head -3 "$T/err")"
grep -q "5000 GPU sample(s)" "$T/err" || fail "import-prom of 5000 hosts: $(head -2 "$T/err")"
# The samples as pfi trace export writes them: run_id,job,cap_w,source,gpu,t_s,power_w,...
"$PFI" trace export "$T/many.db" >"$T/many.csv" 2>/dev/null || fail "export of 5000 hosts"
[ "$(awk -F, 'NR > 1 { n++; if ($5 > m) m = $5 } END { print n, m }' "$T/many.csv")" = "5000 1279744" ] ||
  fail "5000 hosts stored: $(awk -F, 'NR > 1 { n++; if ($5 > m) m = $5 } END { print n, m }' "$T/many.csv")"
[ "$(awk -F, 'NR > 1 && ($5 == 0 || $5 == 256 || $5 == 1279744) { print $5, $7 }' "$T/many.csv" |
  sort -n | awk '{ printf "%s%s", s, $2; s = " " }')" = "100 101 599" ] ||
  fail "hosts not numbered in order of appearance: $(sed -n 2,4p "$T/many.csv")"
# Two scrapes of one GPU at the same time (ms timestamps): one row, and the
# count says so; a third at a later time is a second row.
{ echo '# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="0",Hostname="a"} 300 1700000000000'; } >"$T/s1.prom"
cp "$T/s1.prom" "$T/s2.prom"
{ echo '# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).'
  echo 'DCGM_FI_DEV_POWER_USAGE{gpu="0",Hostname="a"} 310 1700000005000'; } >"$T/s3.prom"
"$PFI" trace import-prom "$T/s1.prom" "$T/s2.prom" "$T/s3.prom" --db "$T/same.db" 2>"$T/err" ||
  fail "import-prom of a repeated scrape: $(cat "$T/err")"
grep -q "imported 3 scrape(s), 2 GPU sample(s).*1 repeated" "$T/err" || fail "repeated scrape count: $(cat "$T/err")"
grep -q "s2.prom:1: the scrape starting here repeats the time 1700000000.000 s" "$T/err" ||
  fail "repeated scrape not named: $(cat "$T/err")"
[ "$("$PFI" trace export "$T/same.db" 2>/dev/null | awk -F, 'NR > 1 { printf "%s%s", s, $7; s = " " }')" = "300 310" ] ||
  fail "repeated scrape stored: $("$PFI" trace export "$T/same.db" 2>&1)"

# ---- durations: one set of bounds for every command ----
EMU=(--backend emu --emulate moe-ft-qwen30ba3b-x8 --caps 300 --db "$T/s.db" --quiet)
expect_err "--interval: '1e-300s' is outside 0.1s..10m" sweep "${EMU[@]}" --interval 1e-300s
expect_err "--duration: '1e308s' is outside 1s..24h" sweep "${EMU[@]}" --duration 1e308s
expect_err "--cooldown: '1e308' is outside 0s..1h" sweep "${EMU[@]}" --cooldown 1e308
expect_err "--grace: '0' is outside 0.1s..10m" sweep "${EMU[@]}" --grace 0
expect_err "--interval: '1us': unknown unit" sweep "${EMU[@]}" --interval 1us
expect_err "--interval: '0.05s' is outside 0.1s..10m" emulate sweep --job moe-ft-qwen30ba3b-x8 --interval 0.05s
expect_err "--interval: '11m' is outside 0.1s..10m" reproduce --interval 11m
expect_err "--duration: '25h' is outside 1s..24h" reproduce --duration 25h
expect_err "--interval: '1e308' is outside 0.1s..10m" trace import-prom data/dcgm/h100-idle-eks.prom --db "$T/p.db" --interval 1e308
[ -e "$T/s.db" ] && fail "a refused sweep created its store"
# The bounds themselves are accepted (100ms is 0.1 s).
"$PFI" sweep "${EMU[@]}" --interval 100ms --duration 1s --cooldown 0 2>"$T/err" ||
  fail "sweep at the lower bounds: $(cat "$T/err")"
n=$("$PFI" trace export "$T/s.db" 2>/dev/null | awk -F, 'NR > 1 { print $6 }' | sort -u | wc -l)
# 1 s sampled every 0.1 s: 10 instants.
[ "$n" = 10 ] || fail "samples at 100ms for 1s: $n instants, expected 10"

exit $((fails > 0))
