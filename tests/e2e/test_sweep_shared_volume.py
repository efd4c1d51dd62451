"""A sweep on one RunPod network volume in the simulator: 2 spot queue pods mount it (in its data
center), the wrapper and queue files are placed on it once before any cell starts; under `gpujob
watch`, one pod preempted mid-queue, every cell exits 0 exactly once (the interrupted one resumes from
its checkpoint on the volume) and comes home to ./outputs/<cell>/; parked and running again, new pods
find every cell done on the volume and run none again; the delete of the volume is gated on every cell
of both queues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.sweep_support import gj, in_flight, pods, start_watch, sweep_job, sweep_project, volumes

pytestmark = [pytest.mark.sim, pytest.mark.ssh]

JOB = sweep_job(storage="{mount: /workspace, network_volume: {name: cells, size_gb: 10}}")


def _finishes(d: Path) -> dict[str, list[str]]:
    return {p.parent.name: p.read_text().splitlines() for p in (d / "outputs").glob("*/finishes.txt")}


def _mid_queue(sim: Sim) -> str | None:
    """A running queue pod that finished a cell and is inside its next one, one or two of its 4 steps
    saved (so a preemption surely lands inside the cell)."""
    for pod in pods(sim):
        if pod["status"] != "RUNNING" or "--q" not in pod["name"] or not pod["nv"]:
            continue
        root = sim.data_dir / "runpod" / "volumes" / pod["nv"]
        s = root / ".gpujob" / "abl.sweep" / "state"
        now = in_flight(s, root / "ckpt", s / f"current.{pod['name'].split('--')[1]}")
        if now is not None and 1 <= now[1] <= 2:
            return str(pod["id"])
    return None


def test_a_sweep_on_one_network_volume_runs_every_cell_once_and_gates_the_volume_on_every_cell(
    sim: Sim, tmp_path: Path
) -> None:
    d, env = sweep_project(sim, tmp_path, JOB)

    valid = gj(d, env, "validate")
    assert valid.returncode == 0, valid.stdout + valid.stderr
    plan = gj(d, env, "plan")
    assert plan.returncode in (0, 2), plan.stdout + plan.stderr
    out = plan.stdout
    assert "abl.q1.network_volume.create" in out and "abl.q2.network_volume" not in out, out
    assert "abl.q1.pod.create" in out and "abl.q2.pod.create" in out, out
    assert "all 2 queue pods mount network volume cells and run in its data center EU-RO-1" in out, out
    assert "created by abl.q1's plan" in out, out  # q2's pod waits for the volume q1 makes

    watch = start_watch(d, env)
    try:
        victim = poll(
            "a queue pod in the middle of its queue", lambda: _mid_queue(sim), deadline_s=120, every=0.2
        )
        assert sim.inject("preempt", pod_id=victim)["preempted"]
        out, _ = watch.communicate(timeout=300)
    finally:
        watch.kill()
    assert watch.returncode == 0, out

    (vol,) = volumes(sim)  # one volume for the whole sweep, in the data center the plan named
    assert vol["name"].startswith("gpujob-abl--cells--") and vol["data_center"] == "EU-RO-1", vol
    queue_pods = [p for p in pods(sim) if "--q" in p["name"] and p.get("ended_at") is None]
    assert sorted(p["name"].split("--")[1] for p in queue_pods) == ["q1", "q2"], queue_pods
    assert {p["nv"] for p in queue_pods} == {vol["id"]} and {p["data_center"] for p in queue_pods} == {
        "EU-RO-1"
    }
    assert all(p["status"] == "EXITED" for p in queue_pods), "a drained queue stops its pod"

    # every cell exited 0 exactly once, whichever queue ran it, and came home to ./outputs/<cell>/
    finishes = _finishes(d)
    assert len(finishes) == 4 and all(lines == [cell] for cell, lines in finishes.items()), finishes
    got = [json.loads((d / "outputs" / c / "result.json").read_text()) for c in finishes]
    results = {(r["LR"], r["SEED"]) for r in got}
    assert any(r["resumed_from"] > 0 for r in got), "the preempted cell resumed from its checkpoint"
    assert results == {(lr, s) for lr in ("1e-3", "1e-4") for s in ("1", "2")}
    for cell in finishes:
        record = dict(
            line.split("=", 1) for line in (d / "outputs" / cell / "gpujob-cell.txt").read_text().splitlines()
        )
        assert record["exit"] == "0" and "outside" not in record, (
            record
        )  # the other queue's writes are not this cell's
    ckpts = sorted(
        p.relative_to(d / "checkpoints").parts[0] for p in (d / "checkpoints").glob("*/step_*.json")
    )
    assert sorted(set(ckpts)) == sorted(finishes), ckpts
    from gpujob.state import open_store

    store = open_store(d / "job.yaml")
    pulled_by = {}
    for q in (1, 2):  # each queue pulled its own cells' checkpoints, never the other queue's in flight
        record = json.loads(store.read(f"pulls/abl--q{q}.json") or "{}")
        pulled_by[q] = {f["name"].split("/")[0] for f in record["files"]}
    assert pulled_by[1] and pulled_by[2] and not pulled_by[1] & pulled_by[2], pulled_by
    assert pulled_by[1] | pulled_by[2] == set(finishes), pulled_by
    status = gj(d, env, "status")
    assert "sweep abl: 4 cells: 4 done, 0 running, 0 pending, 0 failed" in status.stdout, status.stdout

    # on the volume: one state dir for both queues, and the version's files placed before any cell began
    root = sim.data_dir / "runpod" / "volumes" / vol["id"]
    state = root / ".gpujob" / "abl.sweep" / "state"
    assert sorted(p.stem for p in state.glob("*.exit")) == sorted(finishes)
    (version,) = [p for p in (root / ".gpujob" / "abl.sweep").iterdir() if p.name.startswith("v")]
    placed = [p for p in version.rglob("*") if p.is_file()]
    assert {p.name for p in placed} >= {"queue.sh", "q1.txt", "q2.txt"} and len(placed) == 3 + 4, placed
    assert not [p for p in placed if ".tmp." in p.name] and all(p.stat().st_nlink == 1 for p in placed)
    first_start = min(p.stat().st_mtime for p in state.glob("*.t0"))
    assert max(p.stat().st_mtime for p in placed) <= first_start, (
        "every file was placed before any cell started"
    )
    assert sorted(p.name for p in (root / "code").iterdir()) == ["q1", "q2"]  # one code tree per queue

    # parked: both queue pods terminated, the volume and every cell on it kept; running again: new pods
    # on the same volume find every cell done there and run none again
    (d / "job.yaml").write_text(JOB + "state: parked\n")
    terminate = [arg for q in (1, 2) for arg in ("--approve", f"abl.q{q}.pod.terminate")]
    parked = gj(d, env, "apply", "--auto-approve", *terminate)
    assert parked.returncode == 0, parked.stdout + parked.stderr
    assert [v["id"] for v in volumes(sim)] == [vol["id"]]
    assert [p for p in pods(sim) if p.get("ended_at") is None] == [], parked.stdout
    assert sorted(p.stem for p in state.glob("*.exit")) == sorted(finishes)
    # (a run that finished is started again only for a changed job file: a comment is a change)
    # every cell's record is pulled here: no queue has anything left to run, so no pod is created
    (d / "job.yaml").write_text(JOB + "# running again after a park\n")
    idle = gj(d, env, "apply", "--auto-approve")
    assert idle.returncode == 0, idle.stdout + idle.stderr
    assert [p for p in pods(sim) if p.get("ended_at") is None] == [], idle.stdout
    assert idle.stdout.count("has nothing left to run") == 2, idle.stdout
    # a checkout without q1's records (never pulled here): q1 runs on a new pod on the same volume,
    # which finds every cell done there and runs none again
    for cell in (version / "q1.txt").read_text().split():
        (d / "outputs" / cell / "gpujob-cell.txt").unlink()
    again = gj(d, env, "apply", "--auto-approve")
    assert again.returncode == 0, again.stdout + again.stderr
    running = [p for p in pods(sim) if p.get("ended_at") is None]
    assert len(running) == 1 and {p["nv"] for p in running} == {vol["id"]}, again.stdout
    for q in (1,):
        log = root / ".gpujob" / f"abl--q{q}" / "run.log"
        poll(f"queue q{q} drained again", lambda log=log: "not run again" in log.read_text() and "done" in log.read_text(), deadline_s=60)  # fmt: skip
    on_volume = {
        p.parent.name: p.read_text().splitlines() for p in (root / "sweeps" / "abl").glob("*/finishes.txt")
    }
    assert on_volume == finishes  # no cell ran a second time

    # the delete of the volume covers every cell of both queues: once no queue pod mounts it (parked
    # again), a result of a q2 cell whose local copy is gone is pulled again through a temporary pod
    (d / "job.yaml").write_text(JOB + "state: parked\n")
    parked = gj(d, env, "apply", "--auto-approve", *terminate)
    assert parked.returncode == 0, parked.stdout + parked.stderr
    assert [p for p in pods(sim) if p.get("ended_at") is None] == [] and len(volumes(sim)) == 1
    q2_cells = (version / "q2.txt").read_text().split()
    lost = d / "outputs" / q2_cells[0] / "result.json"
    lost.unlink()
    gone = gj(
        d, env, "destroy", "--auto-approve", "--approve", "abl.q1.network_volume.delete-volume", timeout=300
    )
    assert gone.returncode == 0, gone.stdout + gone.stderr
    said = gone.stdout + gone.stderr
    assert "every cell of the sweep's 2 queues" in said and "temporary pod" in said, said[-3000:]
    assert json.loads(lost.read_text())["cell"] == q2_cells[0]
    assert volumes(sim) == [] and [p for p in pods(sim) if p.get("ended_at") is None] == []
