"""A sweep cell for the tests: STEPS steps of STEP_S seconds, a checkpoint after each (atomic), resume
from the newest; at the end its result in $GPUJOB_CELL_DIR. Every start and finish is appended there,
so the test can count them."""

import json
import os
import signal
import sys
import time

cell, out, ck = os.environ["GPUJOB_CELL"], os.environ["GPUJOB_CELL_DIR"], os.environ["GPUJOB_CHECKPOINT_DIR"]
steps, step_s = int(os.environ.get("STEPS", "4")), float(os.environ.get("STEP_S", "1"))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
done = [
    int(n.split("_")[1].split(".")[0])
    for n in os.listdir(ck)
    if n.startswith("step_") and n.endswith(".json")
]
start = max(done, default=0)
with open(os.path.join(out, "starts.txt"), "a") as f:
    f.write(f"{cell} from {start}\n")
for step in range(start + 1, steps + 1):
    time.sleep(step_s)
    tmp = os.path.join(ck, f".step_{step:04d}.tmp")
    with open(tmp, "w") as f:
        json.dump({"step": step}, f)
    os.replace(tmp, os.path.join(ck, f"step_{step:04d}.json"))
    print(f"{cell} step {step}", flush=True)
with open(os.path.join(out, "result.json"), "w") as f:
    json.dump(
        {
            "LR": os.environ["LR"],
            "SEED": os.environ["SEED"],
            "cell": cell,
            "resumed_from": start,
            "MSG": os.environ.get("MSG"),
        },
        f,
    )
with open(os.path.join(out, "finishes.txt"), "a") as f:
    f.write(f"{cell}\n")
