"""A results writer outside the launcher's process tree, for the outputs gate tests: started by the
job's command with `setsid ... &`, it double-forks (so it is nobody's child), then writes a small result
file into RESULTS_DIR every RESULT_EVERY seconds (atomically: a .tmp name, then rename) and one last
file when it gets SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

OUT = Path(os.environ.get("RESULTS_DIR", "/workspace/results"))
EVERY = float(os.environ.get("RESULT_EVERY", "0.05"))


def write(n: int, final: bool = False) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / f"result_{n:06d}.json"
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps({"n": n, "final": final, "pid": os.getpid(), "noise": os.urandom(64).hex()}))
    os.replace(tmp, target)


def main() -> int:
    if os.fork() > 0:  # double fork: the writer is reparented away from whoever started it
        return 0
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    n = len(list(OUT.glob("result_*.json"))) if OUT.is_dir() else 0
    while not stop["now"]:
        n += 1
        write(n)
        time.sleep(EVERY)
    write(n + 1, final=True)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
