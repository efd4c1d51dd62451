from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gpujob.apply.journal import Journal
from gpujob.apply.reconcile import finish_runs, launch_pending, resume_interrupted_launches
from gpujob.live import LiveResource, LiveState, SSHEndpoint
from gpujob.plan.model import ActionKind
from tests.apply.fakes import FakeClock, FakeProvider, FakeSSH, action, make_plan, make_spec

NOW = datetime(2026, 11, 29, tzinfo=UTC)


@dataclass(frozen=True)
class Loaded:
    spec: object
    path: Path
    digest: str = "d1"


def live(status: str = "running") -> LiveState:
    pod = LiveResource(
        platform="runpod",
        kind="pod",
        id="p1",
        name="gpujob-toy",
        status=status,
        ssh=SSHEndpoint(host="h", port=1),
    )
    return LiveState(read_at=NOW, resources=[pod])


def journal_with(tmp_path: Path, *rows: tuple[str, str]) -> Journal:
    j = Journal(tmp_path, "toy")
    for action_id, phase in rows:
        j.append(phase, NOW, action_id=action_id)  # type: ignore[arg-type]
    return j


def test_launch_pending_follows_the_journal(tmp_path):
    assert not launch_pending([])
    j = journal_with(tmp_path, ("toy.network_volume.create", "done"), ("toy.pod.create", "intent"))
    assert launch_pending(j.entries())
    j.append("done", NOW, action_id="toy.pod.create")
    j.append("intent", NOW, action_id="toy.run.launch")
    assert launch_pending(j.entries())
    j.append("done", NOW, action_id="toy.run.launch")
    assert not launch_pending(j.entries())


def test_undone_launch_is_added_back(tmp_path):
    spec = make_spec()
    j = journal_with(tmp_path, ("toy.pod.create", "done"), ("toy.run.launch", "intent"))
    plan = make_plan(("toy", [action("toy", ActionKind.NOOP)]))
    got = resume_interrupted_launches(plan, [Loaded(spec, tmp_path / "job.yaml")], live(), lambda _ls: j)
    assert [a.id for a in got.all_actions()] == ["toy.run.launch"]
    # Nothing is added when the journal shows the launch finished.
    j.append("done", NOW, action_id="toy.run.launch")
    again = resume_interrupted_launches(plan, [Loaded(spec, tmp_path / "job.yaml")], live(), lambda _ls: j)
    assert [a.kind for a in again.all_actions()] == [ActionKind.NOOP]


def run_finish(tmp_path, spec, plan, state, ssh):
    j = Journal(tmp_path, "toy")
    loaded = [Loaded(spec, tmp_path / "job.yaml")]
    prov = FakeProvider()
    prov.resources = {r.id: r for r in state.resources}
    out = asyncio.run(
        finish_runs(plan, loaded, state, {"runpod": prov}, lambda _ls: j, ssh=ssh.api(), clock=FakeClock())
    )
    return out, j


def test_on_finish_stop_after_exit_0_and_no_restart_later(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUJOB_STATE_DIR", str(tmp_path))
    spec = make_spec(teardown={"on_finish": "stop"})
    ssh = FakeSSH(tmp_path, exit_code=0)
    noop = make_plan(("toy", [action("toy", ActionKind.NOOP)]))
    out, j = run_finish(tmp_path, spec, noop, live(), ssh)
    assert [a.id for a in out.all_actions()] == ["toy.pod.stop"]
    assert any(e.action_id == "toy.run.finished" for e in j.entries())
    # Later, with the pod stopped, the planner wants start + launch: a finished run is not restarted.
    restart = make_plan(
        ("toy", [action("toy", ActionKind.START, resource_id="p1"), action("toy", ActionKind.LAUNCH, "run")])
    )
    out, _ = run_finish(tmp_path, spec, restart, live("stopped"), ssh)
    assert out.all_actions() == []


def test_on_finish_terminate_pulls_first_and_is_gated(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUJOB_STATE_DIR", str(tmp_path))
    spec = make_spec(teardown={"on_finish": "terminate"})
    out, _ = run_finish(tmp_path, spec, make_plan(("toy", [])), live(), FakeSSH(tmp_path, exit_code=0))
    acts = out.all_actions()
    assert [(a.id, a.gated) for a in acts] == [("toy.checkpoints.pull", False), ("toy.pod.terminate", True)]


def test_running_or_failed_runs_are_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUJOB_STATE_DIR", str(tmp_path))
    spec = make_spec(teardown={"on_finish": "stop"})
    for ssh in (FakeSSH(tmp_path, alive=True), FakeSSH(tmp_path, exit_code=1)):
        out, j = run_finish(tmp_path, spec, make_plan(("toy", [])), live(), ssh)
        assert out.all_actions() == [] and j.entries() == []
