"""Run anywhere, in the simulator: gpujob init's RunPod spot job with a Paperspace fallback.

RunPod runs out of every GPU the job accepts and its pod is preempted; `gpujob watch` (failover: auto)
moves the job to Paperspace, carrying the newest checkpoint verified here, and the run resumes there
from a step > 0, with nothing of the job running on RunPod. With failover: ask, watch prints the
approval line and waits; `gpujob plan` shows the move with both platforms' money and the checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
from datetime import datetime
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import Project, poll
from tests.e2e.test_init import new_project
from tests.failover.jobs import FALLBACK

JOB = "anywhere"


def _job(p: Project, mode: str, extra: str = "") -> None:
    p.gj("init", "--name", JOB)
    text = (p.dir / "job.yaml").read_text()
    text = re.sub(r"  interval: [^\n]*\n(  mtbf: [^\n]*\n  write_time: [^\n]*\n)?", "  interval: 2s\n", text)
    text = text.replace(
        "  verify: python3 verify_ckpt.py {file}\n",
        "  verify: python3 verify_ckpt.py {file}\n  pull: continuous\n",
    )
    text = text.replace('STEP_SECONDS: "0.02"', 'STEP_SECONDS: "0.05"')
    text += FALLBACK.replace("__MODE__", mode) + extra
    assert "interval: 2s" in text and "pull: continuous" in text
    # gpujob init's budget is the price cap failover: auto needs: the Paperspace entry has none of its own.
    assert re.search(r"^budget:\n  max_hourly_usd: 1\.0$", text, re.M), text
    assert "max_price_per_hour" not in FALLBACK
    (p.dir / "job.yaml").write_text(text)
    p.gj("validate")


def _watch(p: Project, *args: str) -> subprocess.Popen[str]:
    return p.popen("watch", "--interval", "1s", "--probe", "0.2s", "--max-recoveries-per-hour", "50", *args)


def _events(p: Project) -> list[dict]:
    data = p.store().read("events.jsonl") or b""
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def _verified(p: Project) -> list[str]:
    data = p.store().read(f"pulls/{JOB}.json")
    if data is None:
        return []
    return [f["name"] for f in json.loads(data)["files"] if f["verified"]]


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out


def _running_on(p: Project, kind: str) -> list[dict]:
    return [
        o
        for o in p.live(kind)
        if str(o.get("name", "")).startswith(f"gpujob-{JOB}--")
        and o.get("status") in ("RUNNING", "ready", "running", "starting")
    ]


def test_auto_moves_a_preempted_spot_job_to_paperspace_and_resumes(sim: Sim, tmp_path: Path) -> None:
    p = new_project(sim, tmp_path, "anywhere")
    _job(p, "auto")
    p.gj("apply", "--auto-approve")
    watch = p.popen("watch", "--max-recoveries-per-hour", "50")  # the user's watch: 30 s ticks, 2.5 s probes
    try:
        poll("a verified checkpoint pulled by watch", lambda: _verified(p), deadline_s=120)
        pod = p.live("pods")[0]["id"]
        # Every GPU, every cloud: the catalog shows no stock until a RunPod create takes the fault (none does).
        sim.inject("capacity", platform="runpod")
        assert sim.inject("preempt")["preempted"] == [pod]
        t0 = time.monotonic()

        def moved() -> dict | None:
            return next((e for e in _events(p) if e["event"] == "moved"), None)

        event = poll("the move to Paperspace", moved, deadline_s=180)
        logs = poll("the run to resume on Paperspace",
                    lambda: re.search(r"resumed from step (\d+)", p.gj("logs", "-n", "400", check=False).stdout),
                    deadline_s=max(5.0, 180 - (time.monotonic() - t0)))  # fmt: skip
        elapsed = time.monotonic() - t0
        # Watch follows the job to Paperspace at once: its checkpoints (one every 2 s, keep: 3) are
        # pulled from there within a few probes, not after the next full tick (30 s, by then rotated away).
        pulled = poll("a pull from Paperspace", lambda: next(
            (e for e in _events(p) if e["event"] == "pulled" and e["at"] > event["at"]), None), deadline_s=60)  # fmt: skip
    finally:
        out = _stop(watch)
    assert int(logs.group(1)) > 0, out
    assert elapsed <= 180, elapsed
    after = datetime.fromisoformat(pulled["at"]) - datetime.fromisoformat(event["at"])
    assert after.total_seconds() <= 15, (after, out)
    assert "runpod" in event["happened"] and "paperspace" in event["happened"], event
    assert re.search(r"carried step_\d+\.\w+ \(step \d+\)", event["did"]), event
    failover = next(e for e in _events(p) if e["event"] == "failover")
    assert "no capacity" in failover["happened"], failover
    where = json.loads(p.store().read(f"failover/{JOB}.json") or b"{}")
    assert where["platform"] == "paperspace" and where["moves"][-1]["outcome"] == "done", where
    assert where["moves"][-1]["step"] > 0
    # Nothing of the job runs on RunPod; its network volume is kept (nothing was deleted).
    pods = [o for o in p.sim_objects("pods") if str(o.get("name", "")).startswith(f"gpujob-{JOB}--")]
    assert pods and all(o.get("status") != "RUNNING" for o in pods), pods
    assert [v for v in p.live("volumes") if JOB in v["name"]], "the RunPod volume must be kept"
    machines = [m for m in p.live("machines") if m["name"].startswith(f"gpujob-{JOB}--")]
    assert machines, p.sim.control("state").keys()
    # The carry: the very bytes verified here are on the new machine's disk, in checkpoint.dir.
    carried = where["moves"][-1]["checkpoint"]
    there = (
        sim.data_dir / "paperspace" / "machines" / machines[0]["id"] / "disk" / "workspace" / "ckpt" / carried
    )
    here = p.dir / "checkpoints" / carried
    assert (
        there.is_file()
        and hashlib.sha256(there.read_bytes()).digest() == hashlib.sha256(here.read_bytes()).digest()
    )
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
    p = new_project(sim, tmp_path, "anywhere-ask")
    _job(p, "ask")
    p.gj("apply", "--auto-approve")
    watch = _watch(p)
    try:
        poll("a verified checkpoint pulled by watch", lambda: _verified(p), deadline_s=120)
        sim.inject("capacity", platform="runpod")
        pod = p.live("pods")[0]["id"]
        assert sim.inject("preempt")["preempted"] == [pod]
        approval = f"--approve {JOB}.move"
        poll("the approval line", lambda: any(approval in e["did"] for e in _events(p)), deadline_s=60)
    finally:
        out = _stop(watch)
    assert approval in out
    assert not [m for m in p.live("machines") if m["name"].startswith(f"gpujob-{JOB}--")], "ask must wait"
    plan = p.gj("plan", check=False).stdout
    assert f"{JOB}.move" in plan, plan
    assert "paperspace" in plan and "runpod" in plan
    assert re.search(r"carries step_\d+\.\w+ \(step \d+\)", plan), plan
    assert re.search(r"\$\d+\.\d\d/month while kept", plan), plan
    # The plan's move, applied by a person: the job runs on Paperspace, resumed from the carried step.
    p.gj("apply", "--auto-approve", timeout=240)
    where = json.loads(p.store().read(f"failover/{JOB}.json") or b"{}")
    assert where["platform"] == "paperspace" and where["moves"][-1]["outcome"] == "done", where
    resumed = poll("the run to resume on Paperspace",
                   lambda: re.search(r"resumed from step (\d+)", p.gj("logs", "-n", "400", check=False).stdout))  # fmt: skip
    assert int(resumed.group(1)) == where["moves"][-1]["step"] > 0


def test_a_failed_move_leaves_the_job_parked_not_lost(sim: Sim, tmp_path: Path) -> None:
    p = new_project(sim, tmp_path, "anywhere-fail")
    _job(p, "auto")
    p.gj("apply", "--auto-approve")
    watch = p.popen(
        "watch", "--interval", "1s", "--probe", "0.2s", extra_env={"GPUJOB_FAILOVER_CREATE_WAIT": "4"}
    )
    try:
        poll("a verified checkpoint pulled by watch", lambda: _verified(p), deadline_s=120)
        sim.inject("capacity", platform="runpod")
        sim.inject("capacity", platform="paperspace")  # the new platform refuses too
        pod = p.live("pods")[0]["id"]
        assert sim.inject("preempt")["preempted"] == [pod]
        failed = poll("the move to fail", lambda: next((e for e in _events(p) if e["event"] == "move-failed"), None),
                      deadline_s=90)  # fmt: skip
    finally:
        out = _stop(watch)
    assert "parked on runpod" in failed["did"], (failed, out)
    where = json.loads(p.store().read(f"failover/{JOB}.json") or b"{}")
    assert where["platform"] == "runpod" and where["entry"] == -1, where  # back where its data is
    assert where["moves"][-1]["outcome"].startswith("failed:"), where
    # Nothing lost: the verified local copy is intact, the RunPod volume kept, nothing half-made elsewhere.
    carried = where["moves"][-1]["checkpoint"]
    assert carried in _verified(p) and (p.dir / "checkpoints" / carried).is_file()
    assert [v for v in p.live("volumes") if JOB in v["name"]]
    assert not [m for m in p.live("machines") if m["name"].startswith(f"gpujob-{JOB}--")]
    status = p.gj("status", check=False).stdout
    assert "runpod" in status.lower(), status
