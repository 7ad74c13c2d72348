# The two commands of the README: `make run` (main job) and `make test` (all tests).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PACKAGES := packages/tcast-spec packages/tcast-ref packages/tcast-torch packages/tcast-triton
STAMP := $(VENV)/.tcast-installed

.PHONY: run test lint venv clean

venv: $(STAMP)

# One pip call installs every package editable with the pinned test dependencies,
# so the siblings resolve to the local checkouts.
$(STAMP): requirements-dev.txt $(foreach p,$(PACKAGES),$(p)/pyproject.toml)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet $(foreach p,$(PACKAGES),-e $(p)) -r requirements-dev.txt
	touch $(STAMP)

# The main job (grows with later issues): the catalog, then the core datatypes in full.
CORE := mxfp8 mxfp8e5 mxfp6e2 mxfp6e3 mxfp4 mxint8 nvfp4
run: $(STAMP)
	$(VENV)/bin/tcast info --catalog
	@for name in $(CORE); do echo; $(VENV)/bin/tcast info $$name || exit 1; done

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(foreach p,$(PACKAGES),$(p)/tests) tests

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV)
