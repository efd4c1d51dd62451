"""Issue 23 at the gate, against fakes: no start of a stopped machine that certainly holds nothing
(gpujob.apply.reach_evidence), a machine started for a look is stopped again when the look fails, an
unreachable machine is refused with the risk, and the `.unverified` override only past a failed reach
(gpujob.apply.unreachable)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpujob.apply import teardown
from gpujob.apply.gate import require_approved
from gpujob.apply.reach_evidence import nothing_to_protect
from gpujob.apply.unreachable import risk, without_overrides
from gpujob.errors import GateError
from gpujob.plan.model import ActionKind
from gpujob.plan.records import PulledFile, PullRecord, save_pull_record
from tests.apply.fakes import action, no_sshd
from tests.apply.test_gate import VOLUME_DISK, world

TERM = "toy.pod.terminate"
BARE = {"checkpoint": None, "run": None, "storage": VOLUME_DISK}


def _run(ctx: Any, *approvals: str) -> str:
    ctx.approvals |= set(approvals)
    return asyncio.run(teardown.guard(ctx, action("toy", ActionKind.TERMINATE, resource_id="pod1")))


def _created(ctx: Any, machine_id: str) -> None:
    now = ctx.clock.now()
    ctx.journal.append("intent", now, action_id="toy.pod.create", kind="create")
    ctx.journal.append("done", now, action_id="toy.pod.create", kind="create", resource_id=machine_id)


def _stopped(ctx: Any, prov: Any) -> None:
    ctx.machine = prov._save(ctx.machine.model_copy(update={"status": "stopped", "ssh": None}))


def test_a_stopped_machine_gpujob_made_and_never_used_is_not_started(tmp_path: Path) -> None:
    ctx, prov, ssh = world(tmp_path, **BARE)
    _stopped(ctx, prov)
    _created(ctx, "pod1")
    said = _run(ctx, TERM)
    assert (
        "not started to be looked at" in said and ("start", "pod1") not in prov.calls and ssh.connects == []
    )


@pytest.mark.parametrize("why", ["launched", "no journal", "checkpoint block", "pulled"])
def test_without_positive_evidence_the_gate_starts_the_machine_and_looks(tmp_path: Path, why: str) -> None:
    spec = {"storage": VOLUME_DISK} if why == "checkpoint block" else BARE
    ctx, prov, ssh = world(tmp_path, **spec)
    _stopped(ctx, prov)
    if why != "no journal":
        _created(ctx, "pod1")
    if why == "launched":
        ctx.journal.append("intent", ctx.clock.now(), action_id="toy.run.launch", kind="launch")
    if why == "pulled":
        save_pull_record(ctx.state_dir, PullRecord(job="toy", platform="runpod", resource_id="pod1", remote_dir="/x",
                                                   local_dir="/y", at=ctx.clock.now()))  # fmt: skip
    _run(ctx, TERM)
    assert ("start", "pod1") in prov.calls and ssh.connects


def test_evidence_is_about_this_very_machine() -> None:
    class E:
        def __init__(self, phase: str, kind: str, rid: str | None) -> None:
            self.phase, self.kind, self.resource_id, self.at = (
                phase,
                kind,
                rid,
                datetime(2026, 1, 1, tzinfo=UTC),
            )

    class S:
        checkpoint = outputs = None

    made = [E("done", "create", "podA")]
    assert nothing_to_protect(S(), "podA", made, None, None)
    assert nothing_to_protect(S(), "podB", made, None, None) is None  # another machine of the same name
    assert nothing_to_protect(S(), "podA", [*made, E("done", "update", None)], None, None) is None


def test_a_machine_started_for_the_look_is_stopped_again_when_it_cannot_be_reached(tmp_path: Path) -> None:
    ctx, prov, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    _stopped(ctx, prov)
    no_sshd(ssh, ctx)
    with pytest.raises(GateError) as err:
        _run(ctx, TERM)
    assert [c for c in prov.calls if c[0] in ("start", "stop")] == [("start", "pod1"), ("stop", "pod1")]
    assert prov.resources["pod1"].status == "stopped" and ctx.machine.status == "stopped"
    text = err.value.render()
    assert "refused: cannot reach" in text and "container disk and volume disk" in text
    assert ".unverified" in text and f"--approve {TERM}.unverified" not in text


def test_the_refusal_names_the_last_listing_and_the_age_of_the_newest_verified_pull(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    no_sshd(ssh, ctx)
    at = ctx.clock.now().replace(hour=9)  # three hours before the fake clock's noon
    f = PulledFile(name="s1.ckpt", size=3, sha256="a" * 64, remote_sha256="a" * 64, verified=True, at=at)
    save_pull_record(ctx.state_dir, PullRecord(job="toy", platform="runpod", resource_id="pod1", remote_dir="/workspace/ckpt",
                                               local_dir="/l", remote_files={"s1.ckpt": "a" * 64, "s2.ckpt": "b" * 64},
                                               files=[f], at=at))  # fmt: skip
    with pytest.raises(GateError) as err:
        _run(ctx, TERM)
    text = str(err.value)
    assert "2 checkpoint file(s) in /workspace/ckpt" in text and "the newest verified pull: 3 h ago" in text


def test_the_override_lets_an_unreachable_machine_go_only_with_the_plain_approval(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    no_sshd(ssh, ctx)
    assert "NOT CHECKED" in _run(ctx, TERM, f"{TERM}.unverified")
    ctx2, _, ssh2 = world(tmp_path / "b", files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    no_sshd(ssh2, ctx2)
    ctx2.approvals.add(f"{TERM}.unverified")  # alone, it approves nothing
    with pytest.raises(GateError, match="not approved"):
        asyncio.run(teardown.guard(ctx2, action("toy", ActionKind.TERMINATE, resource_id="pod1")))
    assert ssh2.connects == []


@pytest.mark.parametrize("allowed", [False, True])
def test_apply_plan_drops_the_override_unless_the_command_line_typed_it(
    tmp_path: Path, allowed: bool
) -> None:
    """gpujob watch (and a PR's approval line, through it) calls apply_plan without allow_unverified."""
    from gpujob.apply.applier import apply_plan
    from gpujob.live import LiveResource, SSHEndpoint
    from tests.apply.fakes import make_plan
    from tests.apply.test_applier import World
    from tests.owners import machine, marker

    w = World(tmp_path, storage=VOLUME_DISK)
    w.prov._save(LiveResource(platform="runpod", kind="pod", id="pod1", name=machine("toy"), status="running",
                              attributes=marker(), ssh=SSHEndpoint(host="127.0.0.1", port=40001)))  # fmt: skip
    no_sshd(w.ssh, type("C", (), {})())
    result = asyncio.run(
        apply_plan(
            make_plan(("toy", [action("toy", ActionKind.TERMINATE, resource_id="pod1")])), w.loaded,
            {"runpod": w.prov}, approvals={TERM, f"{TERM}.unverified"}, auto_approve=True, hooks=w.hooks,
            clock=w.clock, env={}, ssh=w.ssh.api(), state_dir=w.state, allow_unverified=allowed,
        )
    )  # fmt: skip
    if allowed:
        assert result.done == [TERM] and "pod1" not in w.prov.resources
    else:
        assert "refused: cannot reach" in result.failed[TERM] and "pod1" in w.prov.resources


def test_the_override_never_skips_the_look_at_a_machine_that_answers(tmp_path: Path) -> None:
    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK, checkpoint={"verify": None})
    with pytest.raises(GateError, match=r"checkpoint\.verify is not set"):
        _run(ctx, TERM, f"{TERM}.unverified")
    assert ssh.connects and ssh.quiesced


