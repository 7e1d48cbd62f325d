#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# pfi_trainer installed the two documented ways, without the network:
# - `cmake --install` (make install) into a prefix: the package lands in
#   the prefix's site-packages (PFI_PYTHON_SITEDIR of the build, Debian's
#   lib/python3.X/dist-packages), where python3 imports it from;
# - pip with Debian's setuptools (`--no-build-isolation --no-index`) into a
#   virtual environment that sees the system's packages (Debian's python3
#   refuses pip installs outside one, PEP 668): its pfi_trainer is the
#   installed copy, and Debian's torch is importable beside it.
. "$(dirname "$0")/../cli/lib.sh"
PY=${PFI_PYTHON:-/usr/bin/python3}
B=${PFI_BUILD_DIR:?}
site=$(sed -n 's/^PFI_PYTHON_SITEDIR:[A-Z]*=//p' "$B/CMakeCache.txt")
[ -n "$site" ] || { fail "no PFI_PYTHON_SITEDIR in $B/CMakeCache.txt"; exit 1; }
timeout 120 cmake --install "$B" --prefix "$T/p" >"$T/install.log" 2>&1 ||
  { fail "cmake --install: $(tail -n 5 "$T/install.log")"; exit 1; }
[ -f "$T/p/$site/pfi_trainer/__init__.py" ] && [ -f "$T/p/$site/pfi_trainer/torch.py" ] ||
  fail "pfi_trainer not under $T/p/$site: $(find "$T/p" -name '*.py' | head -3)"
got=$(cd / && PYTHONPATH="$T/p/$site" "$PY" -c 'import pfi_trainer; print(pfi_trainer.__file__)')
[ "$got" = "$T/p/$site/pfi_trainer/__init__.py" ] || fail "imported from $got, not the prefix"

"$PY" -c 'import setuptools, ensurepip' 2>/dev/null || { echo "SKIP (pip part): no setuptools or venv"; exit $((fails > 0)); }
cp -r python "$T/src"
"$PY" -m venv --system-site-packages "$T/venv" >"$T/venv.log" 2>&1 || { fail "venv: $(tail -3 "$T/venv.log")"; exit 1; }
timeout 120 "$T/venv/bin/python" -m pip install --no-build-isolation --no-index --no-deps "$T/src" \
  >"$T/pip.log" 2>&1 || { fail "pip install: $(tail -5 "$T/pip.log")"; exit 1; }
got=$(cd / && "$T/venv/bin/python" -c 'import pfi_trainer; print(pfi_trainer.__version__, pfi_trainer.__file__)')
case $got in "0.1.0 $T/venv/"*/pfi_trainer/__init__.py) ;; *) fail "venv import: $got" ;; esac
if "$PY" -c 'import torch' 2>/dev/null; then
  (cd / && "$T/venv/bin/python" -c 'import torch, pfi_trainer.torch') || fail "torch beside pfi_trainer in the venv"
fi
[ "$fails" -eq 0 ] && echo "test_install: all passed"
exit $((fails > 0))
