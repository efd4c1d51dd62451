"""A minimal resumable training loop that keeps gpujob's job contract (docs/job-file.md: "Your job's side of the
contract"). Replace the toy model and data with yours; keep the checkpoint recipe.

It runs on a CPU. With PyTorch importable it trains a torch.nn.Linear with SGD and saves PyTorch
checkpoints (step_*.pt); without PyTorch it runs the same loop in plain Python and saves JSON
checkpoints (step_*.json), so you can rehearse it anywhere (the simulator's pods have no PyTorch).

The recipe:
  - the same command starts fresh or resumes: on start, load the newest checkpoint that loads;
  - a checkpoint is the full state (model, optimizer, step, random generator), written atomically:
    a temporary name, flushed to disk, renamed into place, the directory flushed;
  - every GPUJOB_CHECKPOINT_INTERVAL seconds, keeping the newest GPUJOB_CHECKPOINT_KEEP;
  - on SIGTERM (a spot preemption, a stop) or SIGHUP, one last save when the grace allows it, then exit.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

torch: Any  # the module, or None: plain Python below (typed alike whether or not torch is installed)
try:
    torch = importlib.import_module("torch")
except ImportError:
    torch = None

CKPT_DIR = Path(os.environ.get("GPUJOB_CHECKPOINT_DIR", "./ckpt"))
INTERVAL_S = float(os.environ.get("GPUJOB_CHECKPOINT_INTERVAL", "600"))
KEEP = int(os.environ.get("GPUJOB_CHECKPOINT_KEEP", "3"))
PROGRESS_FILE = os.environ.get("GPUJOB_PROGRESS_FILE")  # optional: gpujob watch reads the step from it
STEPS = int(os.environ.get("TRAIN_STEPS", "3000"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0"))  # slows the toy down so you can watch it
SUFFIX = ".pt" if torch is not None else ".json"
FORMAT = "gpujob-starter-v1"
TRUE_W, TRUE_B = (3.0, -2.0), 0.5  # the toy task: learn y = 3·x1 − 2·x2 + 0.5


class TorchModel:
    def __init__(self) -> None:
        torch.manual_seed(0)
        self.net = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.05)
        self.gen = torch.Generator().manual_seed(1)  # the data order is state too

    def step(self) -> float:
        x = torch.randn(64, 2, generator=self.gen)
        y = x @ torch.tensor([[TRUE_W[0]], [TRUE_W[1]]]) + TRUE_B
        loss = ((self.net(x) - y) ** 2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return float(loss.item())

    def state(self) -> dict[str, Any]:
        return {
            "model": self.net.state_dict(),
            "optimizer": self.opt.state_dict(),
            "rng": self.gen.get_state(),
        }

    def load(self, state: dict[str, Any]) -> None:
        self.net.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.gen.set_state(state["rng"])

    @staticmethod
    def write(state: dict[str, Any], fh: Any) -> None:
        torch.save(state, fh)

    @staticmethod
    def read(path: Path) -> dict[str, Any]:
        return dict(torch.load(path, map_location="cpu", weights_only=True))


class PlainModel:
    """The same model and SGD in plain Python."""

    def __init__(self) -> None:
        self.w, self.b, self.lr = [0.0, 0.0], 0.0, 0.05
        self.rng = random.Random(1)

    def step(self) -> float:
        gw, gb, loss = [0.0, 0.0], 0.0, 0.0
        for _ in range(64):
            x = (self.rng.gauss(0, 1), self.rng.gauss(0, 1))
            err = (
                self.w[0] * x[0] + self.w[1] * x[1] + self.b - (TRUE_W[0] * x[0] + TRUE_W[1] * x[1] + TRUE_B)
            )
            loss += err * err / 64
            gw = [gw[0] + 2 * err * x[0] / 64, gw[1] + 2 * err * x[1] / 64]
            gb += 2 * err / 64
        self.w = [self.w[0] - self.lr * gw[0], self.w[1] - self.lr * gw[1]]
        self.b -= self.lr * gb
        return loss

    def state(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        return {
            "model": {"w": self.w, "b": self.b},
            "optimizer": {"lr": self.lr},
            "rng": [version, list(internal), gauss],
        }

    def load(self, state: dict[str, Any]) -> None:
        self.w, self.b = list(state["model"]["w"]), float(state["model"]["b"])
        self.lr = float(state["optimizer"]["lr"])
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))

    @staticmethod
    def write(state: dict[str, Any], fh: Any) -> None:
        fh.write(json.dumps(state).encode())

    @staticmethod
    def read(path: Path) -> dict[str, Any]:
        return dict(json.loads(path.read_text()))


Model = TorchModel if torch is not None else PlainModel


def checkpoints() -> list[Path]:
    """Finished checkpoints, oldest first (an interrupted write left only a .tmp file, never listed)."""
    return sorted(CKPT_DIR.glob(f"step_*{SUFFIX}"), key=lambda p: int(p.stem.split("_")[1]))


def load_latest() -> dict[str, Any] | None:
    """The newest checkpoint that loads; a damaged one is skipped, never fatal."""
    for path in reversed(checkpoints()):
        try:
            state = Model.read(path)
        except Exception as exc:  # any unreadable file: try the one before it
            print(f"skipping {path.name}: {exc}", flush=True)
            continue
        if state.get("format") == FORMAT:
            return state
    return None


def save(state: dict[str, Any]) -> Path:
    CKPT_DIR.mkdir(parents=True, exist_ok=True)
    final = CKPT_DIR / f"step_{state['step']:08d}{SUFFIX}"
    tmp = final.with_name(final.name + ".tmp")
    with open(tmp, "wb") as fh:
        Model.write(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)  # atomic: a reader sees the old set or the whole new file, never half of it
    dfd = os.open(CKPT_DIR, os.O_DIRECTORY)
    try:
        os.fsync(dfd)  # the rename itself must reach the disk
    finally:
        os.close(dfd)
    for old in checkpoints()[:-KEEP]:
        old.unlink(missing_ok=True)
    return final


def report(step: int) -> None:
    if PROGRESS_FILE:
        tmp = f"{PROGRESS_FILE}.tmp"
        Path(tmp).write_text(f"{step}\n")
        os.replace(tmp, PROGRESS_FILE)


def main() -> int:
    stop = {"now": False}
    # A preemption or stop sends SIGTERM; the tmux server going down with the pod hangs up the run's
    # terminal (SIGHUP) at the same moment. Either one: a last save, then exit. It is a bonus, not the
    # safety net: the grace may be too short for a big model, and the periodic checkpoints remain.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.update(now=True))
    model = Model()
    state = load_latest()
    step = 0
    if state is None:
        print(f"starting fresh at step 0 ({'PyTorch' if torch is not None else 'plain Python'})", flush=True)
    else:
        model.load(state)
        step = int(state["step"])
        print(f"resumed from step {step}", flush=True)
    last_save = last_report = time.monotonic()
    loss = float("nan")
    while step < STEPS and not stop["now"]:
        loss = model.step()
        step += 1
        if STEP_SECONDS:
            time.sleep(STEP_SECONDS)
        now = time.monotonic()
        if now - last_report >= 1.0:
            report(step)
            print(f"step {step} loss {loss:.6f}", flush=True)
            last_report = now
        if now - last_save >= INTERVAL_S:
            path = save({"format": FORMAT, "step": step, "loss": loss, **model.state()})
            print(f"step {step}: checkpoint {path.name}", flush=True)
            last_save = now
    path = save({"format": FORMAT, "step": step, "loss": loss, **model.state()})
    report(step)
    if stop["now"]:
        print(f"SIGTERM: saved {path.name} at step {step}, exiting", flush=True)  # (or SIGHUP)
        return 143
    print(f"done at step {step}, loss {loss:.6f}: {path.name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