def test_no_hint_and_no_watch_approval_carries_the_override() -> None:
    with pytest.raises(GateError) as err:
        require_approved(action("toy", ActionKind.TERMINATE), {f"{TERM}.unverified", "other.pod.terminate"})
    assert ".unverified" not in err.value.render() and "--approve other.pod.terminate" in err.value.render()
    assert without_overrides({TERM, f"{TERM}.unverified"}) == {TERM}


def test_risk_without_any_record() -> None:
    said = risk(
        erases="its disk", pull_record=None, outputs_record=None, now=datetime(2026, 1, 1, tzinfo=UTC)
    )
    assert "last listing gpujob saw: none" in said and "newest verified pull: never" in said


def test_a_running_machine_without_an_ssh_endpoint_is_refused_after_the_endpoint_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A community pod without a public port 22 (gpujob itself says to destroy it): destroy no
    longer waits forever, and the override works for it as for a silent sshd."""
    monkeypatch.setenv("GPUJOB_ENDPOINT_WAIT", "120")
    ctx, prov, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    ctx.machine = prov._save(ctx.machine.model_copy(update={"ssh": None}))
    began = ctx.clock.now()
    with pytest.raises(GateError, match="refused: cannot reach") as err:
        _run(ctx, TERM)
    waited = (ctx.clock.now() - began).total_seconds()
    assert 120 <= waited <= 130 and ssh.connects == [], waited
    assert "no SSH endpoint after 120s" in str(err.value)
    assert "NOT CHECKED" in _run(ctx, f"{TERM}.unverified")


def test_a_workload_process_that_outlives_sigkill_refuses_the_teardown_naming_it(tmp_path: Path) -> None:
    from gpujob.ssh.workload import StoppedProcess, WorkloadQuiesce

    ctx, prov, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)
    seen: list[float] = []

    async def stuck(remote: Any, spec: Any, *, grace_s: float) -> WorkloadQuiesce:
        seen.append(grace_s)
        left = [StoppedProcess(pid=4242, name="uploader")]
        return WorkloadQuiesce(state="stuck", stopped=left, left=left)

    api = ssh.api()
    api.quiesce_workload = stuck
    ctx.ssh = api
    with pytest.raises(GateError, match=r"still running after SIGTERM.*uploader \(4242\)"):
        _run(ctx, TERM)
    assert seen and seen[0] >= 30 and ("terminate", "pod1") not in prov.calls


def test_the_workload_quiesce_is_named_in_the_gate_outcome(tmp_path: Path) -> None:
    from gpujob.ssh.workload import StoppedProcess, WorkloadQuiesce

    ctx, _, ssh = world(tmp_path, files={"s1.ckpt": b"one"}, storage=VOLUME_DISK)

    async def stopped(remote: Any, spec: Any, *, grace_s: float) -> WorkloadQuiesce:
        return WorkloadQuiesce(state="killed", stopped=[StoppedProcess(pid=7, name="python3")])

    api = ssh.api()
    api.quiesce_workload = stopped
    ctx.ssh = api
    said = _run(ctx, TERM)
    assert "1 more workload process(es) stopped (SIGKILL after the grace): python3 (7)" in said, said
