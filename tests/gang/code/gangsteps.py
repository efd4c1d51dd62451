"""The node-loss tests' command (launcher: none, checkpoint.writers: all), no torch: the nodes agree on
the newest step both have (node 1 sends node 0 its newest over MASTER_ADDR:MASTER_PORT, node 0 answers
with the smaller), then each writes one checkpoint step every STEP_SECONDS, atomically, to STEPS. Prints
`node R resumes at step S` once per start and `node R step S` per step."""

import os
import socket
import time

rank = int(os.environ["NODE_RANK"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
ckdir = os.environ["GPUJOB_CHECKPOINT_DIR"]
os.makedirs(ckdir, exist_ok=True)
have = sorted(int(n[5:11]) for n in os.listdir(ckdir) if n.startswith("step-") and n.endswith(".json"))
mine = have[-1] if have else 0
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    s.settimeout(120)
    c, _ = s.accept()
    first = min(mine, int(c.makefile().readline()))
    c.sendall(f"{first}\n".encode())
else:
    deadline = time.monotonic() + 120
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    c.sendall(f"{mine}\n".encode())
    first = int(c.makefile().readline())
print(f"node {rank} resumes at step {first}", flush=True)
with open(f"gangsteps-{rank}.pid", "w") as f:  # the tests kill one node's run by it
    f.write(f"{os.getpid()}\n")
for step in range(first + 1, int(os.environ.get("STEPS", "3")) + 1):
    tmp = os.path.join(ckdir, f".step-{step:06d}.json.tmp")
    with open(tmp, "w") as f:
        f.write(f'{{"node": {rank}, "step": {step}}}\n')
    os.replace(tmp, os.path.join(ckdir, f"step-{step:06d}.json"))
    progress = os.environ.get("GPUJOB_PROGRESS_FILE")
    if progress and rank == 0:
        with open(progress, "w") as f:
            f.write(f"{step}\n")
    print(f"node {rank} step {step}", flush=True)
    time.sleep(float(os.environ.get("STEP_SECONDS", "0")))
