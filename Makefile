# One virtual environment for everything; re-installed only when pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench schemas docs site goldens fuzz clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/nflow-sim < examples/quickstart/diagram.json > $(VENV)/demo-result.json
	$(PY) examples/quickstart/summary.py $(VENV)/demo-result.json
	@echo "nflow-sim is in $(VENV)/bin/: run $(VENV)/bin/nflow-sim, or activate the environment (. $(VENV)/bin/activate)"

# The FMU tests compile small C models: they need a C compiler (CC, else cc or gcc).
test: $(STAMP)
	@command -v $${CC:-cc} >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || \
		{ echo "make test: the FMU tests need a C compiler (set CC, or apt-get install gcc)" >&2; exit 1; }
	$(PY) -m pytest

# Fuzzing: NFLOW_FUZZ_EXAMPLES cases in all (random, fresh each run; `make test` runs a seeded slice).
FUZZ_EXAMPLES ?= 10000
fuzz: $(STAMP)
	NFLOW_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest tests/system/test_fuzz.py -s -p no:cacheprovider --hypothesis-show-statistics

schemas: $(STAMP)
	$(PY) -m nflow_compat.schema --write schemas

docs: $(STAMP)
	$(PY) -m nflow_compat.docs --write docs/blocks

# The documentation site into site/ (mkdocs.yml; the `docs` extra, which `test` brings), warnings
# as errors; the gallery's pages and plots are made by running examples/ (docs/hooks/gallery.py).
site: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

goldens: $(STAMP)
	$(PY) -m tests.goldens --regenerate-regression

bench: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) -m bench

clean:
	rm -rf $(VENV) build *.egg-info site
