"""A sweep on 2 Paperspace machines in the simulator, the same promises as on RunPod: the plan shows
the cells with a cost; under `gpujob watch`, with one machine forced off mid-queue (PS2's auto-shutdown,
Paperspace's own interruption), every cell runs to exit 0 exactly once, the interrupted one resumes
from its checkpoint, each result comes home to ./outputs/<cell>/, a drained queue's machine is
stopped, and the destroy gate covers every cell (a result whose local copy is gone is pulled again
before a machine and its disk go)."""

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
    machines,
    start_watch,
    sweep_job,
    sweep_project,
)

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

JOB = sweep_job(platform="paperspace", storage="{volume_gb: 50, mount: /workspace}")


def _mid_queue(sim: Sim) -> str | None:
    """A running queue machine that finished a cell and is inside its next one, past its first
    checkpoint and a step or more before its end."""
    for m in machines(sim):
        if m["state"] != "ready" or "--q" not in m["name"]:
            continue
        ws = sim.data_dir / "paperspace" / "machines" / m["id"] / "disk" / "workspace"
        now = in_flight(ws / ".gpujob" / "abl.sweep" / "state", ws / "ckpt")
        if now is not None and 1 <= now[1] <= 2:
            return str(m["id"])
    return None


def test_a_sweep_on_two_paperspace_machines_runs_every_cell_once_and_the_gate_covers_every_cell(
    sim: Sim, tmp_path: Path
) -> None:
    d, env = sweep_project(sim, tmp_path, JOB)

    plan = gj(d, env, "plan")
    assert plan.returncode in (0, 2), plan.stdout + plan.stderr
    assert "abl.q1.machine.create" in plan.stdout and "abl.q2.machine.create" in plan.stdout, plan.stdout
    assert "sweep abl: 4 cells on 2 machines" in plan.stdout, plan.stdout
    # the sweep's line stands once above its queues (#41); each queue's block keeps its own cells
    line = next(x for x in plan.stdout.splitlines() if "queue q1: " in x)
    assert re.search(r"lr-1e-3\.seed-1\.\w+ 20m \$\d+\.\d\d", line), line  # each cell with its cost

    watch = start_watch(d, env)
    try:
        victim = poll(
            "a queue machine in the middle of its queue", lambda: _mid_queue(sim), deadline_s=120, every=0.2
        )
        assert sim.inject("auto_shutdown", machine_id=victim)["stopped"] == [victim]
        out, _ = watch.communicate(timeout=300)
    finally:
        watch.kill()
    assert watch.returncode == 0, out
    queue_machines = [m for m in machines(sim) if "--q" in m["name"]]
    assert sorted(m["name"].split("--")[1] for m in queue_machines) == ["q1", "q2"], queue_machines
    assert all(m["state"] == "off" for m in queue_machines), "a drained queue stops its machine"

    cells = home_cells(d)
    assert len(cells) == 4, (cells, out)
    results = set()
    resumed = 0
    for cell in cells:
        got = d / "outputs" / cell
        result = json.loads((got / "result.json").read_text())
        assert result["cell"] == cell
        results.add((result["LR"], result["SEED"]))
        assert (got / "finishes.txt").read_text().splitlines() == [cell], cell  # exactly one exit 0
        record = cell_record(got)
        assert record["exit"] == "0" and "outside" not in record, record
        resumed += result["resumed_from"] > 0
    assert resumed >= 1, "the cell in flight when its machine went off resumed from its own checkpoint"
    assert results == {(lr, s) for lr in ("1e-3", "1e-4") for s in ("1", "2")}
    assert sorted({p.parent.name for p in (d / "checkpoints").glob("*/step_*.json")}) == cells
    after = gj(d, env, "status")  # machines off: the cell table from the pulled records
    assert after.returncode == 0, after.stdout + after.stderr
    table = re.findall(r"^  (lr-\S+)\s+(\w+)\s+gpujob-abl--q[12]--", after.stdout, re.M)
    assert sorted(table) == sorted((c, "done") for c in cells), after.stdout
    assert "sweep abl: 4 cells: 4 done, 0 running, 0 pending, 0 failed" in after.stdout, after.stdout

    lost = d / "outputs" / cells[-1] / "result.json"
    lost.unlink()
    refused = gj(d, env, "destroy", "--auto-approve")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    ids = sorted(set(re.findall(r"--approve ([^\s`]+)", refused.stderr)))
    assert ids == ["abl.q1.machine.terminate", "abl.q2.machine.terminate"], refused.stderr
    gone = gj(d, env, "destroy", "--auto-approve", *[a for i in ids for a in ("--approve", i)])
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert json.loads(lost.read_text())["cell"] == cells[-1]  # the gate pulled it again first
    assert [m for m in machines(sim) if m.get("ended_at") is None] == []
