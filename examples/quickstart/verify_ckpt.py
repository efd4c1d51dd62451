"""Load check for a pulled checkpoint: exits 0 when it is a complete toy-v1 checkpoint, 1 otherwise."""

from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    try:
        with open(path) as fh:
            state = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"{path}: cannot load: {exc}", file=sys.stderr)
        return 1
    if state.get("format") != "toy-v1" or not isinstance(state.get("step"), int) or state["step"] < 1:
        print(f"{path}: not a toy-v1 checkpoint", file=sys.stderr)
        return 1
    print(f"{path}: ok, step {state['step']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else 2)
