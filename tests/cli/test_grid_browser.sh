#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The event report (pfi grid event-report) opened in a real browser
# (Debian's chromium, headless): the page loads, its figure is drawn as SVG
# with the three series, its tables hold every job, and the first screen is
# a picture (kept in the build directory for a person to look at).
. "$(dirname "$0")/lib.sh"
chromium=""
for c in /usr/bin/chromium chromium chromium-browser; do
  if command -v "$c" >/dev/null 2>&1; then chromium=$(command -v "$c"); break; fi
done
[ -n "$chromium" ] || { echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"; exit 77; }
art="${PFI_BUILD_DIR:-$T}/test-artifacts/grid-browser"
rm -rf "$art"
mkdir -p "$art" "$T/ev"
art=$(cd "$art" && pwd)
# Ten minutes at one sample a minute: 3 before the event, 7 during it.
{
  echo "t_s,target_w,power_w"
  for t in 0 60 120; do echo "$t,0,8000"; done
  for t in 180 240 300 360 420 480 540; do echo "$t,6000,$((5900 + t % 7 * 10))"; done
} >"$T/ev/series.csv"
{
  echo "t_s,job,tokens_per_s"
  for t in 0 60 120; do echo "$t,train-a,1000"; echo "$t,train-<b>,500"; done
  for t in 180 240 300 360 420 480 540; do echo "$t,train-a,930"; echo "$t,train-<b>,480"; done
} >"$T/ev/jobs.csv"
printf 'job,tier,tenant\ntrain-a,flex10,vision\ntrain-<b>,flex25,"lang, ""nlp"""\n' >"$T/ev/contract.csv"
printf 'tier,max_loss\nflex10,0.10\nflex25,0.25\n' >"$T/ev/tiers.csv"
"$PFI" grid event-report --log "$T/ev" --contract "$T/ev/contract.csv" --tiers "$T/ev/tiers.csv" \
  --out "$art" >/dev/null || { fail "event-report"; exit 1; }
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$T/profile")
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$art/event.html" >"$art/dom.html" 2>"$art/dom.log" ||
  fail "chromium --dump-dom failed (see $art/dom.log)"
timeout 120 "$chromium" "${flags[@]}" --window-size=1000,900 --screenshot="$art/first-screen.png" \
  "file://$art/event.html" >"$art/shot.log" 2>&1 || fail "chromium --screenshot failed"
[ "$(head -c 8 "$art/first-screen.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
  fail "the screenshot is not a PNG"
[ "$(stat -c %s "$art/first-screen.png")" -gt 20000 ] || fail "the screenshot is nearly empty"
grep -q "<svg" "$art/dom.html" || fail "no figure in the page"
for s in "target (GPU)" "realized GPU power" "power at the meter"; do
  grep -q "$s" "$art/dom.html" || fail "the figure has no series '$s'"
done
# Job names are the user's: shown as text, never as markup.
grep -q "train-&lt;b&gt;" "$art/dom.html" || fail "the job name train-<b> is not escaped"
grep -q "<b>" "$art/dom.html" && fail "a job name became markup"
# train-<b> lost 4 %, within flex25; train-a 7 %, within flex10: no violation.
grep -q "0 job(s) in violation" "$art/dom.html" || fail "violations in the summary"
exit $((fails > 0))
