#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The operator's report (a hand-written 3-job file) in a real browser:
# headless Chromium lays out the page; a copy of it carries a probe script
# that writes, into the DOM, where the first screen's parts landed. Checks:
# in a 1280 x 900 window the ranking table, the capacity figure and the
# start of the cap plan are on the first screen, the figure rendered, and
# no paper scaffolding is anywhere in the page's text. The screenshot is
# kept in the build directory (test-artifacts/report-operator/).
set -euo pipefail
: "${PFI:?}" "${PFI_BUILD_DIR:?}" "${PFI_SOURCE_DIR:?}"
chromium=""
for c in /usr/bin/chromium chromium chromium-browser; do
  if command -v "$c" >/dev/null 2>&1; then chromium=$(command -v "$c"); break; fi
done
if [ -z "$chromium" ]; then
  echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
art="$PFI_BUILD_DIR/test-artifacts/report-operator"
rm -rf "$art"
mkdir -p "$art"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/jobs.csv" <<'CSV'
job,cap_w,power_w,tokens_per_s
llm-a,200,1600,5200
llm-a,400,3000,8300
llm-a,700,4400,9000
llm-b,200,1500,3000
llm-b,400,2900,6500
llm-b,700,4300,8800
vision-c,200,800,900
vision-c,450,1500,1500
vision-c,700,2100,1650
CSV
"$PFI" report -q --draws 300 --unit samples/s --out "$art/out" "$tmp/jobs.csv" >/dev/null
html="$art/out/report.html"
[ -s "$html" ] || fail "no report"
# The probe: after layout, the top and bottom (px) of each part of the first
# screen (the ranking table, the figure, the cap plan's caption), written as
# attributes of <body>.
sed 's|</body>|<script>(function(){function at(s,n){var e=document.querySelector(s);if(!e)return;var b=e.getBoundingClientRect();document.body.setAttribute("data-"+n+"-top",String(Math.round(b.top)));document.body.setAttribute("data-"+n+"-bottom",String(Math.round(b.bottom)));}at("table.res","rank");at("figure.fig","fig");at("a[href^=cap_plan]","plan");document.body.setAttribute("data-probed","yes");})();</script></body>|' \
  "$html" >"$art/out/probe.html"
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update
       --disable-sync --disable-dev-shm-usage --hide-scrollbars
       --window-size=1280,900 --user-data-dir="$tmp/profile")
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$art/out/probe.html" \
  >"$art/dom.html" 2>"$art/chromium-dom.log" || fail "chromium --dump-dom failed"
timeout 120 "$chromium" "${flags[@]}" --screenshot="$art/first-screen.png" \
  "file://$html" >"$art/chromium-shot.log" 2>&1 || fail "chromium --screenshot failed"
[ "$(head -c 8 "$art/first-screen.png" | od -An -tx1 | tr -d ' \n')" = \
  "89504e470d0a1a0a" ] || fail "screenshot is not a PNG"
[ "$(stat -c %s "$art/first-screen.png")" -gt 20000 ] || fail "screenshot nearly empty"

attr() { grep -o "data-$1=\"[^\"]*\"" "$art/dom.html" | head -1 | sed 's/.*="\(.*\)"/\1/'; }
[ "$(attr probed)" = yes ] || fail "the probe did not run"
rank_bottom=$(attr rank-bottom)
fig_top=$(attr fig-top)
plan_top=$(attr plan-top)
[ -n "$rank_bottom" ] && [ "$rank_bottom" -le 900 ] || fail "ranking table not on the first screen (bottom $rank_bottom px)"
[ -n "$fig_top" ] && [ "$fig_top" -lt 900 ] || fail "capacity figure not on the first screen (top $fig_top px)"
[ -n "$plan_top" ] && [ "$plan_top" -gt "$fig_top" ] && [ "$plan_top" -lt 900 ] ||
  fail "cap plan does not start on the first screen below the figure (top $plan_top px)"
# The figure rendered (the page's own check).
grep -q '<figure class="fig"[^>]*data-rendered="yes"' "$art/dom.html" || fail "figure not rendered"
grep -q 'Render check: 1 of 1 figures drawn.' "$art/dom.html" || fail "render check"
# The ranking's first row is the most flexible job; no paper scaffolding.
grep -q '<td class="num">1</td><td>llm-a</td>' "$art/dom.html" || fail "llm-a not ranked first"
for bad in 'Headline numbers' 'Not available' 'published' 'tokens/s'; do
  grep -qi "$bad" "$art/dom.html" && fail "page text has '$bad'"
done
grep -q 'Provenance not stated' "$art/dom.html" || fail "no provenance banner"
echo "test_report_operator_browser: ok (screenshot $art/first-screen.png)"
