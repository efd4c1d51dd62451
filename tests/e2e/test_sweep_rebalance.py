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
from tests.e2e.sweep_support import (
    cell_record,
    gj,
    home_cells,
    pods,
    recorded,
    run_watch,
    start_watch,
    state_dir,
    sweep_project,
)
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


def _ran_once(d: Path, cells: list[str]) -> dict[str, str]:
    """cell -> the queue that ran it, each cell checked to have exited 0 exactly once and started once."""
    queues = {}
    for cell in cells:
        got = d / "outputs" / cell
        assert (got / "finishes.txt").read_text().splitlines() == [cell], cell  # exactly one exit 0
        rec = cell_record(got)
        assert rec["exit"] == "0" and rec["starts"] == "1", rec
        queues[cell] = rec["queue"]
    return queues


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

    watch = run_watch(d, env)
    assert watch.returncode == 0, watch.stdout + watch.stderr
    cells = home_cells(d)
    assert len(cells) == 6, (cells, watch.stdout)
    queues = _ran_once(d, cells)
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
    watch = run_watch(d, env)
    assert "abl--q3" in watch.stdout, watch.stdout
    assert watch.returncode == 0, watch.stdout + watch.stderr
    cells = home_cells(d)
    assert len(cells) == 6, (cells, watch.stdout)
    queues = _ran_once(d, cells)
    assert "q3" in queues.values(), (queues, watch.stdout)  # the new machine ran cells placed on the old ones
    record = json.loads((d / ".gpujob" / "sweeps" / "abl.json").read_text())
    assert record["leaving"] == {} and sorted(set(record["cells"].values())) == [1, 2, 3], record
    started = _started_on(sim)
    assert sorted(c for cs in started.values() for c in cs) == cells, started
    assert [p["name"] for p in pods(sim) if p["status"] == "RUNNING"] == [], "a finished queue stops its pod"


HOLDER = """
import sys
from pathlib import Path
from gpujob.state import open_store
with open_store(Path(sys.argv[1])).lock("abl--q3", command="gpujob apply (another one)"):
    print("ready", flush=True)
    sys.stdin.readline()
"""


def test_watch_creates_the_new_queues_machine_only_under_its_lock_and_not_as_a_recovery(
    sim: Sim, tmp_path: Path
) -> None:
    """Another gpujob holds the new queue's lock when its cells land: watch says so and creates nothing
    for it; once the lock is free it takes it and creates the machine. A queue job that ran before (its
    ledger has a run and a recovery this hour) with --max-recoveries-per-hour 1: the planned create is
    no recovery, so the queue is not parked and its ledger counts no new recovery."""
    from datetime import UTC, datetime, timedelta

    from gpujob.state import open_store
    from gpujob.watch.ledger import Ledger, Recovery, read_ledger, save_ledger

    d, env = sweep_project(sim, tmp_path, SLOW)
    first = gj(d, env, "apply", "--auto-approve")
    assert first.returncode == 0, first.stdout + first.stderr
    poll("both queues in their first cell", lambda: _both_queues_in_their_first_cell(sim), 120, 0.1)
    (d / "job.yaml").write_text(SLOW.replace("machines: 2", "machines: 3"))
    leave = gj(d, env, "apply", "--auto-approve")
    assert leave.returncode == 0 and "abl.q3" not in leave.stdout, leave.stdout + leave.stderr
    store = open_store(d / "job.yaml")
    now = datetime.now(UTC)
    earlier = Recovery(at=now - timedelta(minutes=10), what="abl.q3.pod.start (an earlier run)")
    save_ledger(store, Ledger(job="abl--q3", first_seen=now - timedelta(hours=2),
                              run_started_at=now - timedelta(hours=2), recoveries=[earlier]))  # fmt: skip

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(d / "job.yaml")],
        cwd=d, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    out = tmp_path / "watch.out"
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with out.open("w") as sink:
            watch = start_watch(d, env, sink, "--max-recoveries-per-hour", "1")

        def landed_while_locked() -> bool:
            record = json.loads((d / ".gpujob" / "sweeps" / "abl.json").read_text())
            both = record["leaving"] == {} and list(record["cells"].values()).count(3) == 2
            return both and "is locked by" in out.read_text()

        try:
            poll("both cells landed on q3 while its lock is held", landed_while_locked, 120, 0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {out.read_text()}") from None
        said = out.read_text()
        assert "cells landed on queue abl--q3, but job 'abl--q3' is locked by" in said, said
        assert "gpujob apply (another one)" in said and "not creating its machine" in said, said
        assert not [p for p in pods(sim) if "abl--q3" in p["name"]], "created under another gpujob's lock"
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(10)
    try:
        code = watch.wait(300)
    finally:
        if watch.poll() is None:
            watch.kill()
    said = out.read_text()
    assert code == 0, said
    assert said.count("is locked by") == 1, said  # said once, tried again each tick
    assert "abl--q3  create: pod gpujob-abl--q3" in said and "limit" not in said, said
    ledger = read_ledger(store, "abl--q3")
    assert ledger is not None and ledger.parked is None and ledger.recoveries == [earlier], ledger
    cells = home_cells(d)
    assert len(cells) == 6, (cells, said)
    queues = [
        dict(line.split("=", 1) for line in (d / "outputs" / c / "gpujob-cell.txt").read_text().splitlines())
        for c in cells
    ]
    assert all(q["exit"] == "0" and q["starts"] == "1" for q in queues), queues
    assert [q["queue"] for q in queues].count("q3") == 2, queues  # the machine created later ran both
