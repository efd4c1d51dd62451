"""Helpers for planner tests (imported as plan_helpers: tests/plan is on sys.path, no package)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpujob import naming
from gpujob.live import LiveResource, LiveState
from tests.owners import PROJECT, machine, marker
from tests.owners import volume as owned_volume

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
A100 = "NVIDIA A100 80GB PCIe"
H100 = "NVIDIA H100 80GB HBM3"
DIGEST = "runpod/pytorch@sha256:" + "ab" * 32


def ago(hours: float) -> datetime:
    return NOW - timedelta(hours=hours)


def live(*resources: LiveResource, **kw: object) -> LiveState:
    return LiveState(read_at=NOW, resources=list(resources), **kw)  # type: ignore[arg-type]


def legacy_id(name: str) -> str:
    """A short stable id from a name: gpujob-job--ckpts--testproj -> gpujob-job-ckpts."""
    return name.removesuffix(f"--{PROJECT}").replace("--", "-")


def pod(name: str = machine("job"), **kw: object) -> LiveResource:
    """A running RunPod pod; one with a gpujob name carries its project's env marker."""
    owner = naming.parse(name)
    base: dict[str, object] = dict(
        platform="runpod",
        kind="pod",
        id=f"pod-{legacy_id(name)}",
        name=name,
        status="running",
        raw_status="RUNNING",
        gpu_id=A100,
        gpu_count=1,
        cloud="secure",
        region="EU-RO-1",
        image=DIGEST,
        container_disk_gb=20,
        created_at=ago(5),
    )
    attributes = kw.pop("attributes", {})
    assert isinstance(attributes, dict)
    base.update(kw)
    base["attributes"] = {**(marker(owner.project) if owner else {}), **attributes}  # project: None unmarks
    return LiveResource(**base)  # type: ignore[arg-type]


def volume(name: str = owned_volume("job", "ckpts"), **kw: object) -> LiveResource:
    base: dict[str, object] = dict(
        platform="runpod",
        kind="network_volume",
        id=f"nv-{legacy_id(name)}",
        name=name,
        status="available",
        volume_gb=100,
        volume_tier="standard",
        region="EU-RO-1",
        created_at=ago(10),
    )
    base.update(kw)
    return LiveResource(**base)  # type: ignore[arg-type]


RUNPOD_JOB = f"""
version: 1
name: job
platform: runpod
state: running
machine:
  gpu: A100-80GB
  regions: [EU-RO-1]
  image: {DIGEST}
  container_disk_gb: 20
storage:
  network_volume: {{name: ckpts, size_gb: 100}}
checkpoint:
  dir: /workspace/ckpt
  interval: 30m
run:
  command: python train.py
"""
