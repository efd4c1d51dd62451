"""A CPU stand-in for a training script, using only the standard library.

It shows the resume recipe gpujob relies on: load the newest checkpoint unconditionally on start (the
same command starts fresh or resumes), write checkpoints atomically (temp file, fsync, rename, fsync
the directory), keep only the newest K, and finish after a fixed number of steps.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

CKPT_DIR = Path(os.environ.get("GPUJOB_CHECKPOINT_DIR", "./ckpt"))
INTERVAL_S = float(os.environ.get("GPUJOB_CHECKPOINT_INTERVAL", "2"))
KEEP = int(os.environ.get("GPUJOB_CHECKPOINT_KEEP", "3"))
TOTAL_STEPS = int(os.environ.get("TOTAL_STEPS", "400"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.1"))
WRITE_SECONDS = float(os.environ.get("CKPT_WRITE_SECONDS", "0"))  # stands in for a big model's write time
PROGRESS = os.environ.get("GPUJOB_PROGRESS_FILE")  # set by gpujob: where to report the current step


def checkpoints() -> list[Path]:
    """Finished checkpoints, oldest first (temp files of an interrupted write are ignored)."""
    return sorted(CKPT_DIR.glob("step_*.json"), key=lambda p: int(p.stem.split("_")[1]))


def load_latest() -> dict:
    """The newest checkpoint that loads; a damaged one is skipped, never fatal."""
    for path in reversed(checkpoints()):
        try:
            state = json.loads(path.read_text())
            if state.get("format") == "toy-v1":
                return state
        except (OSError, ValueError):
            continue
    return {"format": "toy-v1", "step": 0, "loss": 10.0}


def report(step: int) -> None:
    """One line with the current step, replaced atomically; `gpujob watch` reads it for goodput."""
    if PROGRESS:
        tmp = f"{PROGRESS}.tmp"
        with open(tmp, "w") as fh:
            fh.write(f"{step}\n")
        os.replace(tmp, PROGRESS)


def save(state: dict) -> Path:
    CKPT_DIR.mkdir(parents=True, exist_ok=True)
    time.sleep(WRITE_SECONDS)
    final = CKPT_DIR / f"step_{state['step']:06d}.json"
    tmp = final.with_suffix(".json.tmp")
    with open(tmp, "w") as fh:
        json.dump(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)  # atomic: a reader sees the old set or the new file, never half of it
    dfd = os.open(CKPT_DIR, os.O_DIRECTORY)
    try:
        os.fsync(dfd)  # the rename itself must reach the disk
    finally:
        os.close(dfd)
    for old in checkpoints()[:-KEEP]:
        old.unlink(missing_ok=True)
    return final


def main() -> int:
    stop = {"now": False}
    # SIGTERM from a preemption, SIGHUP from tmux going down with the pod: a bonus flush, not the safety net.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.update(now=True))
    state = load_latest()
    if state["step"]:
        print(f"resumed from step {state['step']}", flush=True)
    else:
        print("starting fresh at step 0", flush=True)
    last_save = time.monotonic()
    while state["step"] < TOTAL_STEPS:
        time.sleep(STEP_SECONDS)
        state["step"] += 1
        state["loss"] = round(state["loss"] * 0.99, 6)
        report(state["step"])
        if time.monotonic() - last_save >= INTERVAL_S or stop["now"]:
            path = save(state)
            print(f"step {state['step']} loss {state['loss']} checkpoint {path.name}", flush=True)
            last_save = time.monotonic()
        if stop["now"]:
            print(f"SIGTERM: saved step {state['step']}, exiting", flush=True)
            return 143
    save(state)
    print(f"done at step {state['step']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
