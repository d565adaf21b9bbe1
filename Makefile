# heatline: developer entry points. `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV := .venv
DEMO_VENV := .venv-demo
ASAN_VENV := .venv-asan
BENCH_VENV := .venv-bench
PIP_FLAGS := --quiet --disable-pip-version-check

.PHONY: demo test venvs suites unit sanitize versions lint format-check docs valgrind bench bench-quick bench-children bench-pool bench-versions bench-regrtest clean

# The extras (pyproject.toml) the main virtualenv installs. `make test EXTRAS=test,torch` (what
# .ci/run does) adds torch for the DataLoader-worker tests, which then must run (otlp likewise:
# opentelemetry-proto, which the OTLP export's tests decode it with): the optional extras asked
# for are installed into the ASan virtualenv too, `unit` and `sanitize` name them in
# HEATLINE_REQUIRE_MODULES, and a missing one fails its tests instead of skipping them. The
# other CPythons' virtualenvs never get them (no CPU-only wheel of torch for those here: PyPI's
# pulls the CUDA libraries, several GB each), so those tests skip there. The stamps name the
# extras asked for beyond the default, so an existing virtualenv gets them installed when they
# are asked for.
EXTRAS ?= test
comma := ,
empty :=
space := $(empty) $(empty)
EXTRA_LIST := $(subst $(comma),$(space),$(EXTRAS))
OPTIONAL_EXTRAS := $(filter torch otlp ray dask,$(EXTRA_LIST))
# The ASan virtualenv leaves out the distributed engines (their own native servers and clusters
# under a preloaded ASan runtime say nothing of heatline's C): their tests skip there.
ASAN_EXTRAS := $(filter-out ray dask,$(OPTIONAL_EXTRAS))
ASAN_REQUIRED_MODULES := $(subst $(space),$(comma),$(ASAN_EXTRAS))
REQUIRED_MODULES := $(subst $(space),$(comma),$(OPTIONAL_EXTRAS))
INSTALLED := $(VENV)/.installed$(if $(filter-out test,$(EXTRA_LIST)),-$(subst $(comma),-,$(EXTRAS)))
ASAN_INSTALLED := $(ASAN_VENV)/.installed$(if $(ASAN_EXTRAS),-$(subst $(space),-,$(ASAN_EXTRAS)))

