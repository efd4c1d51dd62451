"""What a move leaves behind, in the simulator: gpujob init's RunPod job with a Paperspace fallback,
moved by `gpujob apply` after RunPod ran out of capacity and preempted its pod.

`apply --release-left` is refused without the exact approvals and touches nothing; approved, it pulls
what the RunPod volume holds (beside the job's own copies), verifies it, and deletes the pod and the
volume through the teardown gate. `gpujob destroy` of a moved job deletes both platforms' resources,
each through the gate, and places the job on its own platform again.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.failover_support import JOB, approve, ids, mine, moved_by_apply, refused, sha, where


def test_release_left_is_gated_and_deletes_runpod_after_the_pull(sim: Sim, tmp_path: Path) -> None:
    p = moved_by_apply(sim, tmp_path, "anywhere-left")
    pods, volumes = mine(p, "pods"), mine(p, "volumes")
    p.gj("pull")  # the job's pull record now speaks for its Paperspace machine
    record_before = p.record(f"pulls/{JOB}.json")
    assert record_before["platform"] == "paperspace"
    assert all(f["verified"] for f in record_before["files"])
    assert "also on:   runpod:" in p.gj("status").stdout

    # (a) without approvals: refused before anything runs, nothing touched
    said, named = refused(p, "apply", "--release-left", "--auto-approve")
    want = {f"{JOB}.left.runpod.pod.terminate", f"{JOB}.left.runpod.network_volume.delete-volume"}
    assert want <= named, said
    assert ids(mine(p, "pods")) == ids(pods) and ids(mine(p, "volumes")) == ids(volumes)
    assert not (p.dir / "checkpoints-from-runpod").exists()
    assert p.record(f"pulls/{JOB}.json") == record_before

    # (b) approved: the volume's checkpoints pulled and verified beside the job's own copies, then deleted
    on_volume = sim.data_dir / "runpod" / "volumes" / volumes[0]["id"] / "ckpt"
    held = {f.name: sha(f) for f in on_volume.iterdir() if f.is_file()}
    assert held
    sim.inject("clear")  # RunPod has capacity again: the gate starts the stopped pod to look at its disk
    done = p.gj("apply", "--release-left", "--auto-approve", *approve(*want), timeout=300)
    out = done.stdout + done.stderr
    assert "final pull" in out and "matched a verified local copy" in out, out
    assert not mine(p, "pods") and not mine(p, "volumes"), out  # RunPod holds nothing of the job
    aside = p.dir / "checkpoints-from-runpod"
    assert {n: sha(aside / n) for n in held} == held
    assert [m for m in mine(p, "machines") if m.get("state") == "ready"]  # Paperspace runs on
    record = p.record(f"pulls/{JOB}.json")
    assert record == record_before  # the job's record (of its Paperspace machine), put back
    status = p.gj("status").stdout
    assert "also on:" not in status and f"{JOB} (paperspace" in status, status
    again = p.gj("plan", "--release-left", check=False).stdout
    assert f"{JOB}.left." not in again, again


def test_destroy_of_a_moved_job_deletes_both_platforms_through_the_gate(sim: Sim, tmp_path: Path) -> None:
    p = moved_by_apply(sim, tmp_path, "anywhere-destroy")
    sim.inject("clear")
    said, wanted = refused(p, "destroy", "--auto-approve")
    assert {
        f"{JOB}.machine.terminate",
        f"{JOB}.left.runpod.pod.terminate",
        f"{JOB}.left.runpod.network_volume.delete-volume",
    } <= wanted, said
    assert mine(p, "pods") and mine(p, "volumes") and mine(p, "machines")  # nothing touched
    assert p.project_id in p.gj("audit", check=False).stdout  # (audit names the job's resources)

    done = p.gj("destroy", "--auto-approve", *approve(*wanted), timeout=300)
    out = done.stdout + done.stderr
    assert out.count("matched a verified local copy") >= 2, out  # each platform's gate pulled and checked
    assert not mine(p, "pods") and not mine(p, "volumes") and not mine(p, "machines"), out
    # Each platform's copies where they belong: RunPod's beside the job's own, never over them.
    assert (p.dir / "checkpoints-from-runpod").is_dir() and (p.dir / "checkpoints").is_dir()
    assert (p.dir / "outputs-from-runpod" / ".gpujob" / JOB / "run.log").is_file()
    assert (p.dir / "outputs" / ".gpujob" / JOB / "run.log").is_file()
    status = p.gj("status", check=False).stdout
    assert "also on:" not in status, status
    cost = p.gj("cost", check=False).stdout  # what it spent stays as history; nothing bills any more
    assert f"{JOB} [runpod]" in cost and "burning $0.00/h" in cost, cost
    # Placed home again, status shows one total, cost's TOTAL, its parts labelled (Paperspace's too) (#41)
    shown = re.search(r"\$([\d.]+) spent so far in all \(\$([\d.]+) on runpod \+ \$([\d.]+) on paperspace\)",
                      status)  # fmt: skip
    assert shown, status
    all_, here, there = (float(x) for x in shown.groups())
    assert f"also spent: paperspace: ${shown.group(3)} before the job left it" in status, status
    total = float(re.search(r"TOTAL spent \$([\d.]+)", cost).group(1))
    assert abs(all_ - total) < 0.006 and abs(here + there - total) < 0.011, (status, cost)
    audit = p.gj("audit", check=False).stdout
    assert p.project_id not in audit, audit  # neither platform's account holds anything of the job
    record = where(p)
    assert record["entry"] == -1 and record["platform"] == "runpod", record  # --recreate starts at home
    assert record["moves"], record  # the history is kept
    assert f"── {JOB} · runpod" in p.gj("plan", check=False).stdout
