"""The journal's run facts (pure readers), the lines apply writes, and the run-fact read during refresh."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpujob.apply.journal import Journal
from gpujob.apply.reconcile import (
    finished_marker,
    finishing_jobs,
    launch_pending,
    launched_digest,
    mark_finished,
    record_launches,
)
from gpujob.apply.refresh import read_live_state
from gpujob.apply.runfacts import read_run_facts
from gpujob.apply.sshapi import SSHApi
from gpujob.errors import SSHConnectError
from gpujob.live import LiveResource, LiveState, RunFact, SSHEndpoint
from gpujob.plan.model import ActionKind
from gpujob.ssh.launcher import RunStatus
from tests.apply.fakes import FakeProvider, action, make_plan, make_spec
from tests.owners import PROJECT, machine, marker

NOW = datetime(2026, 11, 29, tzinfo=UTC)


@dataclass(frozen=True)
class Loaded:
    spec: Any
    path: Path
    digest: str = "d1"
    project: str | None = PROJECT


def pod(status: str = "running", name: str = machine("toy")) -> LiveResource:
    return LiveResource(
        platform="runpod",
        kind="pod",
        id=f"p-{name.removesuffix('--' + PROJECT)}",
        name=name,
        attributes=marker(),
        status=status,  # type: ignore[arg-type]
        ssh=SSHEndpoint(host="h", port=1) if status == "running" else None,
    )


def journal_with(tmp_path: Path, *rows: tuple[str, str]) -> Journal:
    j = Journal(tmp_path, "toy")
    for action_id, phase in rows:
        j.append(phase, NOW, action_id=action_id)  # type: ignore[arg-type]
    return j


def test_launch_pending_follows_the_journal(tmp_path: Path) -> None:
    assert not launch_pending([])
    j = journal_with(tmp_path, ("toy.network_volume.create", "done"), ("toy.pod.create", "intent"))
    assert launch_pending(j.entries())
    j.append("done", NOW, action_id="toy.pod.create")
    j.append("intent", NOW, action_id="toy.run.launch")
    assert launch_pending(j.entries())
    j.append("done", NOW, action_id="toy.run.launch")
    assert not launch_pending(j.entries())


def test_finished_mark_and_launch_digest_round_trip(tmp_path: Path) -> None:
    ls = Loaded(make_spec(teardown={"on_finish": "stop"}), tmp_path / "job.yaml", digest="abc")
    j = Journal(tmp_path, "toy")
    record_launches(["toy.pod.create", "toy.run.launch"], [ls], lambda _ls: j, NOW)
    assert launched_digest(j.entries()) == "abc" and finished_marker(j.entries(), "abc") is None
    fact = RunFact(state="exited", exit_code=0)
    stop = action("toy", ActionKind.STOP, resource_id="p1")
    plan = make_plan(("toy", [stop]))
    plan = plan.model_copy(update={"jobs": [plan.jobs[0].model_copy(update={"run": fact})]})
    assert finishing_jobs(plan) == ["toy"]
    mark_finished(plan, [ls], lambda _ls: j, NOW)
    assert finished_marker(j.entries(), "abc") is not None
    assert finished_marker(j.entries(), "other-digest") is None
    # A later launch clears the mark: that run is a new one.
    j.append("done", NOW, action_id="toy.run.launch")
    assert finished_marker(j.entries(), "abc") is None


def test_no_mark_for_a_failed_run_or_without_a_teardown(tmp_path: Path) -> None:
    stop = action("toy", ActionKind.STOP, resource_id="p1")
    for fact, acts in (
        (RunFact(state="exited", exit_code=1), [stop]),
        (RunFact(state="exited", exit_code=0), []),
        (RunFact(state="running"), [stop]),
    ):
        plan = make_plan(("toy", acts))
        plan = plan.model_copy(update={"jobs": [plan.jobs[0].model_copy(update={"run": fact})]})
        assert finishing_jobs(plan) == []


# --- the read during refresh -----------------------------------------------------------------


def ssh_api(status: Any = None, *, fail: Exception | None = None, hang: bool = False) -> SSHApi:
    @contextlib.asynccontextmanager
    async def connect(endpoint: SSHEndpoint, **kw: Any):  # type: ignore[no-untyped-def]
        if hang:
            await asyncio.sleep(30)
        if fail is not None:
            raise fail
        yield object()

    async def run_status(remote: Any, spec: Any) -> Any:
        return status

    def never(*a: Any, **k: Any) -> Any:
        raise AssertionError("planning must not create keys, sync or launch")

    return SSHApi(never, connect, never, never, never, run_status)


def keyed(tmp_path: Path, name: str = "toy") -> Loaded:
    d = tmp_path / name
    (d / ".gpujob").mkdir(parents=True)
    (d / ".gpujob" / "id_ed25519").write_text("fake")
    return Loaded(make_spec(name=name), d / "job.yaml")


def read(loaded: list[Loaded], live: LiveState, ssh: SSHApi, **kw: Any) -> dict[str, RunFact]:
    prov = FakeProvider()
    return asyncio.run(read_run_facts(loaded, live, {"runpod": prov}, ssh=ssh, **kw))


def test_lost_run_is_read_with_its_checkpoint(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("GPUJOB_STATE_DIR", raising=False)
    ls = keyed(tmp_path)
    status = RunStatus(
        alive=False,
        exit_code=None,
        started_at="2026-11-29T10:00:00Z",
        last_checkpoint="step-40.pt",
        last_checkpoint_age_s=12.0,
        log_tail="",
    )
    facts = read([ls], LiveState(read_at=NOW, resources=[pod()]), ssh_api(status))
    fact = facts["toy"]
    assert (fact.state, fact.last_checkpoint, fact.resource_id) == ("lost", "step-40.pt", "p-gpujob-toy")


def test_unreachable_or_slow_machines_are_unknown_facts_read_concurrently(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.delenv("GPUJOB_STATE_DIR", raising=False)
    a, b = keyed(tmp_path, "a"), keyed(tmp_path, "b")
    live = LiveState(read_at=NOW, resources=[pod(name=machine("a")), pod(name=machine("b"))])
    facts = read([a], live, ssh_api(fail=SSHConnectError("connection refused\nmore")))
    assert facts["a"].state == "unknown" and facts["a"].reason == "connection refused"
    loop_start = asyncio.new_event_loop()
    try:
        started = loop_start.time()
        facts = loop_start.run_until_complete(
            read_run_facts([a, b], live, {"runpod": FakeProvider()}, ssh=ssh_api(hang=True), timeout=0.3)
        )
        elapsed = loop_start.time() - started
    finally:
        loop_start.close()
    assert [f.state for f in facts.values()] == ["unknown", "unknown"]
    assert "within 0.3s" in facts["a"].reason
    assert elapsed < 0.6 * 2  # both waited at once, not one after the other


def test_no_key_no_ssh_and_nothing_created(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("GPUJOB_STATE_DIR", raising=False)
    ls = Loaded(make_spec(), tmp_path / "job.yaml")
    facts = read([ls], LiveState(read_at=NOW, resources=[pod()]), ssh_api(fail=AssertionError("no ssh")))
    assert facts["toy"].state == "unknown" and "no project SSH key" in facts["toy"].reason
    assert not (tmp_path / ".gpujob").exists()


def test_stopped_machine_or_no_refresh_reads_only_the_journal(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("GPUJOB_STATE_DIR", raising=False)
    ls = keyed(tmp_path)
    Journal(ls.path.parent / ".gpujob", "toy").append("done", NOW, action_id="toy.pod.start")
    boom = ssh_api(fail=AssertionError("no ssh expected"))
    facts = read([ls], LiveState(read_at=NOW, resources=[pod("stopped")]), boom)
    assert facts["toy"].state is None and facts["toy"].launch_pending
    facts = read([ls], LiveState(read_at=NOW, resources=[pod()]), boom, refresh=False)
    assert facts["toy"].state is None and "--no-refresh-runs" in facts["toy"].reason


def test_read_live_state_keeps_its_old_call_and_adds_runs(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("GPUJOB_STATE_DIR", raising=False)
    ls = keyed(tmp_path)
    prov = FakeProvider()
    prov.resources = {"p": pod()}
    status = RunStatus(
        alive=True,
        exit_code=None,
        started_at="x",
        last_checkpoint=None,
        last_checkpoint_age_s=None,
        log_tail="",
    )
    plain = asyncio.run(read_live_state([ls.spec], {"runpod": prov}))
    assert plain.runs == {}
    full = asyncio.run(read_live_state([ls.spec], {"runpod": prov}, runs_for=[ls], ssh=ssh_api(status)))
    assert full.runs["toy"].state == "running"
    assert full.fingerprint() == plain.fingerprint()


def test_push_pending_names_the_replaced_machine_until_a_push_or_a_terminate_is_done(tmp_path: Path) -> None:
    from gpujob.apply.reconcile import push_pending

    j = Journal(tmp_path, "toy")
    at = datetime(2026, 11, 29, tzinfo=UTC)
    j.append(
        "intent", at, action_id="toy.checkpoints.push", kind="push", resource_id="old-pod"
    )  # the replace's line
    j.append("done", at, action_id="toy.pod.replace", kind="replace", resource_id="new-pod")
    assert push_pending(j.entries()) == "old-pod"
    j.append("intent", at, action_id="toy.checkpoints.push", kind="push")  # the step's own line
    j.append("failed", at, action_id="toy.checkpoints.push", kind="push", detail="lost the connection")
    assert push_pending(j.entries()) == "old-pod"
    j.append("done", at, action_id="toy.checkpoints.push", kind="push")
    assert push_pending(j.entries()) is None
    j.append("intent", at, action_id="toy.checkpoints.push", kind="push", resource_id="pod-2")
    j.append("done", at, action_id="toy.pod.terminate", kind="terminate", resource_id="pod-3")
    assert push_pending(j.entries()) is None
