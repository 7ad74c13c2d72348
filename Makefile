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
	# AMD Quark, a test-only oracle for MX6/MX9: only its pure-PyTorch emulation is used, and
	# its declared dependencies (pyarrow, pandas, onnx, datasets...) would add ~700 MB.
	$(PY) -m pip install --quiet --no-deps amd-quark==0.13
	touch $(STAMP)

# The main job: the core golden-vector sets (level 1) into ./out, every installed engine
# verified against them (summary table), and a byte comparison with the committed sets.
run: $(STAMP)
	$(VENV)/bin/tcast golden --core --out out
	$(VENV)/bin/tcast verify out/* --engine all --quiet
	diff -r -x header.json out tests/golden && echo "out/: vectors byte-identical to tests/golden/"

# Tests run on every core (at most 4 workers; tests sharing an expensive module fixture
# carry one xdist_group so that one worker computes it). The Triton engine's tests run in a
# second invocation under the Triton CPU interpreter, which must be chosen before triton is
# imported (on a machine without a GPU the first invocation leaves the engine out).
CPU_PACKAGES := $(filter-out packages/tcast-triton,$(PACKAGES))
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n auto --maxprocesses 4 --dist loadgroup $(foreach p,$(CPU_PACKAGES),$(p)/tests) tests
	TRITON_INTERPRET=1 $(PY) -m pytest -n auto --maxprocesses 4 packages/tcast-triton/tests

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV)
