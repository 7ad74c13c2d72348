# The two commands of the README: `make run` (main job) and `make test` (all tests);
# `make docs` builds the HTML API reference into site/.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PACKAGES := packages/tcast-spec packages/tcast-ref packages/tcast-torch packages/tcast-triton
STAMP := $(VENV)/.tcast-installed

.PHONY: run test lint docs venv clean

venv: $(STAMP)

# One pip call installs every package editable with the pinned test dependencies,
# so the siblings resolve to the local checkouts.
# Each step says what it does first; pip prints every package as it goes.
$(STAMP): requirements-dev.txt $(foreach p,$(PACKAGES),$(p)/pyproject.toml)
	@test -x $(PY) || { echo "==> creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "==> installing tcast-spec, tcast-ref, tcast-torch, tcast-triton (editable) and the pinned"
	@echo "    development tools of requirements-dev.txt (torch, triton, ...): a minute or two the first time"
	$(PY) -m pip install --progress-bar on $(foreach p,$(PACKAGES),-e $(p)) -r requirements-dev.txt
	@# AMD Quark, a test-only oracle for MX6/MX9: only its pure-PyTorch emulation is used, and
	@# its declared dependencies (pyarrow, pandas, onnx, datasets...) would add ~700 MB.
	@echo "==> installing amd-quark 0.13 without its dependencies (a test-only oracle)"
	$(PY) -m pip install --progress-bar on --no-deps amd-quark==0.13
	@touch $(STAMP)
	@echo "==> $(VENV) is ready"

# The main job: the core golden-vector sets (level 1) into ./out, every installed engine
# verified against them (summary table), and a byte comparison with the committed sets.
run: $(STAMP)
	@echo "==> tcast golden --core: the golden-vector sets of the core datatypes into out/"
	$(VENV)/bin/tcast golden --core --out out
	@echo "==> tcast verify: every installed engine against them"
	$(VENV)/bin/tcast verify out/* --engine all --quiet
	@echo "==> out/ against the committed sets in tests/golden/"
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

# The HTML API reference of every package, from the docstrings (pdoc; Triton under its CPU
# interpreter, so no GPU is needed); any pdoc warning fails the build.
docs: $(STAMP)
	rm -rf site
	$(PY) docs/build_api.py site

clean:
	rm -rf $(VENV) site
