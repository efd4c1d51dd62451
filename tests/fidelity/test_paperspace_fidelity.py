"""Paperspace as the real API answers (bodies in tests/fixtures/paperspace, transcribed from the
Paperspace CLI's generated spec), through the client, the provider and the planner.

Items 1, 2, 3 (machine disk) and 10 of issue 12: a machine object has no templateId, so the plan right
after a create must not propose to replace it; template names resolve to ids; a disk grows with PUT
diskSize while the machine is off; auto-shutdown is whole hours; a cancelled event is a failure; the disk
size is never diffed against storageTotal.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import respx

from gpujob.errors import ProviderError
from gpujob.live import LiveState
from gpujob.plan.model import ActionKind, Plan
from gpujob.plan.planner import build_plan
from gpujob.plan.records import LaunchRecord
from gpujob.providers.base import LaunchRequest
from gpujob.providers.paperspace import wire
from gpujob.providers.paperspace.normalize import machine_to_live
from gpujob.providers.registry import open_providers
from gpujob.spec.checks import platform_problems
from tests.fixtures.bodies import ps
from tests.owners import PROJECT
from tests.owners import machine as machine_name
from tests.providers.conftest import FAKE_ENV, FakeClock
from tests.providers.provider_fakes import PAPERSPACE, PaperspaceFake

NOW = datetime(2024, 12, 11, 9, 0, tzinfo=UTC)
JOB = """
version: 1
name: resnet
platform: paperspace
state: running
machine:
  gpu: A4000
  regions: [ny2]
  template: {template}
  auto_shutdown: 12h
storage:
  volume_gb: {disk}
