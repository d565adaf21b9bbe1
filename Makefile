# heatline: developer entry points. `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV := .venv
ASAN_VENV := .venv-asan
BENCH_VENV := .venv-bench
PIP_FLAGS := --quiet --disable-pip-version-check

.PHONY: demo test unit sanitize valgrind bench bench-quick clean

$(VENV)/.installed: pyproject.toml setup.py $(wildcard src/heatline/_native/*.[ch])
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	HEATLINE_WERROR=1 $(VENV)/bin/pip install $(PIP_FLAGS) -e '.[test]'
	touch $@

# Profile the bundled example program.
demo: $(VENV)/.installed
	$(VENV)/bin/heatline examples/demo.py

# The whole test suite: the normal build, then the same tests against an ASan+UBSan build.
test: unit sanitize

unit: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q

$(ASAN_VENV)/.installed: pyproject.toml setup.py $(wildcard src/heatline/_native/*.[ch])
	$(PYTHON) -m venv $(ASAN_VENV)
	$(ASAN_VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	$(ASAN_VENV)/bin/pip install $(PIP_FLAGS) pytest numpy rich
	HEATLINE_SANITIZE=1 HEATLINE_WERROR=1 $(ASAN_VENV)/bin/pip install $(PIP_FLAGS) --no-deps .
	touch $@

# The interpreter is not instrumented, so the ASan runtime is preloaded. Leak checking is off
# because CPython itself keeps memory alive at exit.
sanitize: $(ASAN_VENV)/.installed
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  HEATLINE_SANITIZED=1 $(ASAN_VENV)/bin/python -m pytest -q -p no:cacheprovider

# heatline side by side with its peers (overhead and accuracy; see docs/overhead.md and
# docs/accuracy.md). Not part of the tests. Its own virtualenv: the peers pinned in
# bench/requirements.txt, heatline from this tree. `make bench` is the full run (about an hour on
# 2 cores) and renders the docs from bench/results/full.json; `make bench-quick` takes a few
# minutes and renders into bench/results/quick/ instead, leaving docs/ alone.
$(BENCH_VENV)/.installed: bench/requirements.txt pyproject.toml setup.py $(wildcard src/heatline/_native/*.[ch])
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install $(PIP_FLAGS) --upgrade pip
	$(BENCH_VENV)/bin/pip install $(PIP_FLAGS) -r bench/requirements.txt
	HEATLINE_WERROR=1 $(BENCH_VENV)/bin/pip install $(PIP_FLAGS) -e .
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/run.py --out bench/results/full.json
	$(BENCH_VENV)/bin/python bench/render.py bench/results/full.json

bench-quick: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/run.py --quick --out bench/results/quick.json
	$(BENCH_VENV)/bin/python bench/render.py bench/results/quick.json --docs-dir bench/results/quick

# The memory ground-truth targets under valgrind's memcheck, profiled with memory on
# (tests/valgrind/run.sh; suppressions explained in tests/valgrind/python.supp).
valgrind: $(VENV)/.installed
	PYTHON=$(VENV)/bin/python tests/valgrind/run.sh

clean:
	rm -rf $(VENV) $(ASAN_VENV) $(BENCH_VENV) build src/*.egg-info src/heatline/*.so
