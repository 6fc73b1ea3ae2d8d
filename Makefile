# The two entry points a new user needs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# Compiled sources (the per-operation core, engine/_core.pyx): an edit rebuilds.
CORE_SRC := $(wildcard src/tenferro/*.pyx src/tenferro/*/*.pyx src/tenferro/*/*/*.pyx src/tenferro/*.pxd src/tenferro/*/*.pxd src/tenferro/*/*.pxi)

# Re-install (and so re-compile the core) whenever pyproject.toml or a .pyx/.pxd/.pxi changes.
$(STAMP): pyproject.toml $(CORE_SRC) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m tenferro demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python -m tenferro bench

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
	find src -name '*.so' -delete -o -name '_core.c' -delete -o -name '_fields.c' -delete
