# heatline: developer entry points. `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV := .venv
ASAN_VENV := .venv-asan
PIP_FLAGS := --quiet --disable-pip-version-check

.PHONY: demo test unit sanitize bench clean

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

# Overhead and accuracy benchmarks (not part of the tests; see docs/overhead.md, docs/accuracy.md).
bench: $(VENV)/.installed
	$(VENV)/bin/python bench/overhead.py
	$(VENV)/bin/python bench/accuracy.py

clean:
	rm -rf $(VENV) $(ASAN_VENV) build src/*.egg-info src/heatline/*.so
