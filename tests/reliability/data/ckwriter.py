"""A training stand-in for the teardown-gate tests: a checkpoint every SAVE_EVERY seconds (0.2 by
default), rotation to GPUJOB_CHECKPOINT_KEEP, and a final save on SIGTERM. Resumes from the newest
checkpoint, like the quickstart's train.py; each checkpoint carries some bulk so a pull takes time."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

CKPT_DIR = Path(os.environ.get("GPUJOB_CHECKPOINT_DIR", "./ckpt"))
KEEP = int(os.environ.get("GPUJOB_CHECKPOINT_KEEP", "3"))
SAVE_EVERY = float(os.environ.get("SAVE_EVERY", "0.2"))
BULK = int(os.environ.get("BULK_BYTES", "200000"))


def checkpoints() -> list[Path]:
    return sorted(CKPT_DIR.glob("step_*.json"), key=lambda p: int(p.stem.split("_")[1]))


def latest_step() -> int:
    for path in reversed(checkpoints()):
        try:
            return int(json.loads(path.read_text())["step"])
        except (OSError, ValueError, KeyError):
            continue
    return 0


def save(step: int, final: bool = False) -> None:
    CKPT_DIR.mkdir(parents=True, exist_ok=True)
    target = CKPT_DIR / f"step_{step:06d}.json"
    tmp = target.with_suffix(".json.tmp")
    body = {"format": "toy-v1", "step": step, "final": final, "bulk": os.urandom(BULK // 2).hex()}
    with open(tmp, "w") as fh:
        json.dump(body, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    for old in checkpoints()[:-KEEP]:
        old.unlink(missing_ok=True)


def main() -> int:
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    step = latest_step()
    print(f"resumed from step {step}" if step else "starting fresh at step 0", flush=True)
    while not stop["now"]:
        time.sleep(SAVE_EVERY)
        step += 1
        save(step)
    step += 1
    save(step, final=True)  # the final save a run makes on SIGTERM
    print(f"SIGTERM: final save at step {step}", flush=True)
    return 143


if __name__ == "__main__":
    sys.exit(main())
