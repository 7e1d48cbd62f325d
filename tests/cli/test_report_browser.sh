#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The report in a real browser: headless Chromium opens report.html from disk
# (file://, no network), its DOM is dumped after the page's own render check
# ran, and a screenshot of the first screen is kept as a test artifact in
# the build directory (test-artifacts/report-browser/first-screen.png).
# Checks: every figure rendered (non-empty inline SVG with axis text and at
# least one visible data mark, as measured by the browser's layout), and the
# page's text carries the emulation notice.
set -euo pipefail
: "${PFI:?}" "${PFI_BUILD_DIR:?}"
chromium=""
for c in /usr/bin/chromium chromium chromium-browser; do
  if command -v "$c" > /dev/null 2>&1; then chromium=$(command -v "$c"); break; fi
done
if [ -z "$chromium" ]; then
  echo "SKIP: chromium is not installed (scripts/install-deps.sh installs the" \
       "Debian package chromium; CI has it)"
  exit 77
fi
art="$PFI_BUILD_DIR/test-artifacts/report-browser"
rm -rf "$art"
mkdir -p "$art"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The whole emulated campaign (every group, every cap, through the sweep
# harness), with 10-minute runs sampled every 20 s, fewer Monte Carlo draws
# and a smaller simulation to keep the test fast; none of these changes
# which figures and tables the report has.
"$PFI" reproduce --out "$art/out" --duration 10m --interval 20s --draws 500 \
  --workloads 20 --jobs-per-workload 20 --quiet > /dev/null
html="$art/out/report.html"
[ -s "$html" ] || fail "no report"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update
       --disable-sync --disable-dev-shm-usage --hide-scrollbars
       --user-data-dir="$tmp/profile")
url="file://$html"
timeout 120 "$chromium" "${flags[@]}" --dump-dom "$url" \
  > "$art/dom.html" 2> "$art/chromium-dom.log" || fail "chromium --dump-dom failed (see $art/chromium-dom.log)"
timeout 120 "$chromium" "${flags[@]}" --window-size=1280,900 \
  --screenshot="$art/first-screen.png" "$url" \
  > "$art/chromium-shot.log" 2>&1 || fail "chromium --screenshot failed (see $art/chromium-shot.log)"

# A PNG file, not an empty or error page.
[ "$(head -c 8 "$art/first-screen.png" | od -An -tx1 | tr -d ' \n')" = \
  "89504e470d0a1a0a" ] || fail "screenshot is not a PNG"
[ "$(stat -c %s "$art/first-screen.png")" -gt 20000 ] || fail "screenshot nearly empty"

# Every figure: the page's script ran in the browser and marked it.
nfig=$(grep -o '<figure class="fig"[^>]*>' "$art/dom.html" | wc -l)
nyes=$(grep -o '<figure class="fig"[^>]*data-rendered="yes"' "$art/dom.html" | wc -l)
# One figure per report figure: curves, normalized curves, PFI by class,
# clocks, telemetry scatter grid, predicted vs actual, gap to oracle.
[ "$nfig" -ge 7 ] || fail "only $nfig figures in the page"
[ "$nyes" -eq "$nfig" ] || fail "$nyes of $nfig figures rendered: $(grep -o '<figure class="fig" id="[^"]*"[^>]*data-rendered="no"' "$art/dom.html" | head -3)"
grep -q "<p id=\"render-check\">Render check: $nfig of $nfig figures drawn.</p>" \
  "$art/dom.html" || fail "render check line: $(grep -o '<p id="render-check">[^<]*' "$art/dom.html")"
# And independently of the script: each figure holds an SVG with axis
# labels (text) and data (a gnuplot plot group with a path or point).
awk 'BEGIN{RS="</figure>"} /<figure class="fig"/ {
       n++; if ($0 !~ /<svg/ || $0 !~ /<text/ || $0 !~ /gnuplot_plot_1/) bad++ }
     END { if (n == 0 || bad) exit 1 }' "$art/dom.html" || fail "a figure lacks SVG, axes or data"

# The emulation notice, in the first screen's text.
grep -q 'EMULATED DATA, NOT MEASUREMENTS' "$art/dom.html" || fail "no emulation notice"
grep -q 'calibrated only to the PFI values the paper published' "$art/dom.html" ||
  fail "notice does not say what the emulator is calibrated to"
echo "test_report_browser: ok ($nfig figures; screenshot $art/first-screen.png)"
