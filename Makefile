PY ?= python3
export PYTHONDONTWRITEBYTECODE=1

.PHONY: install test test-fast lint schemas demo bench golden clean

install:            ## install gpujob and the test tools (editable); the system tools the tests use are checked
	$(PY) -m pip install -q -e '.[test]'
	@command -v sshd >/dev/null && command -v tmux >/dev/null && command -v rsync >/dev/null \
	  && (ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null) \
	  || echo "note: the tests also need openssh-server, tmux, rsync and postgresql (apt-get install them, as .ci/run does)"

test:               ## the full suite (needs root for the simulator's namespaces; .ci/run installs sshd/tmux/rsync)
	$(PY) -m pytest -n auto -q

test-fast:          ## unit tests only, no simulator or sshd
	$(PY) -m pytest -n auto -q -m "not sim and not ssh"

lint:               ## ruff + mypy
	$(PY) -m ruff check gpujob tests bench
	$(PY) -m ruff format --check gpujob tests bench
	$(PY) -m mypy gpujob

schemas:            ## regenerate schemas/*.json from the pydantic models
	$(PY) -m gpujob.schemas

golden:             ## rewrite golden plan files after a reviewed change
	GPUJOB_UPDATE_GOLDEN=1 $(PY) -m pytest tests -q -k golden

demo:               ## plan and apply against the local simulator (no account needed)
	bash examples/quickstart/demo.sh

bench:              ## benchmark harness: figures vs floors, writes bench/results.json
	$(PY) -m bench

clean:
	rm -rf .pytest_cache build dist *.egg-info