# What an editable install compiles: the engine's sources, and options.py, whose ranges setup.py
# compiles into it.
ENGINE_SOURCES := $(wildcard src/heatline/_native/*.[ch]) src/heatline/options.py

$(INSTALLED): pyproject.toml setup.py $(ENGINE_SOURCES)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	HEATLINE_WERROR=1 $(VENV)/bin/pip install $(PIP_FLAGS) -e '.[$(EXTRAS)]'
	touch $@

# Profile the bundled example program. Its own virtualenv with heatline and what the example
# imports (the demo extra: numpy), none of the test tools, so a first run builds only that.
# pip runs quietly (its output would bury the report's start); a line before each step says
# what it does, so the minute or two of the first build is not silence.
$(DEMO_VENV)/.installed: pyproject.toml setup.py $(ENGINE_SOURCES)
	@echo "make demo: creating the virtualenv $(DEMO_VENV) (once; later runs reuse it)..."
	$(PYTHON) -m venv $(DEMO_VENV)
	@echo "make demo: upgrading pip in $(DEMO_VENV)..."
	$(DEMO_VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	@echo "make demo: building heatline's C engine and installing numpy into $(DEMO_VENV) (a minute or two the first time)..."
	$(DEMO_VENV)/bin/pip install $(PIP_FLAGS) -e '.[demo]'
	touch $@

demo: $(DEMO_VENV)/.installed
	@echo "make demo: profiling examples/demo.py (a few seconds); the report follows."
	$(DEMO_VENV)/bin/heatline examples/demo.py

# The other supported CPythons: 3.9-3.13 from pyenv (under $(PYENV_VERSIONS)), 3.14 and 3.15
# Debian sid's, in the chroot .ci/sid makes (`.ci/sid make`; its `run` runs a command there, in
# this checkout). Each has its own virtualenv (.venv-3.X, built from PyPI's test extras), in
# which `suite-3.X` runs the tests of what depends on the interpreter: all but those marked
# `interpreter_independent` (renderers, option parsing, the docs' checks), which run on
# $(PYTHON) and under ASan. An absent version is named and skipped; with
# HEATLINE_REQUIRE_PYTHONS=1 (.ci/run) it fails the run instead.
PYENV_VERSIONS ?= $(HOME)/.pyenv/versions
SID := .ci/sid
SID_ROOT ?= $(CURDIR)/.sid
SID_VERSIONS := 3.14 3.15
SUPPORTED := 3.9 3.10 3.11 3.12 3.13 $(SID_VERSIONS)
MAIN_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pyenv_python = $(lastword $(sort $(wildcard $(PYENV_VERSIONS)/$(1).*/bin/python)))
is_sid = $(filter $(1),$(SID_VERSIONS))
# The interpreter of version $(1), and the prefix that runs a command where it lives.
version_python = $(if $(call is_sid,$(1)),python$(1),$(call pyenv_python,$(1)))
in_place_of = $(if $(call is_sid,$(1)),SID_ROOT=$(SID_ROOT) $(SID) run)
version_present = $(if $(call is_sid,$(1)),$(and $(wildcard $(SID_ROOT)/.heatline-ready),$(wildcard $(SID_ROOT)/usr/bin/python$(1))),$(call pyenv_python,$(1)))
OTHER_VERSIONS := $(filter-out $(MAIN_VERSION),$(SUPPORTED))
PRESENT := $(foreach v,$(OTHER_VERSIONS),$(if $(call version_present,$(v)),$(v)))
ABSENT := $(filter-out $(PRESENT),$(OTHER_VERSIONS))
# The whole test suite: lint (ruff, clang-format), then every virtualenv built (one at a time:
# they share build/), then the suites two at a time, one a core (`suites`): the whole suite on
# $(PYTHON) and against an ASan+UBSan build, and on every other supported CPython the tests of
# what depends on the interpreter (all but those marked `interpreter_independent`; see
# `versions`). Each suite's output is printed whole when it ends; all run even if one fails.
test: lint format-check test-c
	$(MAKE) --no-print-directory venvs
	$(MAKE) --no-print-directory -j2 -k --output-sync=target suites

.PRECIOUS: .venv-3.%/.installed

venvs: $(INSTALLED) $(ASAN_INSTALLED) $(foreach v,$(PRESENT),.venv-$(v)/.installed)
	@if [ "$(HEATLINE_REQUIRE_PYTHONS)" = 1 ] && [ -n "$(ABSENT)" ]; then \
	  echo "heatline: CPython $(ABSENT) required (HEATLINE_REQUIRE_PYTHONS=1) but not installed" \
	    "(3.9-3.13 under $(PYENV_VERSIONS); 3.14 and 3.15: .ci/sid make)"; exit 1; fi

suites: sanitize unit $(foreach v,$(PRESENT),suite-$(v))
	@echo "heatline: whole suite on CPython $(MAIN_VERSION) and under ASan+UBSan;" \
	  "interpreter-dependent tests on $(or $(PRESENT),no other version)"
	@if [ -n "$(ABSENT)" ]; then echo "heatline: not installed, so not tested: CPython $(ABSENT)"; fi

# Python lint (ruff, configured in pyproject.toml; installed by the test extras).
lint: $(INSTALLED)
	$(VENV)/bin/ruff check .

# docs/cli.md, the reference of every command and option, generated from the commands' parsers
# and the option tables of src/heatline/options.py (src/heatline/cli/reference.py);
# tests/unit/test_cli_reference.py fails when it is out of date.
docs: $(INSTALLED)
	$(VENV)/bin/python -m heatline.cli.reference docs/cli.md

# C style (.clang-format): the C sources must be as clang-format writes them (`clang-format -i` fixes).
format-check: $(INSTALLED)
	$(VENV)/bin/clang-format --dry-run --Werror $(wildcard src/heatline/_native/*.[ch] tests/*/*.c)

