"""The pull planned before a terminate starts no stopped pod whose data all stays on its network volume
(issue 37: `gpujob destroy` started each stopped queue pod of a shared-volume sweep to pull checkpoints
that stay on the volume, whose own delete pulls every cell through a temporary pod)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.apply import steps
from gpujob.apply.volume_stays import stays_on_volume
from gpujob.live import LiveResource
from gpujob.plan.model import ActionKind
from gpujob.spec.load import load_specs

SWEEP = """version: 1
name: abl
platform: runpod
machine:
  gpu: [RTX4090]
  cloud: secure
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
storage: {mount: /workspace, network_volume: {name: cells, size_gb: 10}}
checkpoint: {dir: /workspace/ckpt, interval: 1s, verify: "python3 -m json.tool {file}"}
run:
  command: python3 cell.py
sweep:
  machines: 2
  matrix: {LR: ["1e-3", "1e-4"]}
  est: 20m
"""
POD = LiveResource(platform="runpod", kind="pod", id="p1", name="gpujob-abl--q1", status="stopped",
                   network_volume_id="nv1")  # fmt: skip


class _NoStart:
    async def get(self, kind: str, rid: str) -> Any:
        return POD

    async def start(self, machine: Any) -> Any:
        raise AssertionError(f"started {machine.name} to pull what stays on its volume")


def _ctx(tmp_path: Path, text: str, todo: list[Any] = (), machine: LiveResource = POD) -> Any:  # type: ignore[assignment]
    (tmp_path / "job.yaml").write_text(text)
    spec = load_specs([tmp_path / "job.yaml"])[0].spec
    notes: list[str] = []
    return SimpleNamespace(
        spec=spec, machine=machine, todo=list(todo), provider=_NoStart(), note=notes.append
    )


def test_a_stopped_queue_pod_on_the_sweeps_shared_volume_is_not_started_for_the_pull(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path, SWEEP)
    out = asyncio.run(steps.pull(ctx, SimpleNamespace(id="abl.q1.checkpoints.pull")))
    assert out.resource_id == "p1"
    assert "gpujob-abl--q1 is stopped and not started for the pull" in out.detail
    assert "network volume nv1, which stays" in out.detail and "temporary pod" in out.detail


@pytest.mark.parametrize("status", ["running", "stopped"])
def test_the_pull_still_reads_a_pod_that_runs_or_whose_own_volume_this_apply_deletes(
    tmp_path: Path, status: str
) -> None:
    plain = SWEEP.split("sweep:")[0]
    delete = SimpleNamespace(kind=ActionKind.DELETE_VOLUME, resource_id="nv1")
    machine = POD.model_copy(update={"status": status, "name": "gpujob-abl"})
    assert stays_on_volume(_ctx(tmp_path, plain, [delete], machine), machine) is None
    if status == "stopped":  # the volume stays: nothing the terminate erases is on the pod
        kept = stays_on_volume(_ctx(tmp_path, plain, [], machine), machine)
        assert kept is not None and "temporary pod" not in kept
    no_volume = machine.model_copy(update={"network_volume_id": None})
    assert stays_on_volume(_ctx(tmp_path, plain, [], no_volume), no_volume) is None
