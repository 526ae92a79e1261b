# Two entry points for people: `make run` and `make test`. Everything else is a step they depend on.
PYTHON ?= python3
VENV := .venv
UV := $(VENV)/bin/uv
UV_VERSION := 0.13.8
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
export UV_PYTHON := $(abspath $(VENV))/bin/python

.PHONY: run test install install-dev lint typecheck unit conformance bench

$(UV):
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet uv==$(UV_VERSION)

# --inexact keeps uv itself (and dev tools, for `make run` after `make test`) in the venv.
install: $(UV)
	$(UV) sync --frozen --inexact --no-dev --quiet

install-dev: $(UV)
	$(UV) sync --frozen --inexact --quiet

run: install
	$(VENV)/bin/giftgenius serve

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install-dev
	$(VENV)/bin/mypy

unit: install-dev
	$(VENV)/bin/pytest

# The official MCP conformance suites against examples/everything (needs Node and ../shared).
conformance: install-dev
	$(VENV)/bin/python scripts/conformance.py

test: lint typecheck unit conformance

bench: install-dev
	$(VENV)/bin/python bench/compare.py
