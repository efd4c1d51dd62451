"""A tiny gloo training loop for the multi-node tests, run under torchrun on every node: each step one
all-reduce across every process of every node, then a checkpoint (node 0's, or every node's shard when
GANG_WRITERS=all; node 0 is NODE_RANK 0, whatever global rank c10d gave it), written atomically; on start it resumes from the newest step it has. Prints one
line per step: `rank R/W step S sum X`. STEPS steps (default 3), STEP_SECONDS apart."""

import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
node = int(os.environ["NODE_RANK"])
ckdir = os.environ.get("GPUJOB_CHECKPOINT_DIR", "./ckpt")
# c10d hands out the global ranks in the order the nodes join: "node 0 writes" is NODE_RANK's, not RANK's.
first_on_node = int(os.environ.get("LOCAL_RANK", "0")) == 0
writes = first_on_node and (node == 0 or os.environ.get("GANG_WRITERS") == "all")
os.makedirs(ckdir, exist_ok=True)
have = sorted(int(n[5:-3]) for n in os.listdir(ckdir) if n.startswith("step-") and n.endswith(".pt"))
start = torch.tensor([have[-1] if have else 0])
dist.all_reduce(start, op=dist.ReduceOp.MIN)  # every node resumes from a step all of them have
first = int(start.item())
print(f"node {node} rank {rank}/{world} resumes at step {first}", flush=True)
for step in range(first + 1, int(os.environ.get("STEPS", "3")) + 1):
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    if writes:
        tmp = os.path.join(ckdir, f".step-{step:06d}.pt.tmp")
        torch.save({"step": step, "sum": t.item()}, tmp)
        os.replace(tmp, os.path.join(ckdir, f"step-{step:06d}.pt"))
    progress = os.environ.get("GPUJOB_PROGRESS_FILE")
    if progress and writes:
        with open(progress, "w") as f:
            f.write(f"{step}\n")
    print(f"rank {rank}/{world} step {step} sum {t.item():g}", flush=True)
    dist.barrier()
    time.sleep(float(os.environ.get("STEP_SECONDS", "0")))
dist.destroy_process_group()
sys.exit(0)
