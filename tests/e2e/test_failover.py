"""Run anywhere, in the simulator: gpujob init's RunPod spot job with a Paperspace fallback.

RunPod runs out of every GPU the job accepts and its pod is preempted; `gpujob watch` (failover: auto)
moves the job to Paperspace, carrying the newest checkpoint verified here, and the run resumes there
from a step > 0, with nothing of the job running on RunPod. With failover: ask, watch prints the
approval line and waits; `gpujob plan` shows the move with both platforms' money and the checkpoint.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e import failover_support as fo
from tests.e2e.e2e_support import poll
from tests.e2e.failover_support import JOB


def test_auto_moves_a_preempted_spot_job_to_paperspace_and_resumes(sim: Sim, tmp_path: Path) -> None:
    p = fo.applied(sim, tmp_path, "anywhere", "auto")
    watching = p.popen(
        "watch", "--max-recoveries-per-hour", "50"
    )  # the user's watch: 30 s ticks, 2.5 s probes
    try:
        fo.poll_verified_by_watch(p)
        # Every GPU, every cloud: the catalog shows no stock until a RunPod create takes the fault (none does).
        fo.preempt(sim, p)
        t0 = time.monotonic()
        moved = fo.poll_event(p, "the move to Paperspace", "moved", deadline_s=180)
        logs = fo.poll_resumed(p, "Paperspace", deadline_s=max(5.0, 180 - (time.monotonic() - t0)))
        elapsed = time.monotonic() - t0
        # Watch follows the job to Paperspace at once: its checkpoints (one every 2 s, keep: 3) are
        # pulled from there within a few probes, not after the next full tick (30 s, by then rotated away).
        pulled = poll("a pull from Paperspace", lambda: next(
            (e for e in fo.events(p) if e["event"] == "pulled" and e["at"] > moved["at"]), None), deadline_s=60)  # fmt: skip
    finally:
        out = fo.stop(watching)
    assert int(logs.group(1)) > 0, out
    assert elapsed <= 180, elapsed
    after = datetime.fromisoformat(pulled["at"]) - datetime.fromisoformat(moved["at"])
    assert after.total_seconds() <= 15, (after, out)
    assert "runpod" in moved["happened"] and "paperspace" in moved["happened"], moved
    assert re.search(r"carried step_\d+\.\w+ \(step \d+\)", moved["did"]), moved
    failover = fo.event(p, "failover")
    assert failover is not None and "no capacity" in failover["happened"], failover
    record = fo.where(p)
    assert record["platform"] == "paperspace" and record["moves"][-1]["outcome"] == "done", record
    assert record["moves"][-1]["step"] > 0
    # Nothing of the job runs on RunPod; its network volume is kept (nothing was deleted).
    pods = [o for o in p.sim_objects("pods") if str(o.get("name", "")).startswith(f"gpujob-{JOB}--")]
    assert pods and all(o.get("status") != "RUNNING" for o in pods), pods
    assert fo.mine(p, "volumes"), "the RunPod volume must be kept"
    machines = fo.mine(p, "machines")
    assert machines, p.sim.control("state").keys()
    # The carry: the very bytes verified here are on the new machine's disk, in checkpoint.dir.
    carried = record["moves"][-1]["checkpoint"]
    there = (
        sim.data_dir / "paperspace" / "machines" / machines[0]["id"] / "disk" / "workspace" / "ckpt" / carried
    )
    assert there.is_file() and fo.sha(there) == fo.sha(p.dir / "checkpoints" / carried)
    # One job, two platforms' meters: status shows both, cost sums them.
    status = p.gj("status").stdout
    assert f"{JOB} (paperspace" in status and "also on:   runpod:" in status, status
    cost = p.gj("cost", check=False).stdout
    assert f"{JOB} [paperspace]" in cost and f"{JOB} [runpod]" in cost, cost
    spent = [float(x) for x in re.findall(rf"{JOB} \[\w+\]  spent \$([\d.]+)", cost)]
    total = float(re.search(r"TOTAL spent \$([\d.]+)", cost).group(1))
    assert len(spent) == 2 and abs(sum(spent) - total) < 0.011, cost
    # Goodput is the job's (watch's ledger followed it through the move): printed once, not per platform.
    assert len(re.findall(r"^    goodput ", cost, re.M)) == 1, cost


def test_plan_shows_the_move_and_ask_waits_with_the_approval_line(sim: Sim, tmp_path: Path) -> None:
    p = fo.applied(sim, tmp_path, "anywhere-ask", "ask")
    watching = fo.watch(p)
    try:
        fo.poll_verified_by_watch(p)
        fo.preempt(sim, p)
        approval = f"--approve {JOB}.move"
        poll("the approval line", lambda: any(approval in e["did"] for e in fo.events(p)), deadline_s=60)
    finally:
        out = fo.stop(watching)
    assert approval in out
    assert not fo.mine(p, "machines"), "ask must wait"
    plan = p.gj("plan", check=False).stdout
    assert f"{JOB}.move" in plan, plan
    assert "paperspace" in plan and "runpod" in plan
    assert re.search(r"carries step_\d+\.\w+ \(step \d+\)", plan), plan
    assert re.search(r"\$\d+\.\d\d/month while kept", plan), plan
    # The plan's move, applied by a person: the job runs on Paperspace, resumed from the carried step.
    p.gj("apply", "--auto-approve", timeout=240)
    record = fo.where(p)
    assert record["platform"] == "paperspace" and record["moves"][-1]["outcome"] == "done", record
    resumed = fo.poll_resumed(p, "Paperspace")
    assert int(resumed.group(1)) == record["moves"][-1]["step"] > 0


def test_a_failed_move_leaves_the_job_parked_not_lost(sim: Sim, tmp_path: Path) -> None:
    p = fo.applied(sim, tmp_path, "anywhere-fail", "auto")
    watching = p.popen(
        "watch", "--interval", "1s", "--probe", "0.2s", extra_env={"GPUJOB_FAILOVER_CREATE_WAIT": "4"}
    )
    try:
        fo.poll_verified_by_watch(p)
        sim.inject("capacity", platform="paperspace")  # the new platform refuses too
        fo.preempt(sim, p)
        failed = fo.poll_event(p, "the move to fail", "move-failed", deadline_s=90)
    finally:
        out = fo.stop(watching)
    assert "parked on runpod" in failed["did"], (failed, out)
    record = fo.where(p)
    assert record["platform"] == "runpod" and record["entry"] == -1, record  # back where its data is
    assert record["moves"][-1]["outcome"].startswith("failed:"), record
    # Nothing lost: the verified local copy is intact, the RunPod volume kept, nothing half-made elsewhere.
    carried = record["moves"][-1]["checkpoint"]
    assert carried in fo.verified(p) and (p.dir / "checkpoints" / carried).is_file()
    assert fo.mine(p, "volumes")
    assert not fo.mine(p, "machines")
    status = p.gj("status", check=False).stdout
    assert "runpod" in status.lower(), status
