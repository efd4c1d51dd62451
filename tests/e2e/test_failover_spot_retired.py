"""Spot retired, in the simulator: RunPod's GraphQL answers 410 Gone (docs/runpod-api-calendar.md), so a
`spot: true` job cannot create or resume a spot pod there, whatever RunPod's stock. With a Paperspace
fallback that is a reason to move: the plan shows the move with it, watch takes it under
`failover: auto` and asks under `failover: ask`."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.sim import podproc
from gpujob.sim.testing import Sim, running_simulator
from tests.e2e.e2e_support import poll
from tests.e2e.test_failover import JOB, _events, _job, _stop, _verified, _watch
from tests.e2e.test_init import new_project

GONE = "spot API is gone"


@pytest.fixture
def sim_gone(tmp_path: Path) -> Iterator[Sim]:
    """`gpujob sim up --runpod-graphql gone`: every GraphQL call answers 410, REST v2 goes on."""
    mode = os.environ.get("GPUJOB_SIM_PODS", "auto")
    try:
        podproc.choose(mode)
    except podproc.PodsUnavailable as exc:
        pytest.fail(f"the end-to-end tests need the simulator's pods and cannot run here: {exc}")
    with running_simulator(
        tmp_path / "sim", provision_seconds=0.05, boot_seconds=0.0, preempt_grace=0.5, pod_mode=mode,
        runpod_graphql="gone",
    ) as s:  # fmt: skip
        yield s


def _ours(p, kind: str) -> list[dict]:  # type: ignore[no-untyped-def]
    return [o for o in p.live(kind) if str(o.get("name", "")).startswith(f"gpujob-{JOB}--")]


def test_spot_gone_plan_shows_the_move_and_ask_waits_for_its_approval(sim_gone: Sim, tmp_path: Path) -> None:
    p = new_project(sim_gone, tmp_path, "anywhere-gone")
    _job(p, "ask")
    plan = p.gj("plan", "--detailed-exitcode", check=False)
    assert plan.returncode == 2, plan.stdout + plan.stderr  # changes, and no error: the move is the way
    assert f"{JOB}.move" in plan.stdout and GONE in plan.stdout, plan.stdout
    assert (
        "move runpod -> paperspace (fallback[0]): runpod: machine.spot: true cannot start there"
        in plan.stdout
    )
    assert (
        "needs a spot create" in plan.stdout
    )  # the spot-retired finding, a note now that the move is planned
    assert "carries no checkpoint" in plan.stdout  # nothing verified here yet: it starts at step 0 there
    # failover: ask: watch says what to run and waits; nothing is made on either platform.
    watch = _watch(p)
    approval = f"--approve {JOB}.move"
    try:
        line = poll("the approval line", lambda: next((e for e in _events(p) if approval in e["did"]), None),
                    deadline_s=60)  # fmt: skip
    finally:
        out = _stop(watch)
    assert GONE in line["happened"] and approval in out, (line, out)
    assert not _ours(p, "pods") and not _ours(p, "machines"), "ask must wait"
    # Approved by a person: `gpujob apply` makes the plan's move.
    applied = p.gj("apply", "--auto-approve", timeout=240)
    assert "runpod -> paperspace" in applied.stdout + applied.stderr, applied.stdout
    _on_paperspace(p)


def test_spot_gone_ask_with_the_approval_on_watch_moves(sim_gone: Sim, tmp_path: Path) -> None:
    p = new_project(sim_gone, tmp_path, "anywhere-gone-approved")
    _job(p, "ask")
    watch = _watch(p, "--approve", f"{JOB}.move")  # started with the approval: it moves as auto does
    try:
        moved = poll("the move", lambda: next((e for e in _events(p) if e["event"] == "moved"), None),
                     deadline_s=120)  # fmt: skip
        _on_paperspace(p)
    finally:
        out = _stop(watch)
    assert "from runpod to paperspace" in moved["happened"] and GONE in moved["happened"], (moved, out)
    assert not [e for e in _events(p) if e["event"] == "needs-human"], out


def _on_paperspace(p) -> None:  # type: ignore[no-untyped-def]
    """The job trains on Paperspace (from step 0: nothing was verified here before), none of it on RunPod."""
    poll("the run to train on Paperspace",
         lambda: re.search(r"step \d+ loss", p.gj("logs", "-n", "200", check=False).stdout), deadline_s=120)  # fmt: skip
    assert [m["state"] for m in _ours(p, "machines")] == ["ready"] and not _ours(p, "pods")
    where = json.loads(p.store().read(f"failover/{JOB}.json") or b"{}")
    assert where["platform"] == "paperspace" and where["moves"][-1]["outcome"] == "done", where


def test_spot_gone_mid_run_auto_moves_a_preempted_spot_job_with_runpod_in_stock(
    sim: Sim, tmp_path: Path
) -> None:
    """The calendar turns while the job runs (RunPod still has every GPU): once preempted, its spot pod
    cannot resume; watch moves the job, carrying its newest verified checkpoint."""
    p = new_project(sim, tmp_path, "anywhere-turn")
    _job(p, "auto")
    p.gj("apply", "--auto-approve")
    watch = _watch(p)
    try:
        poll("a verified checkpoint pulled by watch", lambda: _verified(p), deadline_s=120)
        sim.engine.options.runpod_graphql = "gone"
        pod = _ours(p, "pods")[0]["id"]
        assert sim.inject("preempt")["preempted"] == [pod]
        moved = poll("the move", lambda: next((e for e in _events(p) if e["event"] == "moved"), None),
                     deadline_s=120)  # fmt: skip
        resumed = poll("the run to resume on Paperspace",
                       lambda: re.search(r"resumed from step (\d+)", p.gj("logs", "-n", "400", check=False).stdout),
                       deadline_s=120)  # fmt: skip
    finally:
        out = _stop(watch)
    failover = next(e for e in _events(p) if e["event"] == "failover")
    assert GONE in failover["happened"] and "machine.spot: true" in failover["happened"], failover
    assert "from runpod to paperspace" in moved["happened"], moved
    step = json.loads(p.store().read(f"failover/{JOB}.json") or b"{}")["moves"][-1]["step"]
    assert re.search(rf"carried step_\d+\.\w+ \(step {step}\)", moved["did"]) and step > 0, moved
    assert int(resumed.group(1)) >= step, (resumed.group(0), out)
    assert all(o["status"] != "RUNNING" for o in _ours(p, "pods")), _ours(p, "pods")
    assert [v for v in p.live("volumes") if JOB in v["name"]], "the RunPod volume must be kept"
