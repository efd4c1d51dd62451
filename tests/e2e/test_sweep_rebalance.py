"""More machines for a running sweep, in the simulator: cells placed on the two old queues that have
not started move to the new machine (gpujob.sweep.rebalance), only once each old queue's machine shows
it runs a version without them and never started them; every cell exits 0 exactly once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.sweep_support import gj, pods, recorded, state_dir, sweep_project
from tests.e2e.test_sweep import JOB

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

SLOW = JOB.replace('env: {STEPS: "4", STEP_S: "1"}', 'env: {STEPS: "4", STEP_S: "2"}')


def _both_queues_in_their_first_cell(sim: Sim) -> list[str] | None:
    names = []
    for pod in pods(sim):
        if pod["status"] != "RUNNING" or "--q" not in pod["name"]:
            continue
        s = state_dir(sim, pod["id"])
        if next(iter(s.glob("current.*")), None) is not None and not list(s.glob("*.exit")):
            names.append(pod["name"])
    return names if len(names) == 2 else None


def _started_on(sim: Sim) -> dict[str, list[str]]:
    """queue number -> the cells its machine ever started (their .starts record)."""
    out: dict[str, list[str]] = {}
    for pod in pods(sim):
        if "--q" in pod["name"]:
            q = pod["name"].split("--q")[1].split("--")[0]
            out[q] = recorded(state_dir(sim, pod["id"]), ".starts")
    return out


def test_machines_two_to_three_moves_pending_cells_to_the_new_machine_and_every_cell_runs_once(
    sim: Sim, tmp_path: Path
) -> None:
    d, env = sweep_project(sim, tmp_path, SLOW)
    first = gj(d, env, "apply", "--auto-approve")
    assert first.returncode == 0, first.stdout + first.stderr
    poll("both queues in their first cell", lambda: _both_queues_in_their_first_cell(sim), 120, 0.1)

    (d / "job.yaml").write_text(SLOW.replace("machines: 2", "machines: 3"))
    plan = gj(d, env, "plan", "--detailed-exitcode")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    # phase 1: each old queue's last cell leaves (a new version without it), nothing lands yet
    assert "leaves q1 -> q3 (not started yet)" in plan.stdout and "leaves q2 -> q3" in plan.stdout, (
        plan.stdout
    )
    assert "update in place run abl--q1" in plan.stdout and "abl.q3" not in plan.stdout, plan.stdout
    leave = gj(d, env, "apply", "--auto-approve")
    assert leave.returncode == 0, leave.stdout + leave.stderr
    record = json.loads((d / ".gpujob" / "sweeps" / "abl.json").read_text())
    leaving = {c: (v["origin"], v["to"]) for c, v in record["leaving"].items()}
    assert sorted(leaving.values()) == [(1, 3), (2, 3)], record

    # phase 2: a later plan reads each old queue's machine; the cells land once it runs the new
    # version (picked up before its next cell) and never started them
    last: list[str] = []

    def landing() -> str | None:
        p = gj(d, env, "plan")
        last[:] = [p.stdout + p.stderr]
        return p.stdout if "lands (q1 -> q3)" in p.stdout and "lands (q2 -> q3)" in p.stdout else None

    try:
        landed = poll("both cells proven and landing on q3", landing, deadline_s=120, every=0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {last}") from None
    assert "abl.q3.pod.create" in landed, landed
    started = _started_on(sim)
    assert not any(c in started.get(str(o), []) for c, (o, _) in leaving.items()), (leaving, started)
    land = gj(d, env, "apply", "--auto-approve")
    assert land.returncode == 0, land.stdout + land.stderr
    assert "abl.q3.pod.create" in land.stdout, land.stdout
    record = json.loads((d / ".gpujob" / "sweeps" / "abl.json").read_text())
    assert record["leaving"] == {} and all(record["cells"][c] == 3 for c in leaving), record
    again = gj(d, env, "plan")  # the rebalance converged (a drained old queue may want its stop)
    assert again.returncode in (0, 2) and "abl.q3.pod.no-op" in again.stdout, again.stdout + again.stderr
    assert not any(
        w in again.stdout for w in ("leaves q", "lands (q", "waits to land", "update in place run")
    )

    watch = subprocess.run(
        [sys.executable, "-m", "gpujob", "watch", "--interval", "1s", "--probe", "0.2s"],
        cwd=d, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert watch.returncode == 0, watch.stdout + watch.stderr
    cells = sorted(p.name for p in (d / "outputs").iterdir() if p.is_dir() and p.name != ".gpujob")
    assert len(cells) == 6, (cells, watch.stdout)
    queues = {}
    for cell in cells:
        got = d / "outputs" / cell
        assert (got / "finishes.txt").read_text().splitlines() == [cell], cell  # exactly one exit 0
        rec = dict(line.split("=", 1) for line in (got / "gpujob-cell.txt").read_text().splitlines())
        assert rec["exit"] == "0" and rec["starts"] == "1", rec
        queues[cell] = rec["queue"]
    assert {c: queues[c] for c in leaving} == dict.fromkeys(leaving, "q3"), queues  # the new machine ran them
    started = _started_on(sim)  # and no machine ever started a cell another one ran
    assert sorted(c for cs in started.values() for c in cs) == cells, started
    done = gj(d, env, "plan", "--detailed-exitcode")
    assert done.returncode == 0 and "No changes" in done.stdout, done.stdout + done.stderr


def test_watch_lands_the_leaving_cells_and_watches_the_new_queue_to_its_end(sim: Sim, tmp_path: Path) -> None:
    """Phase 1 by `apply` (watch applies no run change of its own), then `gpujob watch` alone: it proves
    the leaving cells on each old machine, creates the new queue's machine and watches it to its end."""
    d, env = sweep_project(sim, tmp_path, SLOW)
    first = gj(d, env, "apply", "--auto-approve")
    assert first.returncode == 0, first.stdout + first.stderr
    poll("both queues in their first cell", lambda: _both_queues_in_their_first_cell(sim), 120, 0.1)
    (d / "job.yaml").write_text(SLOW.replace("machines: 2", "machines: 3"))
    leave = gj(d, env, "apply", "--auto-approve")
    assert leave.returncode == 0 and "abl.q3" not in leave.stdout, leave.stdout + leave.stderr
    watch = subprocess.run(
        [sys.executable, "-m", "gpujob", "watch", "--interval", "1s", "--probe", "0.2s"],
        cwd=d, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "abl--q3" in watch.stdout, watch.stdout
    assert watch.returncode == 0, watch.stdout + watch.stderr
    cells = sorted(p.name for p in (d / "outputs").iterdir() if p.is_dir() and p.name != ".gpujob")
    assert len(cells) == 6, (cells, watch.stdout)
    queues = {}
    for cell in cells:
        got = d / "outputs" / cell
        assert (got / "finishes.txt").read_text().splitlines() == [cell], cell  # exactly one exit 0
        rec = dict(line.split("=", 1) for line in (got / "gpujob-cell.txt").read_text().splitlines())
        assert rec["exit"] == "0" and rec["starts"] == "1", rec
        queues[cell] = rec["queue"]
    assert "q3" in queues.values(), (queues, watch.stdout)  # the new machine ran cells placed on the old ones
    record = json.loads((d / ".gpujob" / "sweeps" / "abl.json").read_text())
    assert record["leaving"] == {} and sorted(set(record["cells"].values())) == [1, 2, 3], record
    started = _started_on(sim)
    assert sorted(c for cs in started.values() for c in cs) == cells, started
    assert [p["name"] for p in pods(sim) if p["status"] == "RUNNING"] == [], "a finished queue stops its pod"
