"""A sweep with `fallback:` (docs/sweeps.md, "With fallback:"), in the simulator: four cells on two
spot queue pods under `failover: auto` and a real `gpujob watch`. RunPod runs out of capacity and one
queue's pod is preempted in the middle of its queue: watch moves that queue to Paperspace, carrying its
records of the cells it finished (they never run again, there or here) and its in-flight cell's newest
verified checkpoint (the cell resumes at that step), and the queue runs its remaining cells there;
watch ends with every cell's results home and nothing billing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.sweep_support import (
    cell_record,
    in_flight,
    machines,
    pods,
    start_watch,
    state_dir,
    sweep_job,
    sweep_project,
)

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

FALLBACK = """budget: {max_hourly_usd: 3.0}
fallback:
  - platform: paperspace
    machine: {gpu: [A4000, A5000], regions: [ny2], template: ubuntu-22.04, public_ip: dynamic}
    storage: {volume_gb: 50, mount: /workspace}
failover: auto
"""

# The verify starts no Python: watch verifies every checkpoint it pulls, and the preemption must land
# while a cell's checkpoint is home and verified with two to four of its six steps saved; a Python per
# file kept the pulls behind that window on a busy machine, and the test waited out its limit.
JOB = sweep_job(pull="continuous", steps=6, more=FALLBACK, verify="test -s {file}")


def _verified_home(d: Path, queue: str, cell: str) -> bool:
    """Whether watch's continuous pull brought a checkpoint of `cell` home, verified (what a move carries)."""
    f = d / ".gpujob" / "pulls" / f"abl--{queue}.json"
    files = json.loads(f.read_text())["files"] if f.is_file() else []
    return any(x["name"].startswith(cell + "/") and x["verified"] for x in files)


def _mid_queue(sim: Sim, d: Path) -> tuple[str, str, int] | None:
    """(pod id, its in-flight cell, checkpoints saved) of a running queue pod that finished a cell and
    is inside its next one, two to four of its six steps saved (so the preemption lands inside it),
    with the finished cells' records and a verified checkpoint of the cell in flight pulled home."""
    for pod in pods(sim):
        if pod["status"] != "RUNNING" or "--q" not in pod["name"]:
            continue
        s = state_dir(sim, pod["id"])
        now = in_flight(s, sim.data_dir / "runpod" / "pods" / pod["id"] / "volume" / "ckpt")
        if now is None or not 2 <= now[1] <= 4:
            continue
        cell, saved, queue = now
        done = [p.name[: -len(".exit")] for p in s.glob("*.exit")]
        if _verified_home(d, queue, cell) and all(
            (d / "outputs" / c / "gpujob-cell.txt").is_file() for c in done
        ):
            return str(pod["id"]), cell, saved
    return None


def test_a_preempted_queue_moves_to_paperspace_with_its_records_and_checkpoint_and_every_cell_runs_once(
    sim: Sim, tmp_path: Path
) -> None:
    d, env = sweep_project(sim, tmp_path, JOB)
    log = d / "watch.log"
    with log.open("w") as out:
        watch = start_watch(d, env, out)
        try:
            victim, cell, _saved = poll(
                "a queue pod in the middle of its queue", lambda: _mid_queue(sim, d), 120, 0.2
            )
            finished = sorted(p.name[: -len(".exit")] for p in state_dir(sim, victim).glob("*.exit"))
            sim.inject("capacity", platform="runpod")
            assert sim.inject("preempt", pod_id=victim)["preempted"] == [victim]
            watch.wait(timeout=300)
        finally:
            watch.kill()
    text = log.read_text()
    assert watch.returncode == 0, text
    moved = [line for line in text.splitlines() if "  moved: from runpod to paperspace" in line]
    assert len(moved) == 1, text
    step = int(re.search(rf"carried {re.escape(cell)}/step_(\d+)\.json", moved[0]).group(1))
    assert step > 0, moved
    # every cell's results home, each finished exactly once (its own finishes log, pulled with them)
    results = sorted(p.parent.name for p in (d / "outputs").glob("*/result.json"))
    assert len(results) == 4, (results, text)
    for c in results:
        got = d / "outputs" / c
        rec = cell_record(got)
        assert rec["exit"] == "0" and rec["cell"] == c, rec
        assert (got / "finishes.txt").read_text().splitlines() == [c], c
    # the moved queue: its finished cells never ran on Paperspace (the carried records said so to its
    # wrapper there), and its cell in flight resumed there from the carried step
    ps = machines(sim)
    assert len(ps) == 1, (ps, text)
    disk = sim.data_dir / "paperspace" / "machines" / ps[0]["id"] / "disk" / "workspace"
    assert finished, "the victim had finished a cell before its preemption"
    for c in finished:
        assert not (disk / "sweeps" / "abl" / c).exists(), (c, text)
        assert (disk / ".gpujob" / "abl.sweep" / "state" / f"{c}.exit").read_text().strip() == "0", c
    starts = (disk / "sweeps" / "abl" / cell / "starts.txt").read_text().splitlines()
    assert starts == [f"{cell} from {step}"], (starts, text)
    assert [p["name"] for p in pods(sim) if p["status"] == "RUNNING"] == [], text
    assert [m["name"] for m in ps if m["state"] not in ("off", "stopped")] == [], (ps, text)
