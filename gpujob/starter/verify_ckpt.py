"""Load check for a pulled checkpoint (checkpoint.verify in job.yaml): exit 0 when the file loads and
holds a complete training state, 1 otherwise, with the reason on stderr. gpujob runs it on each pulled
file; the teardown gate wants every one to pass. Make it load your checkpoints the way train.py does."""

from __future__ import annotations

import json
import math
import sys


def load(path: str) -> dict:
    if path.endswith(".pt"):
        import torch  # a PyTorch checkpoint needs PyTorch here too

        return dict(torch.load(path, map_location="cpu", weights_only=True))
    with open(path) as fh:
        return dict(json.load(fh))


def main(path: str) -> int:
    try:
        state = load(path)
    except Exception as exc:  # whatever makes it unloadable is the answer
        print(f"{path}: cannot load: {exc}", file=sys.stderr)
        return 1
    missing = [k for k in ("format", "step", "model", "optimizer", "rng") if k not in state]
    if missing:
        print(f"{path}: incomplete state, missing {', '.join(missing)}", file=sys.stderr)
        return 1
    if state["format"] != "gpujob-starter-v1" or int(state["step"]) < 1:
        print(f"{path}: not a gpujob-starter-v1 checkpoint past step 0", file=sys.stderr)
        return 1
    loss = float(state.get("loss", float("nan")))
    if not math.isfinite(loss):
        print(f"{path}: loss is {loss}", file=sys.stderr)
        return 1
    print(f"{path}: ok, step {state['step']}, loss {loss:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else 2)
