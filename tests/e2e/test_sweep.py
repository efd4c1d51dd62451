"""The 3×2 sweep on 2 spot pods in the simulator under `gpujob watch`, one pod preempted mid-queue:
every cell finishes exactly once and its result comes home to ./outputs/<cell>/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.sweep_support import (
    cell_record,
    gj,
    home_cells,
    in_flight,
    pods,
    start_watch,
    state_dir,
    sweep_job,
    sweep_project,
)

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

JOB = sweep_job(lrs='"1e-3", "3e-4", "1e-4"')


def _mid_queue(sim: Sim) -> str | None:
    """A running queue pod that finished a cell and is inside its next one, past its first checkpoint."""
    for pod in pods(sim):
        if pod["status"] != "RUNNING" or "--q" not in pod["name"]:
            continue
        now = in_flight(
            state_dir(sim, pod["id"]), sim.data_dir / "runpod" / "pods" / pod["id"] / "volume" / "ckpt"
        )
        # one or two of its 4 steps saved: a second or more before it could finish, so the preemption
        # surely lands inside the cell (a cell that finished its work must not be caught at its end)
        if now is not None and 1 <= now[1] <= 2:
            return str(pod["id"])
    return None


def test_a_3x2_sweep_on_two_spot_pods_survives_a_preemption_and_every_cell_finishes_once(
    sim: Sim, tmp_path: Path
) -> None:
    d, env = sweep_project(sim, tmp_path, JOB)

    plan = gj(d, env, "plan")
    assert plan.returncode in (0, 2), plan.stdout + plan.stderr
    assert "abl.q1.pod.create" in plan.stdout and "abl.q2.pod.create" in plan.stdout, plan.stdout
    assert "sweep abl: 6 cells on 2 machines" in plan.stdout, plan.stdout
    assert "GPUJOB_SWEEP_EOF" not in plan.stdout and "run `queue q1 of sweep abl" in plan.stdout, plan.stdout
    assert "lr-1e-3.seed-1." in plan.stdout and "$" in plan.stdout.split("sweep abl")[1], plan.stdout

    watch = start_watch(d, env)
    try:
        poll("a queue pod in the middle of its queue", lambda: _mid_queue(sim), deadline_s=120, every=0.2)
        live = gj(d, env, "status", "--format", "json")  # while the queues run: read from the machines
        assert live.returncode == 0, live.stdout + live.stderr
        rows = {r["job"]: r for r in json.loads(live.stdout)}
        assert sorted(rows) == ["abl--q1", "abl--q2"]
        seen = [c for r in rows.values() for c in r["cells"]]
        assert len(seen) == 6 and {c["state"] for c in seen} <= {"pending", "running", "done"}, seen
        done = [c for c in seen if c["state"] == "done"]
        assert done and all(
            c["seconds"] is not None and c["machine"].startswith("gpujob-abl--q") for c in done
        )
        victim = poll(
            "a queue pod in the middle of its queue", lambda: _mid_queue(sim), deadline_s=120, every=0.2
        )
        assert sim.inject("preempt", pod_id=victim)["preempted"]
        out, _ = watch.communicate(timeout=240)
    finally:
        watch.kill()
    assert watch.returncode == 0, out

    assert (d / "outputs").is_dir(), out
    cells = home_cells(d)
    assert len(cells) == 6, (cells, out)
    results = set()
    resumed = 0
    for cell in cells:
        got = d / "outputs" / cell
        result = json.loads((got / "result.json").read_text())
        assert result["cell"] == cell
        results.add((result["LR"], result["SEED"]))
        assert (got / "finishes.txt").read_text().splitlines() == [cell], cell  # exactly one exit 0
        record = cell_record(got)
        assert record["exit"] == "0" and record["cell"] == cell, record
        assert not any(k == "outside" for k in record), record
        resumed += result["resumed_from"] > 0
    assert results == {(lr, s) for lr in ("1e-3", "3e-4", "1e-4") for s in ("1", "2")}
    assert resumed >= 1, "the preempted cell resumed from its own checkpoint"
    assert [p["name"] for p in pods(sim) if p["status"] == "RUNNING"] == [], "a finished queue stops its pod"
    after = gj(d, env, "status")  # machines stopped: the cell table from the pulled records
    assert after.returncode == 0, after.stdout + after.stderr
    table = re.findall(r"^  (lr-\S+)\s+(\w+)\s+gpujob-abl--q[12]--", after.stdout, re.M)
    assert sorted(table) == sorted((c, "done") for c in cells) and "error:" not in after.stdout, after.stdout
    assert "sweep abl: 6 cells: 6 done, 0 running, 0 pending, 0 failed" in after.stdout, after.stdout

    # The teardown gate covers every cell: a result whose local copy is gone is pulled again (the gate
    # starts the stopped pods to look) before the terminates that erase the volume disks go through.
    lost = d / "outputs" / cells[0] / "result.json"
    lost.unlink()
    approve = [arg for q in (1, 2) for arg in ("--approve", f"abl.q{q}.pod.terminate")]
    gone = gj(d, env, "destroy", "--auto-approve", *approve)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert json.loads(lost.read_text())["cell"] == cells[0]
    assert [p for p in pods(sim) if p["status"] != "TERMINATED" and p.get("ended_at") is None] == []


def test_a_saved_sweep_plan_applies_as_shown_and_destroy_gates_the_cells_in_flight(
    sim: Sim, tmp_path: Path
) -> None:
    d, env = sweep_project(sim, tmp_path, JOB.replace('STEP_S: "1"', 'STEP_S: "2"'))
    saved = gj(d, env, "plan", "-o", "plan.json")
    assert saved.returncode in (0, 2), saved.stdout + saved.stderr
    applied = gj(d, env, "apply", "--auto-approve", "plan.json")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    running = sorted(p["name"] for p in pods(sim) if p["status"] == "RUNNING")
    assert len(running) == 2 and all("--q" in n for n in running), running
    poll(
        "a first checkpoint of a cell",
        lambda: list(sim.data_dir.glob("runpod/pods/*/volume/ckpt/*/step_*.json")),
    )
    pulled = gj(d, env, "pull")  # both queues: each running cell's dir to outputs/<cell>/
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert len(list((d / "outputs").glob("*/starts.txt"))) == 2, pulled.stdout
    # Cells keep finishing and starting until the gate stops the queues (how many depends on the
    # machine's load), so the promise is checked against what was on the volumes, not a count.
    started_before = {
        p.parent.name for p in sim.data_dir.glob("runpod/pods/*/volume/sweeps/abl/*/starts.txt")
    }
    assert len(started_before) >= 2, started_before
    approve = [arg for q in (1, 2) for arg in ("--approve", f"abl.q{q}.pod.terminate")]
    gone = gj(d, env, "destroy", "--auto-approve", *approve)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert [p for p in pods(sim) if p["status"] != "TERMINATED" and p.get("ended_at") is None] == []
    # the cells in flight were stopped by the gate, their started results and checkpoints pulled first
    starts = {p.parent.name for p in (d / "outputs").glob("*/starts.txt")}
    assert started_before <= starts, (started_before, starts, gone.stdout)
    assert sorted((d / "checkpoints").glob("*/step_*.json")), gone.stdout
