"""Which look the teardown gate takes at run time (gpujob/apply/teardown.py), against fakes: for each
kind of destructive action and machine state, whether the disk is looked at, through which machine,
whether the look's listing counts as erased, and what the step says when nothing needs a look. The
look itself (quiesce, list, final pull, relist) is stubbed here; tests/apply/test_gate.py and
test_gate_volume.py run it against the SSH fake, tests/reliability/test_teardown_gate.py against sshd."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gpujob.apply import teardown
from gpujob.errors import GateError
from gpujob.live import LiveResource
from gpujob.plan.model import ActionKind
from tests.apply.fakes import action
from tests.apply.test_gate import guard, world

TERM = ("toy", ActionKind.TERMINATE)
LISTING = object()  # what the look listed: passed to the gate's `erased` as is


@dataclasses.dataclass
class Looks:
    """The stubbed look: every call to inspect_disk and through_helper, with what it was given."""

    disk: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    helper: list[tuple[Any, Any, Any]] = dataclasses.field(default_factory=list)
    mounted: bool = True  # what on_mount answers


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> Looks:
    seen = Looks()

    async def inspect_disk(ctx: Any, act: Any, machine: Any, erased: Any, *, evidence_for: Any) -> str:
        seen.disk.append(
            {"machine": machine.id, "erased": erased(LISTING), "evidence_for": evidence_for, "action": act.id}
        )
        return "looked"

    async def through_helper(ctx: Any, act: Any, vol: Any) -> str:
        seen.helper.append((ctx, act, vol))
        return "through a temporary pod"

    def on_mount(listing: Any, machine: Any, ctx: Any) -> bool:
        assert listing is LISTING and machine is ctx.machine
        return seen.mounted

    monkeypatch.setattr(teardown, "inspect_disk", inspect_disk)
    monkeypatch.setattr(teardown, "through_helper", through_helper)
    monkeypatch.setattr(teardown, "on_mount", on_mount)
    return seen


def _shared(monkeypatch: pytest.MonkeyPatch, value: bool) -> None:
    import gpujob.layout.storage as storage

    monkeypatch.setattr(storage, "shared", lambda spec: value)


# --- the actions that are not gated here ---------------------------------------------------------------


@pytest.mark.parametrize("kind", [ActionKind.STOP, ActionKind.RELEASE_IP, ActionKind.DELETE_SNAPSHOT])
def test_an_approved_action_that_erases_no_disk_passes_with_nothing_to_say(
    tmp_path: Path, looks: Looks, kind: ActionKind
) -> None:
    ctx, _, ssh = world(tmp_path, volume=True)
    assert guard(ctx, action("toy", kind, resource_id="pod1")) == ""
    assert looks.disk == [] and looks.helper == [] and ssh.connects == []


def test_the_approval_is_checked_before_any_look(tmp_path: Path, looks: Looks) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    term, delete = (
        action(*TERM, resource_id="pod1"),
        action("toy", ActionKind.DELETE_VOLUME, "network_volume"),
    )
    ctx.todo = [term, delete]
    with pytest.raises(GateError) as err:
        asyncio.run(teardown.guard(ctx, term))
    # the re-run names every gated action of this apply, not only the refused one
    assert "--approve toy.pod.terminate" in err.value.render()
    assert "--approve toy.network_volume.delete-volume" in err.value.render()
    assert looks.disk == []


# --- terminate / replace -------------------------------------------------------------------------------


def test_a_terminate_without_its_machine_is_an_internal_error_naming_it(tmp_path: Path, looks: Looks) -> None:
    from gpujob.invariant import InvariantError

    ctx, _, _ = world(tmp_path)
    ctx.machine = None
    with pytest.raises(InvariantError) as err:
        guard(ctx, action(*TERM, resource_id="pod1"))
    assert (
        str(err.value) == "internal error: the machine the gate guards is not set here (please report this)"
    )


@pytest.mark.parametrize("kind", [ActionKind.TERMINATE, ActionKind.REPLACE])
def test_a_running_pod_without_a_volume_is_looked_at_and_its_whole_disk_is_erased(
    tmp_path: Path, looks: Looks, kind: ActionKind
) -> None:
    ctx, _, _ = world(tmp_path)
    assert guard(ctx, action("toy", kind, resource_id="pod1")) == "looked"
    looks.mounted = True  # no volume: on_mount is not even asked
    assert looks.disk == [
        {"machine": "pod1", "erased": True, "evidence_for": None, "action": f"toy.pod.{kind.value}"}
    ]


def test_a_running_pod_whose_volume_stays_erases_only_what_is_off_the_mount(
    tmp_path: Path, looks: Looks
) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    looks.mounted = True
    guard(ctx, action(*TERM, resource_id="pod1"))
    looks.mounted = False
    guard(ctx, action(*TERM, resource_id="pod1"))
    assert [d["erased"] for d in looks.disk] == [False, True]
    assert [d["evidence_for"] for d in looks.disk] == [None, None]


def test_a_pod_whose_volume_this_apply_deletes_does_the_final_pull_as_the_volumes_evidence(
    tmp_path: Path, looks: Looks
) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    term = action(*TERM, resource_id="pod1")
    ctx.todo = [term, action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")]
    looks.mounted = True  # on the mount, and still erased: the volume goes too
    guard(ctx, term)
    assert looks.disk == [{"machine": "pod1", "erased": True, "evidence_for": "vol1", "action": term.id}]


def test_a_delete_of_another_volume_does_not_make_this_pods_volume_die(tmp_path: Path, looks: Looks) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    term = action(*TERM, resource_id="pod1")
    ctx.todo = [
        term,
        action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol-other"),
        action("toy", ActionKind.RELEASE_IP, "public_ip", resource_id="vol1"),  # the id, but not a delete
    ]
    guard(ctx, term)
    assert looks.disk[0]["evidence_for"] is None and looks.disk[0]["erased"] is False


def test_a_sweeps_shared_volume_is_never_the_terminates_evidence(
    tmp_path: Path, looks: Looks, monkeypatch: pytest.MonkeyPatch
) -> None:
    _shared(monkeypatch, True)
    ctx, _, _ = world(tmp_path, volume=True)
    term = action(*TERM, resource_id="pod1")
    ctx.todo = [term, action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")]
    guard(ctx, term)
    assert looks.disk == [{"machine": "pod1", "erased": False, "evidence_for": None, "action": term.id}]


def test_a_stopped_pod_whose_volume_stays_is_not_started_to_be_looked_at(
    tmp_path: Path, looks: Looks
) -> None:
    ctx, _, ssh = world(tmp_path, volume=True)
    ctx.machine = ctx.machine.model_copy(update={"status": "stopped"})
    said = guard(ctx, action(*TERM, resource_id="pod1"))
    assert said == (
        f"{ctx.machine.name} is stopped (no run alive; the stop reset its container disk); its mount is "
        "network volume vol1, which stays"
    )
    assert looks.disk == [] and ssh.connects == []


def test_a_stopped_pod_whose_volume_is_deleted_too_is_looked_at(tmp_path: Path, looks: Looks) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    ctx.machine = ctx.machine.model_copy(update={"status": "stopped"})
    term = action(*TERM, resource_id="pod1")
    ctx.todo = [term, action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")]
    guard(ctx, term)
    assert looks.disk == [{"machine": "pod1", "erased": True, "evidence_for": "vol1", "action": term.id}]


def test_a_stopped_machine_with_nothing_to_protect_says_why_and_is_not_looked_at(
    tmp_path: Path, looks: Looks, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Any] = []

    def nothing_to_protect_here(ctx: Any, machine: Any) -> str | None:
        asked.append(machine.id)
        return "no run was ever launched on it"

    monkeypatch.setattr(teardown.reach, "nothing_to_protect_here", nothing_to_protect_here)
    ctx, _, _ = world(tmp_path)
    ctx.machine = ctx.machine.model_copy(update={"status": "stopped"})
    said = guard(ctx, action(*TERM, resource_id="pod1"))
    assert (
        said
        == f"{ctx.machine.name} is stopped and not started to be looked at: no run was ever launched on it"
    )
    assert asked == ["pod1"] and looks.disk == []
    # with something to protect, the stopped machine is looked at (started by the look)
    monkeypatch.setattr(teardown.reach, "nothing_to_protect_here", lambda ctx, machine: None)
    assert guard(ctx, action(*TERM, resource_id="pod1")) == "looked"
    assert looks.disk[0]["erased"] is True


def test_a_running_machine_is_looked_at_without_asking_whether_anything_needs_it(
    tmp_path: Path, looks: Looks, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(teardown.reach, "nothing_to_protect_here", lambda ctx, machine: "never asked")
    ctx, _, _ = world(tmp_path)
    assert guard(ctx, action(*TERM, resource_id="pod1")) == "looked"


def test_a_paperspace_machine_has_no_network_volume_to_spare(
    tmp_path: Path, looks: Looks, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(teardown.reach, "nothing_to_protect_here", lambda ctx, machine: None)
    ctx, _, _ = world(tmp_path, volume=True, platform="paperspace")
    assert ctx.spec.platform == "paperspace"
    ctx.machine = ctx.machine.model_copy(update={"status": "stopped"})
    looks.mounted = True
    term = action(*TERM, resource_id="pod1")
    ctx.todo = [term, action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")]
    guard(ctx, term)
    # the stopped machine is not spared for its volume, and its whole disk is erased, no evidence
    assert looks.disk == [{"machine": "pod1", "erased": True, "evidence_for": None, "action": term.id}]


# --- delete volume -------------------------------------------------------------------------------------


def test_a_volume_no_pod_mounts_is_looked_at_through_a_temporary_pod(tmp_path: Path, looks: Looks) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    ctx.machine = ctx.machine.model_copy(update={"network_volume_id": None})
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    assert guard(ctx, delete) == "through a temporary pod"
    (seen,) = looks.helper
    assert seen[0] is ctx and seen[1] is delete and seen[2].id == "vol1"
    assert looks.disk == []
    ctx.machine = None  # no machine at all: the same
    guard(ctx, delete)
    assert len(looks.helper) == 2


def test_a_volume_its_pod_mounts_counts_only_the_files_on_the_mount(tmp_path: Path, looks: Looks) -> None:
    ctx, _, _ = world(tmp_path, volume=True)
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    looks.mounted = True
    assert guard(ctx, delete) == "looked"
    looks.mounted = False
    guard(ctx, delete)
    assert [(d["machine"], d["erased"], d["evidence_for"]) for d in looks.disk] == [
        ("pod1", True, None),
        ("pod1", False, None),
    ]
    assert looks.helper == []


def test_the_terminates_evidence_passes_the_delete_without_another_look(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one", "s2.ckpt": b"two"}, volume=True)
    term = action(*TERM, resource_id="pod1")
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    ctx.todo = [term, delete]
    guard(ctx, term)
    ctx.machine = None
    connects = len(ssh.connects)
    said = guard(ctx, delete)
    assert said == f"its 2 checkpoint file(s) were pulled and verified through {ctx.evidence['vol1'].through}"
    assert len(ssh.connects) == connects


# --- a sweep's shared volume -----------------------------------------------------------------------------


@dataclasses.dataclass
class Queue:
    queues: int = 3


def _holder(pid: str, vol: str = "vol1", kind: str = "pod", status: str = "running") -> LiveResource:
    return LiveResource(
        platform="runpod", kind=kind, id=pid, name=f"gpujob-q-{pid}", status=status, network_volume_id=vol
    )


def _sweep_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, list[Any]]:
    import gpujob.layout.storage as storage

    _shared(monkeypatch, True)
    specs: list[Any] = []

    def volume_spec(spec: Any, queue: Any) -> Any:
        specs.append((spec, queue))
        return spec.model_copy(update={"name": "every-cell"})

    monkeypatch.setattr(storage, "volume_spec", volume_spec)
    ctx, prov, _ = world(tmp_path, volume=True)
    ctx.machine = None
    del prov.resources["pod1"]
    ctx.extra[teardown.SWEEP_QUEUE] = Queue()
    return ctx, prov, specs


def test_a_shared_volume_is_looked_at_for_every_cell_once_no_queue_pod_holds_it(
    tmp_path: Path, looks: Looks, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, prov, specs = _sweep_world(tmp_path, monkeypatch)
    for r in (
        _holder("other-vol", vol="vol2"),
        _holder("a-volume-not-a-pod", kind="network_volume"),
        _holder("going", status="terminating"),
    ):
        prov._save(r)  # none of them holds it
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    assert guard(ctx, delete) == "every cell of the sweep's 3 queues: through a temporary pod"
    (seen,) = looks.helper
    assert (
        seen[0].spec.name == "every-cell"
        and seen[0] is not ctx
        and seen[1] is delete
        and seen[2].id == "vol1"
    )
    assert specs == [(ctx.spec, ctx.extra[teardown.SWEEP_QUEUE])]
    assert ctx.clock.slept == []


def test_a_shared_volume_waits_for_the_other_queue_pods_to_let_go(
    tmp_path: Path, looks: Looks, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, prov, _ = _sweep_world(tmp_path, monkeypatch)
    prov._save(_holder("q2"))
    sleeps = 0

    async def sleep(seconds: float) -> None:
        nonlocal sleeps
        sleeps += 1
        ctx.clock.slept.append(seconds)
        if sleeps == 2:
            del prov.resources["q2"]  # its queue's terminate went ahead

    ctx.clock.sleep = sleep
    guard(ctx, action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1"))
    assert ctx.clock.slept == [teardown.POLL_S] * 2 == [2.0, 2.0]
    notes = [m for job, kind, m in ctx.hooks.events if kind == "note"]
    assert notes == ["waiting for the sweep's other queue pods to let go of "
                     f"{ctx.volume.name} (gpujob-q-q2)"] * 2  # fmt: skip
    assert len(looks.helper) == 1


def test_a_shared_volume_still_held_after_the_detach_wait_is_refused_naming_the_holders(
    tmp_path: Path, looks: Looks, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, prov, _ = _sweep_world(tmp_path, monkeypatch)
    prov._save(_holder("q2"))
    prov._save(_holder("q3"))
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    with pytest.raises(GateError) as err:
        guard(ctx, delete)
    assert str(err.value) == (
        f"{delete.id}: {ctx.volume.name} holds the cells of every queue of the sweep, and "
        "gpujob-q-q2 (q2), gpujob-q-q3 (q3) still mount(s) it"
    )
    assert err.value.render().endswith(
        "destroy every queue of the sweep together (approve each queue's pod terminate too), then run the "
        "command again"
    )
    waited = sum(ctx.clock.slept)
    assert teardown.DETACH_WAIT_S == 300.0 and 300.0 < waited <= 302.0  # the whole wait, not a poll more
    assert looks.helper == []


def test_a_shared_volume_without_its_queue_is_refused(
    tmp_path: Path, looks: Looks, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, _, _ = _sweep_world(tmp_path, monkeypatch)
    del ctx.extra[teardown.SWEEP_QUEUE]
    delete = action("toy", ActionKind.DELETE_VOLUME, "network_volume", resource_id="vol1")
    with pytest.raises(GateError) as err:
        guard(ctx, delete)
    assert str(err.value) == (
        f"{delete.id}: {ctx.volume.name} is a sweep's shared volume, and this apply does not know its cells"
    )
    assert looks.helper == []
