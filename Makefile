# trainjob-compiler developer tasks. `make test` installs everything it needs first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
UPSTREAM ?= ../shared/upstream

.PHONY: setup test lint typecheck unit golden bench schemas schemas-check gofacts render clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

lint: setup
	$(BIN)/ruff check compiler schemas tests bench
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/python -m pytest

test: lint typecheck schemas-check unit

schemas-check: setup
	@if [ -d "$(UPSTREAM)" ]; then $(BIN)/python -m schemas.generate --check $(UPSTREAM); \
	else echo "schemas-check: $(UPSTREAM) not found, skipped"; fi

schemas: setup
	$(BIN)/python -m schemas.generate $(UPSTREAM)

# Facts about Go's JSON encoding of the JobSet types, from the pinned Go modules (needs Go).
gofacts:
	cd schemas/gotypes && GOFLAGS=-mod=mod go run . > ../../compiler/_go_facts.py

golden: setup
	TJC_UPDATE_GOLDEN=1 $(BIN)/python -m pytest -q tests/test_golden.py
	git diff --stat -- golden/

bench: setup
	$(BIN)/python -m bench.run

render: setup
	$(BIN)/tjc render examples/

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build *.egg-info
