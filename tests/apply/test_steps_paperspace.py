"""Paperspace in-place steps with in-memory fakes: the auto_shutdown update (planner and apply) and the
static-IP claim (claim once, adopt a journalled claim, stop/assign/start a running machine)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpujob.apply import steps
from gpujob.apply.context import JobContext
from gpujob.apply.journal import Journal
from gpujob.apply.progress import RecordingHooks
from gpujob.errors import GpujobError
from gpujob.live import LiveResource, LiveState, SSHEndpoint
from gpujob.plan.model import ActionKind, FieldChange
from gpujob.plan.planner import build_plan
from gpujob.spec.load import load_specs
from tests.apply.fakes import FakeClock, FakeProvider, FakeSSH, action, make_spec
from tests.owners import PROJECT
from tests.owners import machine as machine_name

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
JOB = """version: 1
name: ps
platform: paperspace
machine:
  gpu: [A4000]
  regions: [ny2]
  template: ubuntu-22.04
  auto_shutdown: {hours}
  public_ip: {ip}
storage:
  volume_gb: 50
"""


def machine(**kw: Any) -> LiveResource:
    base: dict[str, Any] = dict(
        platform="paperspace", kind="machine", id="m1", name=machine_name("ps"), status="running", raw_status="ready",
        gpu_id="A4000", gpu_count=1, region="ny2", volume_gb=50, template="ubuntu-22.04",
        public_ip="127.0.9.9", public_ip_kind="dynamic", auto_shutdown_hours=2.0,
    )  # fmt: skip
    return LiveResource(**{**base, **kw})


class FakePaperspace(FakeProvider):
    """The Paperspace extras: PUT /machines/{id} with the sticky-timer quirk, claim/assign IPs."""

    def __init__(self) -> None:
        super().__init__("paperspace")
        self.puts: list[dict[str, Any]] = []
        self.n = 0

    async def update(self, resource: LiveResource, changes: dict[str, Any]) -> LiveResource:
        self.puts.append(dict(changes))
        m = self.resources[resource.id]
        enabled = m.auto_shutdown_hours is not None
        if changes.get("autoShutdownEnabled") is False:
            m = m.model_copy(update={"auto_shutdown_hours": None})
        elif not enabled and changes.get("autoShutdownEnabled"):
            m = m.model_copy(update={"auto_shutdown_hours": float(changes["autoShutdownTimeout"])})
        return self._save(m)

    async def claim_ip(self, region: str, machine_id: str | None = None) -> LiveResource:
        self.n += 1
        self.calls.append(("claim_ip", region))
        ip = f"127.0.200.{self.n}"
        return self._save(
            LiveResource(platform="paperspace", kind="public_ip", id=ip, name="", status="available",
                         region=region, public_ip=ip, public_ip_kind="static")
        )  # fmt: skip

    async def assign_ip(self, ip: str, machine_id: str | None) -> LiveResource:
        self.calls.append(("assign_ip", f"{ip}->{machine_id}"))
        m = self.resources[machine_id or ""]
        assert m.status == "stopped", "the fake, like the step, assigns only to a machine that is off"
        self._save(m.model_copy(update={"public_ip": ip, "public_ip_kind": "static"}))
        rec = self.resources[ip].model_copy(update={"machine_id": machine_id, "name": m.name})
        return self._save(rec)

    async def start(self, resource: LiveResource) -> LiveResource:
        self.calls.append(("start", resource.id))
        fresh = self.resources[resource.id]
        return self._save(
            fresh.model_copy(
                update={"status": "running", "ssh": SSHEndpoint(host=fresh.public_ip or "", port=22)}
            )
        )


def context(tmp_path: Path, prov: FakeProvider, **spec_over: Any) -> JobContext:
    spec = make_spec(
        name="ps", platform="paperspace", storage={"volume_gb": 50, "network_volume": None},
        machine={"gpu": ["A4000"], "regions": ["ny2"], "template": "ubuntu-22.04", "spot": False,
                 "image": None, "public_ip": "static"},
        checkpoint=None, run=None, **spec_over,
    )  # fmt: skip
    state = tmp_path / ".gpujob"
    return JobContext(
        spec=spec, spec_path=tmp_path / "job.yaml", provider=prov, state_dir=state,  # type: ignore[arg-type]
        journal=Journal(state, "ps"), ssh=FakeSSH(tmp_path).api(), clock=FakeClock(), env={},
        hooks=RecordingHooks(), approvals=set(), project=PROJECT,
    )  # fmt: skip


def plan_for(tmp_path: Path, hours: str, ip: str, m: LiveResource) -> list[tuple[str, ActionKind]]:
    path = tmp_path / "job.yaml"
    path.write_text(JOB.format(hours=hours, ip=ip))
    loaded = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([path])]
    plan = build_plan(loaded, LiveState(read_at=NOW, resources=[m]), now=NOW, env={})
    assert not plan.blocked, plan.all_findings()
    return [(a.id, a.kind) for a in plan.all_actions() if a.kind is not ActionKind.NOOP]


def test_planner_updates_a_changed_auto_shutdown_in_place(tmp_path: Path) -> None:
    assert plan_for(tmp_path, "2h", "dynamic", machine()) == []
    assert plan_for(tmp_path, "6h", "dynamic", machine()) == [
        ("ps.machine[auto_shutdown].update", ActionKind.UPDATE)
    ]
    stopped = machine(status="stopped", raw_status="off", public_ip=None)
    kinds = [k for _, k in plan_for(tmp_path, "6h", "dynamic", stopped)]
    assert kinds == [ActionKind.START, ActionKind.UPDATE]  # no replace: the timer is not immutable


@pytest.mark.parametrize(("before", "after", "puts"), [
    (2.0, 6.0, [{"autoShutdownEnabled": False},
                {"autoShutdownEnabled": True, "autoShutdownTimeout": 6.0, "autoShutdownForce": True}]),
    (None, 6.0, [{"autoShutdownEnabled": True, "autoShutdownTimeout": 6.0, "autoShutdownForce": True}]),
    (2.0, None, [{"autoShutdownEnabled": False}]),
])  # fmt: skip
def test_auto_shutdown_update_is_disable_then_enable(
    tmp_path: Path, before: float | None, after: float | None, puts: list[dict[str, Any]]
) -> None:
    prov = FakePaperspace()
    ctx = context(tmp_path, prov)
    ctx.machine = prov._save(machine(auto_shutdown_hours=before))
    act = action("ps", ActionKind.UPDATE, "machine", resource_id="m1",
                 changes=[FieldChange(path="auto_shutdown_hours", before=before, after=after)])  # fmt: skip
    out = asyncio.run(steps.run(ctx, act))
    assert prov.puts == puts
    assert ctx.machine.auto_shutdown_hours == after and out.resource_id == "m1"


def test_auto_shutdown_that_does_not_take_fails_loudly(tmp_path: Path) -> None:
    prov = FakePaperspace()
    prov.update = lambda r, c: asyncio.sleep(0, result=r)  # type: ignore[method-assign]  # PUT ignored
    ctx = context(tmp_path, prov)
    ctx.machine = prov._save(machine())
    act = action("ps", ActionKind.UPDATE, "machine", resource_id="m1",
                 changes=[FieldChange(path="auto_shutdown_hours", before=2.0, after=6.0)])  # fmt: skip
    with pytest.raises(GpujobError, match=r"reads 2\.0h after setting 6h"):
        asyncio.run(steps.run(ctx, act))


def ip_action() -> Any:
    return action("ps", ActionKind.CREATE, "public_ip")


def test_static_ip_is_claimed_in_the_machine_region_and_assigned_while_off(tmp_path: Path) -> None:
    prov = FakePaperspace()
    ctx = context(tmp_path, prov)
    ctx.machine = prov._save(machine())
    out = asyncio.run(steps.run(ctx, ip_action()))
    assert [c for c in prov.calls if c[0] != "launch"] == [
        ("claim_ip", "ny2"), ("stop", "m1"), ("assign_ip", "127.0.200.1->m1"), ("start", "m1")
    ]  # fmt: skip
    assert out.resource_id == "127.0.200.1" and ctx.machine.public_ip == "127.0.200.1"
    assert ctx.machine.status == "running" and ctx.moved
    # Run again (e.g. the done line was lost): the machine holds an IP, nothing is claimed.
    prov.calls.clear()
    again = asyncio.run(steps.run(ctx, ip_action()))
    assert prov.calls == [] and "already has static IP 127.0.200.1" in again.detail


def test_a_claim_left_by_a_killed_apply_is_adopted_not_doubled(tmp_path: Path) -> None:
    prov = FakePaperspace()
    ctx = context(tmp_path, prov)
    ctx.machine = prov._save(machine(status="stopped", raw_status="off", public_ip=None))
    orphan = asyncio.run(prov.claim_ip("ny2"))
    stranger = asyncio.run(prov.claim_ip("ny2"))  # someone else's unassigned IP: never taken
    ctx.journal.append("intent", NOW, action_id=ip_action().id, resource_id=orphan.id, detail="claimed")
    prov.calls.clear()
    out = asyncio.run(steps.run(ctx, ip_action()))
    assert out.resource_id == orphan.id != stranger.id
    assert prov.calls == [("assign_ip", f"{orphan.id}->m1")]  # off: no stop, no start, no second claim
