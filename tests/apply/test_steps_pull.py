"""A pull from a stopped machine starts it first, and stops it again when the pull fails."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gpujob.apply import steps
from gpujob.apply.context import JobContext
from gpujob.apply.journal import Journal
from gpujob.apply.progress import RecordingHooks
from gpujob.errors import GpujobError
from gpujob.live import LiveResource
from gpujob.plan.model import ActionKind
from tests.apply.fakes import FakeClock, FakeProvider, FakeSSH, action, make_spec
from tests.owners import PROJECT, machine, marker


def context(tmp_path: Path, ssh: FakeSSH) -> tuple[JobContext, FakeProvider]:
    prov = FakeProvider()
    state = tmp_path / ".gpujob"
    ctx = JobContext(
        spec=make_spec(storage={"network_volume": None, "volume_gb": 10}), spec_path=tmp_path / "job.yaml",
        provider=prov, state_dir=state, journal=Journal(state, "toy"), ssh=ssh.api(),  # type: ignore[arg-type]
        clock=FakeClock(), env={}, hooks=RecordingHooks(), approvals=set(), project=PROJECT,
    )  # fmt: skip
    ctx.machine = prov._save(
        LiveResource(
            platform="runpod", kind="pod", id="p1", name=machine("toy"), status="stopped", attributes=marker()
        )
    )
    return ctx, prov


def test_stopped_machine_is_started_for_the_pull(tmp_path: Path) -> None:
    ssh = FakeSSH(tmp_path, remote_files={"step_1.pt": b"weights"})
    ctx, prov = context(tmp_path, ssh)
    out = asyncio.run(steps.run(ctx, action("toy", ActionKind.PULL, resource_id="p1")))
    assert prov.calls == [("start", "p1")] and ctx.machine is not None and ctx.machine.status == "running"
    assert "pulled and verified 1 file" in out.detail


def test_failed_pull_stops_the_machine_it_started(tmp_path: Path) -> None:
    ssh = FakeSSH(tmp_path, remote_files={"step_1.pt": b"weights"}, corrupt={"step_1.pt"})
    ctx, prov = context(tmp_path, ssh)
    with pytest.raises(GpujobError, match="pull incomplete"):
        asyncio.run(steps.run(ctx, action("toy", ActionKind.PULL, resource_id="p1")))
    assert prov.calls == [("start", "p1"), ("stop", "p1")]
    assert ctx.machine is not None and ctx.machine.status == "stopped"


class ZeroGpuOnStart(FakeProvider):
    """RP1: the restart comes back running, but with zero GPUs, and the provider says so."""

    async def start(self, resource: LiveResource) -> LiveResource:
        from gpujob.providers.base import ZeroGpuError

        await super().start(resource)
        raise ZeroGpuError("pod p1 is running with zero GPUs", platform="runpod")


def test_zero_gpu_restart_is_enough_to_pull(tmp_path: Path) -> None:
    ssh = FakeSSH(tmp_path, remote_files={"step_1.pt": b"weights"})
    ctx, prov = context(tmp_path, ssh)
    zero = ZeroGpuOnStart()
    zero.resources, zero.calls = prov.resources, prov.calls
    ctx.provider = zero
    out = asyncio.run(steps.run(ctx, action("toy", ActionKind.PULL, resource_id="p1")))
    assert "pulled and verified 1 file" in out.detail
    assert ctx.machine is not None and ctx.machine.status == "running"
    assert any("zero GPUs (RP1)" in e[2] for e in ctx.hooks.events)  # type: ignore[attr-defined]
