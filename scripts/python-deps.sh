#!/usr/bin/env bash
# Install gpujob (editable) and its test tools into the right Python, for `make install`:
#   - the active virtualenv, when there is one;
#   - else the given Python, when it takes packages (pip present, not marked externally managed);
#   - else a fresh ./.venv (Debian/Ubuntu/Homebrew Pythons refuse `pip install` outside a venv: PEP 668),
#     which `make demo` / `make test` then use.
# usage: scripts/python-deps.sh PYTHON
set -euo pipefail
py=${1:-python3}
cd "$(dirname "$0")/.."

takes_packages() {
  "$1" -m pip --version >/dev/null 2>&1 || return 1
  "$1" - <<'PY' || return 1
import os, sys, sysconfig
sys.exit(1 if os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")) else 0)
PY
}

if [ -z "${VIRTUAL_ENV:-}" ] && [ "$py" != "$PWD/.venv/bin/python" ] && ! takes_packages "$py"; then
  if [ ! -x .venv/bin/python ]; then
    echo "$py does not take packages outside a virtualenv: making ./.venv"
    "$py" -m venv .venv
  fi
  py="$PWD/.venv/bin/python"
fi
# The newest versions pyproject.toml's ranges allow (eager: installed ones are upgraded too), as a new user
# gets them; GPUJOB_PINNED=1 (`make install-pinned`) takes constraints.txt, the last known-good set, to
# reproduce a failure that a new release of a dependency brought.
if [ "${GPUJOB_PINNED:-}" = 1 ]; then
  "$py" -m pip install -q -e '.[test]' -c constraints.txt
else
  "$py" -m pip install -q --upgrade --upgrade-strategy eager -e '.[test]'
fi
# torch, for the multi-node e2e test only (a real torchrun, gloo on CPU, across simulated nodes; gpujob
# never imports it): the CPU build, not the CUDA one (~200 MB instead of several GB). On CI's machines
# pip's configuration finds torch-2.13.0+cpu on local disk; elsewhere set GPUJOB_TORCH_INDEX to a CPU
# index (e.g. https://download.pytorch.org/whl/cpu) or PyPI's default build is taken.
# Kept off the Python's path, in <prefix>/lib/gpujob-test-torch (tests/torchenv.py: the test that needs
# it puts it on its run's PYTHONPATH): installed beside gpujob it would change what every other test
# runs (the starter trains with torch when it can import it, and each simulated pod would import it).
torch_dir="$("$py" -c 'import sys; from pathlib import Path; print(Path(sys.prefix).resolve() / "lib" / "gpujob-test-torch")')"
if ! PYTHONPATH="$torch_dir" "$py" -c 'import torch; assert torch.__version__.startswith("2.13.0")' 2>/dev/null; then
  torch_from=()
  if [ -n "${GPUJOB_TORCH_INDEX:-}" ]; then torch_from=(--extra-index-url "$GPUJOB_TORCH_INDEX"); fi
  "$py" -m pip install -q --upgrade --target "$torch_dir" "${torch_from[@]}" 'torch==2.13.0'
fi
PYTHONPATH="$torch_dir" "$py" -c 'import torch.distributed as d; assert d.is_gloo_available(), "torch without gloo"'
# RunPod's own Python SDK, for one test only (tests/sim/test_runpod_graphql.py drives the simulator with
# it): in a virtualenv of its own, because it pulls ~70 packages (fastapi, boto3, ...) and newer pins
# of some gpujob uses; gpujob never imports it.
if [ ! -x .venv-runpod-sdk/bin/python ]; then
  "$py" -m venv .venv-runpod-sdk
fi
.venv-runpod-sdk/bin/python -m pip install -q 'runpod==1.12.0'
where=$("$py" -c 'import sys; print(sys.prefix)')
echo "gpujob installed in $where"
if [ "$py" = "$PWD/.venv/bin/python" ]; then
  echo "make demo and make test use it; in your shell: . .venv/bin/activate  (then: gpujob --help)"
fi