# The C tier (tests/c): the engine's parts that need no interpreter (elf.c's symbol reading,
# linetable.c's decoders, compat.c's tables for another process), tested in C without the
# extension, against the dynamic loader and answers recorded from each CPython (tests/c/cases.h).
# Built with warnings as errors and run twice: plain, and under ASan+UBSan. compat.c is compiled
# against $(PYTHON)'s headers and linked with its libpython (the tested functions call none of it).
C_TESTS := build/c-tests
C_TEST_SOURCES = $(filter-out tests/c/fixture.c,$(wildcard tests/c/*.c)) \
	$(addprefix src/heatline/_native/,elf.c linetable.c compat.c)
C_TEST_FLAGS := -std=gnu11 -g -O1 -Wall -Wextra -Werror
C_TEST_PYTHON = $(shell $(PYTHON) -c 'import sysconfig as s; v = s.get_config_var; \
	print("-I" + s.get_paths()["include"], "-L" + v("LIBDIR"), "-L" + v("LIBPL"), \
	"-Wl,-rpath," + v("LIBDIR"), "-lpython" + v("LDVERSION"), v("LIBS"), v("SYSLIBS"))')
test-c:
	@mkdir -p $(C_TESTS)
	$(CC) $(C_TEST_FLAGS) -shared -fPIC -Wl,--build-id=sha1 -o $(C_TESTS)/libfixture.so tests/c/fixture.c
	$(CC) $(C_TEST_FLAGS) -o $(C_TESTS)/run $(C_TEST_SOURCES) $(C_TEST_PYTHON) -ldl
	$(CC) $(C_TEST_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all \
	  -o $(C_TESTS)/run-sanitized $(C_TEST_SOURCES) $(C_TEST_PYTHON) -ldl
	@echo "== C tests" && $(C_TESTS)/run $(C_TESTS)/libfixture.so
	@echo "== C tests under ASan+UBSan" && ASAN_OPTIONS=abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(C_TESTS)/run-sanitized $(C_TESTS)/libfixture.so

# -rx: an expected failure prints its reason, so a CI log keeps it.
unit: $(INSTALLED)
	HEATLINE_REQUIRE_MODULES='$(REQUIRED_MODULES)' $(VENV)/bin/python -m pytest -q -rx

# Their heatline is installed, not editable: any change to the package's sources reinstalls it.
HEATLINE_SOURCES := $(wildcard src/heatline/*.py src/heatline/*/*.py src/heatline/*/*/*.py \
	src/heatline/_native/*.[ch])
.venv-3.%/.installed: pyproject.toml setup.py $(HEATLINE_SOURCES)
	$(call in_place_of,3.$*) $(call version_python,3.$*) -m venv .venv-3.$*
	$(call in_place_of,3.$*) .venv-3.$*/bin/pip install $(PIP_FLAGS) --upgrade pip
	$(call in_place_of,3.$*) env HEATLINE_WERROR=1 .venv-3.$*/bin/pip install $(PIP_FLAGS) '.[test]'
	touch $@

suite-3.%: .venv-3.%/.installed
	@echo "== CPython 3.$*: .venv-3.$*, the interpreter-dependent tests"
	$(call in_place_of,3.$*) .venv-3.$*/bin/python -m pytest -q -rx -p no:cacheprovider \
	  -m 'not interpreter_independent'

versions:
	$(MAKE) --no-print-directory -j2 -k --output-sync=target $(foreach v,$(PRESENT),suite-$(v))

$(ASAN_INSTALLED): pyproject.toml setup.py $(ENGINE_SOURCES)
	$(PYTHON) -m venv $(ASAN_VENV)
	$(ASAN_VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	$(ASAN_VENV)/bin/pip install $(PIP_FLAGS) pytest numpy rich
	HEATLINE_SANITIZE=1 HEATLINE_WERROR=1 $(ASAN_VENV)/bin/pip install $(PIP_FLAGS) \
	  $(if $(ASAN_EXTRAS),'.[$(ASAN_REQUIRED_MODULES)]',--no-deps .)
	touch $@

# The interpreter is not instrumented, so the ASan runtime is preloaded. Leak checking is off
# because CPython itself keeps memory alive at exit. The sanitizers' reports go to files under
# SANITIZER_LOGS, printed at the end: a report written to descriptor 2 by the sampler thread,
# whose descriptor table is its own (docs/design-engine.md), would reach no one.
SANITIZER_LOGS := build/sanitizer-logs
sanitize: $(ASAN_INSTALLED)
	rm -rf $(SANITIZER_LOGS) && mkdir -p $(SANITIZER_LOGS)
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:log_path=$(CURDIR)/$(SANITIZER_LOGS)/asan \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/$(SANITIZER_LOGS)/ubsan \
	  HEATLINE_SANITIZED=1 HEATLINE_REQUIRE_MODULES='$(ASAN_REQUIRED_MODULES)' \
	  $(ASAN_VENV)/bin/python -m pytest -q -rx -p no:cacheprovider; \
	  status=$$?; for log in $(SANITIZER_LOGS)/*; do [ -f "$$log" ] && { echo "== $$log"; cat "$$log"; status=1; }; done; \
	  exit $$status

# heatline side by side with its peers (overhead and accuracy; see docs/overhead.md and
# docs/accuracy.md). Not part of the tests. Its own virtualenv: the peers pinned in
# bench/requirements.txt, heatline from this tree. `make bench` is the full run (about an hour on
# 2 cores) and renders the docs from bench/results/full.json; `make bench-quick` takes a few
# minutes and renders into bench/results/quick/ instead, leaving docs/ alone. `make bench-children`
# runs only the multi-process part (quick size) and renders its tables into docs/ (the other
# tables there are left as they are). `make bench-pool` measures what a pool costs under heatline
# (its CPU split by process, the same tasks in one process, heatline's per-child phases; add
# OTHER=DIR to compare with another heatline tree) and renders only docs/overhead.md's "Child
# processes" tables.
$(BENCH_VENV)/.installed: bench/requirements.txt pyproject.toml setup.py $(ENGINE_SOURCES)
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	$(BENCH_VENV)/bin/pip install $(PIP_FLAGS) -r bench/requirements.txt
	HEATLINE_WERROR=1 $(BENCH_VENV)/bin/pip install $(PIP_FLAGS) -e .
	touch $@

# The bench's heatline is the tree's, installed editable: its modules' bytecode is written here
# first (as `pip install` does for an installed package), or with PYTHONDONTWRITEBYTECODE set
# every profiled run would compile heatline's sources again (about 40 ms of CPU a run, charged
# to heatline's overhead, measured with callgrind: 305M instructions over python's against 145M).
BENCH_COMPILE := $(BENCH_VENV)/bin/python -m compileall -q src/heatline

bench: $(BENCH_VENV)/.installed
	$(BENCH_COMPILE)
	$(BENCH_VENV)/bin/python bench/run.py --out bench/results/full.json
	$(BENCH_VENV)/bin/python bench/render.py bench/results/full.json

bench-quick: $(BENCH_VENV)/.installed
	$(BENCH_COMPILE)
	$(BENCH_VENV)/bin/python bench/run.py --quick --out bench/results/quick.json
	$(BENCH_VENV)/bin/python bench/render.py bench/results/quick.json --docs-dir bench/results/quick

bench-children: $(BENCH_VENV)/.installed
	$(BENCH_COMPILE)
	$(BENCH_VENV)/bin/python bench/run.py --quick --children-only --out bench/results/children.json
	$(BENCH_VENV)/bin/python bench/render.py bench/results/children.json

bench-pool: $(BENCH_VENV)/.installed
	$(BENCH_COMPILE)
	$(BENCH_VENV)/bin/python bench/run.py --children-only --skip-accuracy --skip-startup --phases \
		--single --tools heatline,heatline-cpu,heatline-nochildren --rounds 7 \
		$(if $(OTHER),--other $(OTHER)) --out bench/results/pool.json
	$(BENCH_VENV)/bin/python bench/render.py bench/results/pool.json --parts pool

# heatline on several CPythons (VERSIONS_BENCH, 3.13 to 3.15 by default), one quick bench/run.py
# run a version, each in its own .venv-bench-3.X (bench/requirements-versions.txt, heatline from
# this tree): overhead on the quick benchmarks and accuracy on the ground-truth targets, beside
# py-spy and, on 3.15, the interpreter's own profiling.sampling (at its default 1 kHz and at
# heatline's 100 Hz); on 3.15 also dump and attach against profiling.sampling's on one running
# process (bench/vs_builtin.py). Rendered into docs/overhead.md and docs/accuracy.md
# ("versions" and "builtin" parts).
VERSIONS_BENCH ?= 3.13 3.14 3.15
VERSIONS_TOOLS := heatline,heatline-cpu,py-spy,profiling.sampling,profiling.sampling-100
.venv-bench-3.%/.installed: bench/requirements-versions.txt pyproject.toml setup.py $(HEATLINE_SOURCES)
	$(call in_place_of,3.$*) $(call version_python,3.$*) -m venv .venv-bench-3.$*
	$(call in_place_of,3.$*) .venv-bench-3.$*/bin/pip install $(PIP_FLAGS) --upgrade pip
	$(call in_place_of,3.$*) .venv-bench-3.$*/bin/pip install $(PIP_FLAGS) -r bench/requirements-versions.txt
	$(call in_place_of,3.$*) env HEATLINE_WERROR=1 .venv-bench-3.$*/bin/pip install $(PIP_FLAGS) .
	touch $@

.PRECIOUS: .venv-bench-3.%/.installed

bench-versions: $(foreach v,$(VERSIONS_BENCH),.venv-bench-$(v)/.installed)
	$(foreach v,$(VERSIONS_BENCH),$(call in_place_of,$(v)) .venv-bench-$(v)/bin/python bench/run.py \
	  --quick --skip-children --tools $(VERSIONS_TOOLS) --out bench/results/versions-$(v).json &&) true
	$(PYTHON) bench/render_versions.py $(foreach v,$(VERSIONS_BENCH),bench/results/versions-$(v).json)
	$(if $(filter 3.15,$(VERSIONS_BENCH)),$(call in_place_of,3.15) .venv-bench-3.15/bin/python \
	  bench/vs_builtin.py --out bench/results/vs-builtin-3.15.json && \
	  $(PYTHON) bench/vs_builtin.py --render bench/results/vs-builtin-3.15.json)

# CPython's own regression tests, plain and under heatline, compared test by test
# (bench/regrtest.py; figures in docs/accuracy.md, "CPython's own regression tests"). Not part
# of the tests: hours on 2 cores for the whole list. PYTHONS names the versions; each runs in
# the virtualenv the suite uses for it (.venv for $(PYTHON)'s, .venv-3.X for the others, made
# or refreshed here), 3.14 and 3.15 inside the chroot (.ci/sid). MODULES=test_os,test_sys narrows the list. Each
# version's results are merged into bench/results/regrtest.json, replacing that version's.
PYTHONS ?= $(MAIN_VERSION)
version_venv = $(if $(filter $(1),$(MAIN_VERSION)),$(VENV),.venv-$(1))
version_stamp = $(if $(filter $(1),$(MAIN_VERSION)),$(INSTALLED),.venv-$(1)/.installed)
REGRTEST_OUT = bench/results/regrtest-$(1).json
bench-regrtest: $(foreach v,$(PYTHONS),$(call version_stamp,$(v)))
	$(foreach v,$(PYTHONS),$(call in_place_of,$(v)) $(call version_venv,$(v))/bin/python \
	  bench/regrtest.py --python $(v)=$(call version_venv,$(v))/bin/python \
	  $(if $(MODULES),--modules $(MODULES)) --out $(call REGRTEST_OUT,$(v)) &&) true
	$(PYTHON) bench/regrtest.py --merge $(wildcard bench/results/regrtest.json) \
	  $(foreach v,$(PYTHONS),$(call REGRTEST_OUT,$(v))) --out bench/results/regrtest.json

# The memory ground-truth targets under valgrind's memcheck, profiled with memory on
# (tests/valgrind/run.sh; suppressions explained in tests/valgrind/python.supp).
valgrind: $(INSTALLED)
	PYTHON=$(VENV)/bin/python tests/valgrind/run.sh

clean:
	rm -rf $(VENV) $(DEMO_VENV) $(ASAN_VENV) $(BENCH_VENV) .venv-3.* .venv-bench-3.* build src/*.egg-info src/heatline/*.so
	rm -rf $(SID_ROOT)
