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
"$py" -m pip install -q -e '.[test]'
where=$("$py" -c 'import sys; print(sys.prefix)')
echo "gpujob installed in $where"
if [ "$py" = "$PWD/.venv/bin/python" ]; then
  echo "make demo and make test use it; in your shell: . .venv/bin/activate  (then: gpujob --help)"
fi
