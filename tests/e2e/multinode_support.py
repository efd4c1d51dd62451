"""What the multi-node end-to-end tests share (docs/multinode.md): the 2-node job files on either
platform, the test commands copied into the project, and reads of the simulator's members."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.e2e.e2e_support import Project

CODE = Path(__file__).resolve().parents[1] / "gang" / "code"
# Each xdist worker its own rendezvous port: two workers' simulators may hand out the same private address.
PORT = 20000 + os.getpid() % 20000

RUNPOD_MACHINE = """\
machine:
  gpu: H100-80GB
  nodes: 2
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
  container_disk_gb: 20
storage:
  volume_gb: 20
"""
PAPERSPACE_MACHINE = """\
machine:
  gpu: A6000
  nodes: 2
  regions: [ny2]
  template: ml-in-a-box
  public_ip: dynamic
storage:
  volume_gb: 50
  mount: /workspace
"""


def job_text(
    platform: str = "runpod",
    *,
    command: str = "python3 exchange.py",
    writers: str = "all",
    pull: str = "",
    env: dict[str, str] | None = None,
    on_finish: str | None = None,
    budget: int = 40,
    verify: str = "python3 verify_json.py {file}",
) -> str:
    """A 2-node job of `command` (launcher: none) on `platform`, every writer's checkpoints verified."""
    envs = "".join(f'    {k}: "{v}"\n' for k, v in (env or {}).items())
    return (
        f"version: 1\nname: mn\nplatform: {platform}\n"
        + (RUNPOD_MACHINE if platform == "runpod" else PAPERSPACE_MACHINE)
        + "checkpoint:\n  dir: /workspace/ckpt\n  interval: 10m\n  pull_to: ./checkpoints\n"
        + f"  writers: {writers}\n  verify: {verify}\n"
        + (f"  pull: {pull}\n" if pull else "")
        + (f"teardown:\n  on_finish: {on_finish}\n" if on_finish else "")
        + f"budget:\n  max_hourly_usd: {budget}\n"
        + f"run:\n  command: {command}\n  detach: nohup\n  rendezvous_port: {PORT}\n"
        + (f"  env:\n{envs}" if envs else "")
    )


def project_with(p: Project, text: str) -> None:
    """The test commands and job file in the project's checkout."""
    for f in CODE.iterdir():
        if f.is_file():
            shutil.copy(f, p.dir / f.name)
    (p.dir / "job.yaml").write_text(text)


def live_members(p: Project) -> list[dict[str, Any]]:
    """The simulator's cluster member pods not ended, in rank order (RunPod)."""
    with p.sim.engine.lock:
        pods = [x.model_dump(mode="json") for x in p.sim.engine.state.pods.values()]
    pods = [x for x in pods if x.get("cluster") and x["ended_at"] is None]
    return sorted(pods, key=lambda x: x["cluster"]["rank"])


def billing_rates(p: Project) -> list[dict[str, Any]]:
    """The simulator's bill items still billing."""
    return [i for i in p.sim.bill()["items"] if i["rate_per_hour"] > 0]
