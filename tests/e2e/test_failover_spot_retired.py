"""Spot retired, in the simulator: RunPod's GraphQL answers 410 Gone (docs/runpod-api-calendar.md), so a
`spot: true` job cannot create or resume a spot pod there, whatever RunPod's stock. With a Paperspace
fallback that is a reason to move: the plan shows the move with it, watch takes it under
`failover: auto` and asks under `failover: ask`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e import failover_support as fo
from tests.e2e.e2e_support import poll
from tests.e2e.failover_support import JOB
from tests.e2e.test_init import new_project
from tests.sim_pods import pod_simulator

GONE = "spot API is gone"


@pytest.fixture
def sim_gone(tmp_path: Path) -> Iterator[Sim]:
    """`gpujob sim up --runpod-graphql gone`: every GraphQL call answers 410, REST v2 goes on."""
    with pod_simulator(
        tmp_path / "sim", "the end-to-end tests", preempt_grace=0.5, runpod_graphql="gone"
    ) as s:
        yield s


def test_spot_gone_plan_shows_the_move_and_ask_waits_for_its_approval(sim_gone: Sim, tmp_path: Path) -> None:
    p = new_project(sim_gone, tmp_path, "anywhere-gone")
    fo.write_job(p, "ask")
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
    watching = fo.watch(p)
    approval = f"--approve {JOB}.move"
    try:
        line = poll("the approval line", lambda: next((e for e in fo.events(p) if approval in e["did"]), None),
                    deadline_s=60)  # fmt: skip
    finally:
        out = fo.stop(watching)
    assert GONE in line["happened"] and approval in out, (line, out)
    assert not fo.mine(p, "pods") and not fo.mine(p, "machines"), "ask must wait"
    # Approved by a person: `gpujob apply` makes the plan's move.
    applied = p.gj("apply", "--auto-approve", timeout=240)
    assert "runpod -> paperspace" in applied.stdout + applied.stderr, applied.stdout
    _on_paperspace(p)


def test_spot_gone_ask_with_the_approval_on_watch_moves(sim_gone: Sim, tmp_path: Path) -> None:
    p = new_project(sim_gone, tmp_path, "anywhere-gone-approved")
    fo.write_job(p, "ask")
    watching = fo.watch(p, "--approve", f"{JOB}.move")  # started with the approval: it moves as auto does
    try:
        moved = fo.poll_event(p, "the move", "moved")
        _on_paperspace(p)
    finally:
        out = fo.stop(watching)
    assert "from runpod to paperspace" in moved["happened"] and GONE in moved["happened"], (moved, out)
    assert fo.event(p, "needs-human") is None, out


def _on_paperspace(p) -> None:  # type: ignore[no-untyped-def]
    """The job trains on Paperspace (from step 0: nothing was verified here before), none of it on RunPod."""
    poll("the run to train on Paperspace",
         lambda: re.search(r"step \d+ loss", p.gj("logs", "-n", "200", check=False).stdout), deadline_s=120)  # fmt: skip
    assert [m["state"] for m in fo.mine(p, "machines")] == ["ready"] and not fo.mine(p, "pods")
    record = fo.where(p)
    assert record["platform"] == "paperspace" and record["moves"][-1]["outcome"] == "done", record


def test_spot_gone_mid_run_auto_moves_a_preempted_spot_job_with_runpod_in_stock(
    sim: Sim, tmp_path: Path
) -> None:
    """The calendar turns while the job runs (RunPod still has every GPU): once preempted, its spot pod
    cannot resume; watch moves the job, carrying its newest verified checkpoint."""
    p = fo.applied(sim, tmp_path, "anywhere-turn", "auto")
    watching = fo.watch(p)
    try:
        fo.poll_verified_by_watch(p)
        sim.engine.options.runpod_graphql = "gone"
        fo.preempt(sim, p, out_of_capacity=False)
        moved = fo.poll_event(p, "the move", "moved")
        resumed = fo.poll_resumed(p, "Paperspace", deadline_s=120)
    finally:
        out = fo.stop(watching)
    failover = fo.event(p, "failover")
    assert failover is not None, fo.events(p)
    assert GONE in failover["happened"] and "machine.spot: true" in failover["happened"], failover
    assert "from runpod to paperspace" in moved["happened"], moved
    step = fo.where(p)["moves"][-1]["step"]
    assert re.search(rf"carried step_\d+\.\w+ \(step {step}\)", moved["did"]) and step > 0, moved
    assert int(resumed.group(1)) >= step, (resumed.group(0), out)
    assert all(o["status"] != "RUNNING" for o in fo.mine(p, "pods")), fo.mine(p, "pods")
    assert fo.mine(p, "volumes"), "the RunPod volume must be kept"
