# SPDX-License-Identifier: GPL-3.0-or-later
# Convenience front end over CMake. `make demo` and `make check` are the two
# commands the README opens with; they and `make demo-grid` are the only
# targets that install packages (apt-get: `make deps` everything, `make
# deps-demo` only what the demo needs); every other target only builds and
# runs.
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 10
PREFIX ?= /usr/local
CTEST_FLAGS ?= --output-on-failure -j $(JOBS)

demo-grid: deps
	$(MAKE) build
	@bash scripts/demo-grid.sh $(BUILD)

.PHONY: demo-grid
.PHONY: all build build-pfi demo check test test-asan fuzz bench profile-accuracy install clean deps deps-demo deps-bench

all: build

# Installs the Debian packages the build, the tests and the figures need.
deps:
	bash scripts/install-deps.sh

# Only what `make demo` needs: the build of pfi and the report's figures.
deps-demo:
	bash scripts/install-deps.sh --demo

# Also the peers `make bench` measures pfi against (numpy, pandas,
# prometheus_client).
deps-bench:
	bash scripts/install-deps.sh --bench

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The command alone (what scripts/demo.sh runs), not the tests, benchmarks
# and fuzz replayers `make build` adds.
build-pfi: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target pfi

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPFI_SANITIZE=ON

test: build
	cd $(BUILD) && ctest $(CTEST_FLAGS)

test-asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest $(CTEST_FLAGS)

$(FUZZ_BUILD)/CMakeCache.txt:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPFI_FUZZ=ON -DPFI_TESTS=ON

# Runs every libFuzzer target for FUZZ_SECONDS on its seed corpus (the
# library is coverage-instrumented too), prints each target's coverage and
# fails on a crash or when a target's coverage is below its floor in
# tests/fuzz/floors.txt (see tests/fuzz/README.md).
fuzz: $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# Every test: normal build, sanitizer build, and a bounded fuzz run.
# In this order even under make -j: the packages first.
check: deps
	$(MAKE) test
	$(MAKE) test-asan
	$(MAKE) fuzz
	@echo "make check: all test suites passed"

# Installs and builds only what the demo runs (pfi); `make check` adds the
# rest.
demo: deps-demo
	$(MAKE) build-pfi
	@bash scripts/demo.sh $(BUILD)

# The in-process benchmarks, then pfi against its peers (numpy, pandas,
# prometheus_client: `make deps-bench` installs them).
bench: build
	@set -e; for b in $(BUILD)/bench_*; do echo "== $$b"; $$b; done
	/usr/bin/python3 bench/compare.py $(BUILD)

# pfi profile against the full sweep on the emulator (a few minutes):
# docs/figures/profile-accuracy.{csv,txt,svg}.
profile-accuracy: build
	scripts/profile-accuracy.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) out
