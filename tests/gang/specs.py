"""Job files of multi-node jobs for the tests (JobSpec values, no file)."""

from __future__ import annotations

from typing import Any

from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveNode, SSHEndpoint


def gang_spec(
    nodes: int = 2, launcher: str = "none", writers: str = "rank0", gpus: int = 1, **run: Any
) -> JobSpec:
    return JobSpec.model_validate(
        {
            "version": 1,
            "name": "gang",
            "platform": "runpod",
            "machine": {"gpu": ["RTX4090"], "gpu_count": gpus, "nodes": nodes, "regions": ["EU-RO-1"]},
            "storage": {"volume_gb": 20},
            "checkpoint": {"dir": "/workspace/ckpt", "interval": "1m", "writers": writers},
            "run": {"command": "python train.py --lr 3e-4", "launcher": launcher, **run},
        }
    )


def live_nodes(count: int = 2, *, interface: str | None = "lo", rate: float | None = 0.5) -> list[LiveNode]:
    return [
        LiveNode(
            rank=r,
            machine_id=f"pod{r}",
            name=f"gpujob-gang-{r}",
            status="running",
            ssh=SSHEndpoint(host="127.0.0.1", port=2200 + r),
            private_ip=f"127.0.9.{r + 1}",
            interface=interface,
            cost_per_hour=rate,
        )
        for r in range(count)
    ]
