"""Kit for the ownership and saved-plan tests (issue 11, items 6 and 10): the real simulator with real
pods, checkout directories of their own (each its own .gpujob/ and so its own project id), and the
gpujob CLI run as real processes in them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpujob import naming
from gpujob.sim.testing import Sim
from tests.cli_process import run_gpujob

IMAGE = "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"

# No run and no checkpoint: apply creates the volume and the pod and is done (the teardown gate's own
# checks are another suite's; here only ownership and plan files are under test).
JOB = """\
version: 1
name: {name}
platform: runpod
state: {state}
machine:
  gpu: [RTX4090, A6000]
  regions: [EU-RO-1]
  image: {image}
  container_disk_gb: 10
storage:
  mount: /workspace
  network_volume: {{name: {volume}, size_gb: 10}}
"""


def job_text(name: str, volume: str = "ckpts", state: str = "running") -> str:
    return JOB.format(name=name, volume=volume, state=state, image=IMAGE)


@contextmanager
def pods_simulator(data_dir: Path) -> Iterator[Sim]:
    """The simulator with real pods (sshd in namespaces); fails, never skips, when it cannot run here."""
    import pytest

    from gpujob.sim.podproc import namespaces_available
    from gpujob.sim.testing import running_simulator

    ok, why = namespaces_available()
    if not ok:
        pytest.fail(f"these tests need the simulator's pods (namespaces, sshd) and cannot run here: {why}")
    with running_simulator(data_dir, provision_seconds=0.05, boot_seconds=0.0) as sim:
        yield sim


@dataclass
class Checkout:
    """One checkout of a project: a directory with job files and its own .gpujob/."""

    dir: Path
    sim: Sim
    outputs: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
        return {**env, **self.sim.env, "CI": "true", "NO_COLOR": "1"}

    def write(self, name: str, text: str) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / name
        path.write_text(text)
        return path

    def gj(self, *args: str, check: bool = True, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        proc = run_gpujob(args, cwd=self.dir, env=self.env, timeout=timeout)
        self.outputs.append(proc.stdout + proc.stderr)
        assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        if check and proc.returncode != 0:
            raise AssertionError(
                f"gpujob {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "gpujob", *args],
            cwd=self.dir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    @property
    def project_id(self) -> str:
        return str(json.loads((self.dir / ".gpujob" / "project.json").read_text())["id"])

    def machine(self, job: str) -> str:
        return naming.machine_name(job, self.project_id)

    def volume(self, job: str, volume: str = "ckpts") -> str:
        return naming.volume_name(job, volume, self.project_id)


def account(sim: Sim) -> dict[str, tuple[Any, ...]]:
    """Everything the simulated account holds, by id, with what an action would change (existence,
    status, end): equal before and after means nothing was created, stopped or deleted."""
    state = sim.control("state")
    out: dict[str, tuple[Any, ...]] = {}
    for kind in ("pods", "volumes", "machines", "ips", "snapshots"):
        for key, obj in state[kind].items():
            out[str(obj.get("id") or key)] = (kind, obj.get("name"), obj.get("status"), obj.get("ended_at"))
    return out


def alive(sim: Sim, kind: str = "pods") -> list[dict[str, Any]]:
    return [
        o
        for o in sim.control("state")[kind].values()
        if o.get("ended_at") is None and o.get("status") != "TERMINATED"
    ]