"""


def _live(body: dict[str, Any]) -> LiveState:
    # The fixture's machine, named as this checkout's job resnet (gpujob.naming).
    body = {**body, "name": machine_name("resnet")}
    machine = machine_to_live(wire.Machine.model_validate(body), ssh_port=22, ssh_user="paperspace")
    return LiveState(read_at=NOW, resources=[machine])


def _record(**kw: Any) -> LaunchRecord:
    base: dict[str, Any] = dict(
        job="resnet", platform="paperspace", resource_id="psk8q2m1xv", template="ML-in-a-Box",
        template_id="tkni3aa4", disk_gb=50, at=NOW,
    )  # fmt: skip
    return LaunchRecord(**{**base, **kw})


def _plan(
    write_job: Callable[[str], Any], body: dict[str, Any], record: LaunchRecord | None, **job: Any
) -> Plan:
    text = JOB.format(**{"template": "ML-in-a-Box", "disk": 50, **job})
    records = {"resnet": record} if record else None
    return build_plan([write_job(text)], _live(body), now=NOW, env={}, launch_records=records)


def _kinds(plan: Plan) -> list[ActionKind]:
    return [a.kind for a in plan.all_actions() if a.kind is not ActionKind.NOOP]


def test_a_real_machine_object_reports_no_template_and_an_approximate_disk() -> None:
    body = ps("machine")
    assert "templateId" not in body and "diskSize" not in body  # what the spec's machine has
    m = _live(body).resources[0]
    assert m.template is None
    assert m.volume_gb == 50 and m.attributes["disk_gb_source"] == "storageTotal"
    assert m.status == "running" and m.region == "ny2" and m.auto_shutdown_hours == 12


@pytest.mark.parametrize("written", ["ML-in-a-Box", "ml-in-a-box", "tkni3aa4"])
def test_plan_right_after_create_is_empty(write_job: Callable[[str], Any], written: str) -> None:
    """Item 1: the template the machine was created with is in the launch record, by name and id."""
    plan = _plan(write_job, ps("machine"), _record(template=written), template=written)
    assert _kinds(plan) == [], [a.reasons for a in plan.all_actions()]
    assert not [f for f in plan.all_findings() if f.severity == "error"]


def test_no_launch_record_is_not_a_template_change(write_job: Callable[[str], Any]) -> None:
    """Without a record the template is unknown: unknown never forces a replacement (and a wipe)."""
    plan = _plan(write_job, ps("machine"), None)
    assert _kinds(plan) == []


def test_a_real_template_change_still_replaces(write_job: Callable[[str], Any]) -> None:
    plan = _plan(write_job, ps("machine"), _record(), template="Ubuntu 22.04")
    (replace,) = [a for a in plan.all_actions() if a.kind is ActionKind.REPLACE]
    (change,) = [c for c in replace.changes if c.path == "template"]
    assert (change.before, change.after, change.forces_replacement) == ("ML-in-a-Box", "Ubuntu 22.04", True)


def test_disk_is_compared_with_the_size_recorded_at_create_never_storage_total(
    write_job: Callable[[str], Any],
) -> None:
    """Item 10: storageTotal is what the OS sees (here 48 GiB of a 50 GB disk)."""
    body = {**ps("machine"), "storageTotal": str(48 * 1024**3)}
    assert _kinds(_plan(write_job, body, _record(disk_gb=50))) == []
    plan = _plan(write_job, body, None)  # no record: no diff, and the plan says why
    assert _kinds(plan) == []
    assert any(f.code == "disk-unknown" for f in plan.all_findings())
    grow = _plan(write_job, body, _record(disk_gb=50), disk=100)
    (update,) = [a for a in grow.all_actions() if a.kind is ActionKind.UPDATE]
    assert [(c.path, c.before, c.after) for c in update.changes] == [("volume_gb", 50, 100)]
    assert any("stopped for the resize" in r and "started again" in r for r in update.reasons)


def test_auto_shutdown_takes_whole_hours_only() -> None:
    """Item 10: autoShutdownTimeout counts hours; 90m is refused with the hour to write instead."""
    job = {"version": 1, "name": "x", "platform": "paperspace",
           "machine": {"gpu": "A4000", "template": "t0nspur5", "auto_shutdown": "90m"}}  # fmt: skip
    (problem,) = platform_problems(job)
    assert (
        problem.key_path == "machine.auto_shutdown"
        and "whole hours" in problem.message
        and "2h" in problem.hint
    )
    assert platform_problems({**job, "machine": {**job["machine"], "auto_shutdown": "2h"}}) == []


# --- through the client and the provider (respx, fixture bodies) ---------------------------------


def _request(template: str, **kw: Any) -> LaunchRequest:
    return LaunchRequest(
        name=machine_name("resnet"), gpu_id="A4000", template=template, region="ny2", volume_gb=50,
        ssh_public_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEy7 gpujob", **kw,
    )  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("written", "sent"),
    [("ML-in-a-Box", "tkni3aa4"), ("ml-in-a-box", "tkni3aa4"), ("t0nspur5", "t0nspur5"),
     ("ubuntu-22.04", "t0nspur5")],
)  # fmt: skip
async def test_template_name_resolves_to_the_id_the_api_takes(
    router: respx.Router, clock: FakeClock, written: str, sent: str
) -> None:
    """Item 2: POST /machines gets the template id, and the created machine carries what the record needs."""
    fake = PaperspaceFake(router)
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        m = await p["paperspace"].create_machine(_request(written, auto_shutdown_hours=12.0))
    (created,) = fake.machines.values()
    assert created["_body"]["templateId"] == sent
    assert created["_body"]["autoShutdownTimeout"] == 12 and isinstance(
        created["_body"]["autoShutdownTimeout"], int
    )
    assert m.template == sent and m.volume_gb == 50 and m.attributes["disk_gb_source"] == "create"


@pytest.mark.anyio
async def test_unknown_template_is_refused_before_anything_is_created(
    router: respx.Router, clock: FakeClock
) -> None:
    fake = PaperspaceFake(router)
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(ProviderError) as info:
            await p["paperspace"].create_machine(_request("ubuntu 2204"))
    assert "not an OS or custom template" in str(info.value)
    assert info.value.hint and "did you mean 'Ubuntu 22.04' (t0nspur5)" in info.value.hint
    assert fake.machines == {} and fake.scripts == {}  # no machine, no startup script: nothing touched
    sent = [c.request for c in router.calls]
    assert {r.method for r in sent} == {"GET"}


@pytest.mark.anyio
async def test_custom_template_found_by_name(router: respx.Router, clock: FakeClock) -> None:
    fake = PaperspaceFake(router)
    router.get(f"{PAPERSPACE}/custom-templates").mock(
        side_effect=lambda r: fake._page(r, ps("custom-templates")["items"])
    )
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        await p["paperspace"].create_machine(_request("resnet-base"))
    (created,) = fake.machines.values()
    assert created["_body"]["templateId"] == "tc7w1p9d"


@pytest.mark.anyio
async def test_a_cancelled_create_event_is_a_failure(router: respx.Router, clock: FakeClock) -> None:
    """Item 10: {"state": "cancelled", "dtFinished": <set>} finished, but did not do what was asked."""
    fake = PaperspaceFake(router)
    fake.event_ends = ps("machine-event-cancelled")
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        with pytest.raises(ProviderError, match="cancelled"):
            await p["paperspace"].create_machine(_request("t0nspur5"))


@pytest.mark.anyio
async def test_disk_grows_with_put_disk_size_only_while_off(router: respx.Router, clock: FakeClock) -> None:
    """Item 3: PUT /machines/{id} {"diskSize": N}; a running machine is refused, never half-done."""
    fake = PaperspaceFake(router)
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        prov = p["paperspace"]
        m = await prov.create_machine(_request("t0nspur5"))
        with pytest.raises(ProviderError, match="only while it is off"):
            await prov.grow_volume(m, 100)
        assert fake.puts == []
        off = await prov.stop(m)
        grown = await prov.grow_volume(off, 100)
    assert fake.puts == [{"diskSize": 100}]
    assert grown.volume_gb == 100 and grown.status == "stopped"
    assert fake.machines[m.id]["storageTotal"] == str(100 * 1024**3)


@pytest.mark.anyio
async def test_apply_grows_a_running_machine_stop_put_start_and_records_the_size(
    router: respx.Router, clock: FakeClock, tmp_path: Any
) -> None:
    """The apply step around it: stop, PUT diskSize, start, and the launch record now says 100 GB."""
    from gpujob.apply import steps
    from gpujob.apply.context import JobContext
    from gpujob.apply.journal import Journal
    from gpujob.apply.progress import RecordingHooks
    from gpujob.plan.model import FieldChange
    from gpujob.plan.records import load_launch_record, note_launch
    from tests.apply.fakes import FakeSSH, action, make_spec

    fake = PaperspaceFake(router)
    spec = make_spec(
        name="resnet", platform="paperspace", storage={"volume_gb": 100, "network_volume": None},
        machine={"gpu": ["A4000"], "regions": ["ny2"], "template": "ML-in-a-Box", "spot": False, "image": None},
        checkpoint=None, run=None,
    )  # fmt: skip
    state = tmp_path / ".gpujob"
    async with open_providers({"paperspace"}, clock=clock, env=FAKE_ENV) as p:
        prov = p["paperspace"]
        ctx = JobContext(
            spec=spec, spec_path=tmp_path / "job.yaml", provider=prov, state_dir=state,
            journal=Journal(state, "resnet"), ssh=FakeSSH(tmp_path).api(), clock=clock, env={},
            hooks=RecordingHooks(), approvals=set(), project=PROJECT,
        )  # fmt: skip
        ctx.machine = await prov.create_machine(_request("ML-in-a-Box"))
        note_launch(state, spec, ctx.machine)
        grow = action("resnet", ActionKind.UPDATE, "machine", resource_id=ctx.machine.id,
                      changes=[FieldChange(path="volume_gb", before=50, after=100)])  # fmt: skip
        out = await steps.run(ctx, grow)
    actions = [(c.request.method, c.request.url.path.rsplit("/", 1)[-1]) for c in router.calls]
    resize = actions.index(("PUT", ctx.machine.id))
    assert ("PATCH", "stop") in actions[:resize] and ("PATCH", "start") in actions[resize:]
    assert fake.puts == [{"diskSize": 100}] and ctx.machine.status == "running"
    assert "grew the disk" in out.detail
    rec = load_launch_record(state, "resnet")
    assert rec is not None and (rec.disk_gb, rec.template, rec.template_id) == (
        100,
        "ML-in-a-Box",
        "tkni3aa4",
    )
