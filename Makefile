# The Python gpujob runs on: the active virtualenv's, else ./.venv once `make install` made one (when
# the system Python refuses packages, PEP 668), else $(PYTHON).
PYTHON ?= python3
ifdef VIRTUAL_ENV
PY ?= python
else ifneq ($(wildcard .venv/bin/python),)
PY ?= $(CURDIR)/.venv/bin/python
else
PY ?= $(PYTHON)
endif
export PY
# Compiled bytecode is kept, out of the checkout (under the temporary directory), not switched off: the
# suite starts thousands of `python -m gpujob` processes, and each would compile gpujob afresh.
export PYTHONPYCACHEPREFIX ?= $(or $(TMPDIR),/tmp)/gpujob-pycache-$(shell id -u)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install install-pinned constraints deps test test-fast lint mutation schemas demo bench golden clean

install:            ## system packages (apt/dnf/brew, asks first) + gpujob and its test tools (editable)
	PYTHON=$(PYTHON) scripts/system-deps.sh install
	scripts/python-deps.sh $(PY)

install-pinned:     ## like install, with constraints.txt's last known-good versions (to reproduce a failure)
	PYTHON=$(PYTHON) scripts/system-deps.sh install
	GPUJOB_PINNED=1 scripts/python-deps.sh $(PY)

constraints:        ## record the installed versions as constraints.txt (after a green make test)
	$(PY) scripts/constraints.py

# Two test workers per core: the e2e tests spend most of their time waiting for a run (steps, checkpoints,
# watch ticks), so two workers on two cores left the machine half idle (load ~1.5; docs/testing.md).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) * 2 )))

test:               ## the full suite (~10 min on 2 cores; as root or an ordinary user; see docs/install.md)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal -q --durations=10

deps:               ## only check the system packages; prints what to install
	PYTHON=$(PYTHON) scripts/system-deps.sh check

test-fast:          ## unit tests only, no simulator or sshd (under a minute)
	$(PY) -m pytest -n auto -q -m "not sim and not ssh" --hypothesis-profile=fast --durations=10

lint:               ## the floor contracts (.importlinter, scripts/floor_check.py, docs/architecture.md) + ruff + mypy
	$(PY) -c 'from importlinter.cli import lint_imports_command; lint_imports_command()'  # lint-imports, from the right Python
	$(PY) scripts/floor_check.py
	$(PY) -m ruff check gpujob tests bench
	$(PY) -m ruff format --check gpujob tests bench
	$(PY) -m mypy gpujob

# mutmut's own command (it warns when started as `python -m mutmut`): in $(PY)'s scripts dir (not beside
# `command -v $(PY)`, which under pyenv is a shim), else on PATH.
MUTMUT ?= $(or $(wildcard $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/mutmut),mutmut)

mutation:           ## mutation testing of the cost engine and the teardown gate (~20 min, 2 workers; not CI)
	rm -rf mutants
	$(MUTMUT) run --max-children 2
	$(MUTMUT) results --all true | $(PY) scripts/mutation_scores.py

schemas:            ## regenerate schemas/*.json, gpujob/spec/fastrules.json and docs/job-file.md's reference from the models
	$(PY) -m gpujob.schemas
	$(PY) -m gpujob.spec.fastgen
	$(PY) scripts/job_reference.py

golden:             ## rewrite golden plan files after a reviewed change
	GPUJOB_UPDATE_GOLDEN=1 $(PY) -m pytest tests -q -k golden

demo:               ## the whole loop against the local simulator (no account needed); non-zero when it cannot
	bash examples/quickstart/demo.sh

bench:              ## benchmark harness: figures vs floors, writes bench/results.json
	$(PY) -m bench

clean:
	rm -rf .pytest_cache build dist *.egg-info
