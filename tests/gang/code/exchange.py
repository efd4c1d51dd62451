"""The launcher: none test's command: print NODE_RANK and WORLD_SIZE, then exchange one message with
the other node over MASTER_ADDR:MASTER_PORT (node 0 listens, node 1 connects)."""

import os
import socket
import time

rank, world = int(os.environ["NODE_RANK"]), os.environ["WORLD_SIZE"]
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
print(f"NODE_RANK={rank} WORLD_SIZE={world}", flush=True)
if rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    s.settimeout(60)
    c, _ = s.accept()
    c.sendall(b"hello from node 0\n")
    print("node 0 heard:", c.makefile().readline().strip(), flush=True)
else:
    for _ in range(600):
        try:
            c = socket.create_connection((addr, port), timeout=2)
            break
        except OSError:
            time.sleep(0.1)
    c.sendall(f"hello from node {rank}\n".encode())
    print(f"node {rank} heard:", c.makefile().readline().strip(), flush=True)

ckdir = os.environ.get("GPUJOB_CHECKPOINT_DIR")
if ckdir:  # one checkpoint step per node (checkpoint.writers: all), written atomically
    os.makedirs(ckdir, exist_ok=True)
    with open(os.path.join(ckdir, ".step-000001.json.tmp"), "w") as f:
        f.write(f'{{"node": {rank}}}\n')
    os.replace(os.path.join(ckdir, ".step-000001.json.tmp"), os.path.join(ckdir, "step-000001.json"))
