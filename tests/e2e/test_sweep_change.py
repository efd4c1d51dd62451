"""A run change while a sweep's queues run, in the simulator: `apply` places a new version of the
queues' files beside the old ones, each queue picks it up before its next cell, and the cell in flight
finishes under the version it started with. Every cell exits 0 exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.sweep_support import (
    cell_record,
    gj,
    home_cells,
    pods,
    recorded,
    run_watch,
    state_dir,
    sweep_project,
)
from tests.e2e.test_sweep import JOB

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

SLOW = JOB.replace('env: {STEPS: "4", STEP_S: "1"}', 'env: {STEPS: "4", STEP_S: "2", MSG: "one"}')


def _first_cell_in_flight(sim: Sim) -> dict[str, str] | None:
    """queue pod name -> its cell in flight, once a queue's first cell is past its first checkpoint."""
    caught: dict[str, str] = {}
    for pod in pods(sim):
        if pod["status"] != "RUNNING" or "--q" not in pod["name"]:
            continue
        s = state_dir(sim, pod["id"])
        current = next(iter(s.glob("current.*")), None)
        cell = current.read_text().strip() if current else ""
        ck = sim.data_dir / "runpod" / "pods" / pod["id"] / "volume" / "ckpt" / cell
        if cell and not list(s.glob("*.exit")) and list(ck.glob("step_*.json")):
            caught[pod["name"]] = cell
    return caught or None


def test_a_run_change_applies_from_the_next_cell_of_each_running_queue(sim: Sim, tmp_path: Path) -> None:
    d, env = sweep_project(sim, tmp_path, SLOW)
    first = gj(d, env, "apply", "--auto-approve")
    assert first.returncode == 0, first.stdout + first.stderr

    in_flight = poll(
        "a queue's first cell in flight", lambda: _first_cell_in_flight(sim), deadline_s=120, every=0.1
    )
    (d / "job.yaml").write_text(SLOW.replace('MSG: "one"', 'MSG: "two"'))
    plan = gj(d, env, "plan", "--detailed-exitcode")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "update in place run abl--q1" in plan.stdout and "applies from the next cell" in plan.stdout
    assert "run.env.MSG" in plan.stdout and "relaunch run" not in plan.stdout, plan.stdout
    update = gj(d, env, "apply", "--auto-approve")
    assert update.returncode == 0, update.stdout + update.stderr
    assert "runs it from its next cell" in update.stdout + update.stderr, update.stdout + update.stderr
    again = gj(d, env, "plan", "--detailed-exitcode")
    assert again.returncode == 0 and "No changes" in again.stdout, again.stdout + again.stderr

    watch = run_watch(d, env)
    assert watch.returncode == 0, watch.stdout + watch.stderr
    cells = home_cells(d)
    assert len(cells) == 6, (cells, watch.stdout)
    runs: dict[str, list[tuple[str, str]]] = {}
    for cell in cells:
        got = d / "outputs" / cell
        assert (got / "finishes.txt").read_text().splitlines() == [cell], cell  # exactly one exit 0
        record = cell_record(got)
        assert record["exit"] == "0" and record["starts"] == "1", record  # never relaunched
        msg = json.loads((got / "result.json").read_text())["MSG"]
        runs.setdefault(record["queue"], []).append((record["finished_at"], record["version"], msg, cell))
    versions = {v for q in runs.values() for _, v, _, _ in q}
    assert len(versions) == 2, runs
    for queue in runs.values():
        queue.sort()
        # each queue: cells of the old version (one: the cell in flight, and what finished before), then
        # only cells of the new one, each with the environment of its version
        kinds = [msg for _, _, msg, _ in queue]
        assert kinds == sorted(kinds, key=["one", "two"].index), queue
        assert (
            len({v for _, v, m, _ in queue if m == "one"}) <= 1
            and len({v for _, v, m, _ in queue if m == "two"}) <= 1
        )
    caught = set(in_flight.values())
    old = {c for q in runs.values() for _, _, m, c in q if m == "one"}
    new = {c for q in runs.values() for _, _, m, c in q if m == "two"}
    assert caught <= old and new, (in_flight, runs)  # the cell in flight finished under the old version


def _done_cells(sim: Sim) -> dict[str, list[str]]:
    """queue pod name -> the cells its machine recorded an exit code for."""
    out: dict[str, list[str]] = {}
    for pod in pods(sim):
        if "--q" in pod["name"]:
            out[pod["name"]] = recorded(state_dir(sim, pod["id"]), ".exit")
    return out


def test_more_machines_and_cells_after_some_cells_finished_run_every_cell_exactly_once(
    sim: Sim, tmp_path: Path
) -> None:
    _more_machines_and_cells(sim, tmp_path, applies=1)


def test_more_machines_and_cells_applied_twice_then_watched_run_every_cell_exactly_once(
    sim: Sim, tmp_path: Path
) -> None:
    """`gpujob apply` once more right after the one that adds the machine (nothing is pulled yet), then
    watch: a move the second apply starts must be one watch can finish (the queue it lands on still
    runs, or is made for it)."""
    _more_machines_and_cells(sim, tmp_path, applies=2)


def _more_machines_and_cells(sim: Sim, tmp_path: Path, applies: int) -> None:
    from gpujob.layout.queues import split
    from gpujob.spec.load import load_specs

    d, env = sweep_project(sim, tmp_path, JOB)
    first = gj(d, env, "apply", "--auto-approve")
    assert first.returncode == 0, first.stdout + first.stderr
    placed = json.loads((d / ".gpujob" / "sweeps" / "abl.json").read_text())["cells"]
    assert sorted(placed.values()) == [1, 1, 1, 2, 2, 2], placed  # recorded before the launches
    done = poll(
        "two cells finished on a queue",
        lambda: (lambda got: got if any(len(c) >= 2 for c in got.values()) else None)(_done_cells(sim)),
        deadline_s=120,
        every=0.2,
    )
    bigger = JOB.replace("machines: 2", "machines: 3").replace('"1e-4"]', '"1e-4", "3e-5"]')
    (d / "job.yaml").write_text(bigger)
    # the scenario is one where a split from scratch puts a finished cell onto another machine's queue
    loaded = load_specs([d / "job.yaml"])
    scratch = split(list(loaded[0].sweep.all_cells), 3)
    on = {c.name: n for n, q in enumerate(scratch, start=1) for c in q}
    finished_on = {c: int(pod.split("--q")[1].split("--")[0]) for pod, cells in done.items() for c in cells}
    assert any(on[c] != q for c, q in finished_on.items()), (scratch, done)
    assert [ls.spec.name for ls in loaded] == ["abl--q1", "abl--q2", "abl--q3"]
    more = gj(d, env, "apply", "--auto-approve")
    assert more.returncode == 0, more.stdout + more.stderr
    assert "abl.q3.pod.create" in more.stdout, more.stdout
    for _ in range(applies - 1):
        again = gj(d, env, "apply", "--auto-approve")
        assert again.returncode == 0, again.stdout + again.stderr
    watch = run_watch(d, env)
    assert watch.returncode == 0, watch.stdout + watch.stderr
    cells = home_cells(d)
    assert len(cells) == 8, (cells, watch.stdout)
    for cell in cells:
        got = d / "outputs" / cell
        assert (got / "finishes.txt").read_text().splitlines() == [cell], cell  # exactly one exit 0
        record = cell_record(got)
        assert record["exit"] == "0", record
        if cell in finished_on:
            assert record["queue"] == f"q{finished_on[cell]}", record  # it stayed where it ran
