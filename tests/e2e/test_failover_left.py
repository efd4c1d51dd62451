"""What a move leaves behind, in the simulator: gpujob init's RunPod job with a Paperspace fallback,
moved by `gpujob apply` after RunPod ran out of capacity and preempted its pod.

`apply --release-left` is refused without the exact approvals and touches nothing; approved, it pulls
what the RunPod volume holds (beside the job's own copies), verifies it, and deletes the pod and the
volume through the teardown gate. `gpujob destroy` of a moved job deletes both platforms' resources,
each through the gate, and places the job on its own platform again.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import Project, poll
from tests.e2e.test_failover import JOB, _job, _verified
from tests.e2e.test_init import new_project


def _mine(p: Project, kind: str) -> list[dict]:
    return [o for o in p.live(kind) if str(o.get("name", "")).startswith(f"gpujob-{JOB}--")]


def _moved(sim: Sim, p: Project) -> None:
    """The job runs on Paperspace; its preempted pod and its network volume are left on RunPod."""
    _job(p, "ask")
    p.gj("apply", "--auto-approve")

    def pulled() -> list[str]:
        p.gj("pull", check=False)
        return _verified(p)

    poll("a verified checkpoint pulled here", pulled, deadline_s=120, every=1.0)
    sim.inject("capacity", platform="runpod")
    pod = _mine(p, "pods")[0]["id"]
    assert sim.inject("preempt")["preempted"] == [pod]
    p.gj("apply", "--auto-approve", timeout=240)  # the planned move
    where = json.loads(p.store().read(f"failover/{JOB}.json") or b"{}")
    assert where["platform"] == "paperspace" and where["moves"][-1]["outcome"] == "done", where
    assert _mine(p, "pods") and _mine(p, "volumes") and _mine(p, "machines")


def _ids(objects: list[dict]) -> list[tuple[str, str]]:
    return [(o["id"], o.get("status", "")) for o in objects]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _approvals(out: str) -> list[str]:
    return re.findall(r"--approve (\S+?)`?(?=\s|$)", out)


def test_release_left_is_gated_and_deletes_runpod_after_the_pull(sim: Sim, tmp_path: Path) -> None:
    p = new_project(sim, tmp_path, "anywhere-left")
    _moved(sim, p)
    pods, volumes = _mine(p, "pods"), _mine(p, "volumes")
    p.gj("pull")  # the job's pull record now speaks for its Paperspace machine
    record_before = p.record(f"pulls/{JOB}.json")
    assert record_before["platform"] == "paperspace"
    assert all(f["verified"] for f in record_before["files"])
    assert "also on:   runpod:" in p.gj("status").stdout

    # (a) without approvals: refused before anything runs, nothing touched
    refused = p.gj("apply", "--release-left", "--auto-approve", check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0, said
    want = {f"{JOB}.left.runpod.pod.terminate", f"{JOB}.left.runpod.network_volume.delete-volume"}
    assert want <= set(_approvals(said)), said
    assert "need explicit approval" in said
    assert _ids(_mine(p, "pods")) == _ids(pods) and _ids(_mine(p, "volumes")) == _ids(volumes)
    assert not (p.dir / "checkpoints-from-runpod").exists()
    assert p.record(f"pulls/{JOB}.json") == record_before

    # (b) approved: the volume's checkpoints pulled and verified beside the job's own copies, then deleted
    on_volume = sim.data_dir / "runpod" / "volumes" / volumes[0]["id"] / "ckpt"
    held = {f.name: _sha(f) for f in on_volume.iterdir() if f.is_file()}
    assert held
    sim.inject("clear")  # RunPod has capacity again: the gate starts the stopped pod to look at its disk
    flags = [w for i in sorted(want) for w in ("--approve", i)]
    done = p.gj("apply", "--release-left", "--auto-approve", *flags, timeout=300)
    out = done.stdout + done.stderr
    assert "final pull" in out and "matched a verified local copy" in out, out
    assert not _mine(p, "pods") and not _mine(p, "volumes"), out  # RunPod holds nothing of the job
    aside = p.dir / "checkpoints-from-runpod"
    assert {n: _sha(aside / n) for n in held} == held
    assert [m for m in _mine(p, "machines") if m.get("state") == "ready"]  # Paperspace runs on
    record = p.record(f"pulls/{JOB}.json")
    assert record == record_before  # the job's record (of its Paperspace machine), put back
    status = p.gj("status").stdout
    assert "also on:" not in status and f"{JOB} (paperspace" in status, status
    again = p.gj("plan", "--release-left", check=False).stdout
    assert f"{JOB}.left." not in again, again


def test_destroy_of_a_moved_job_deletes_both_platforms_through_the_gate(sim: Sim, tmp_path: Path) -> None:
    p = new_project(sim, tmp_path, "anywhere-destroy")
    _moved(sim, p)
    sim.inject("clear")
    refused = p.gj("destroy", "--auto-approve", check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "need explicit approval" in said, said
    ids = set(_approvals(said))
    assert {
        f"{JOB}.machine.terminate",
        f"{JOB}.left.runpod.pod.terminate",
        f"{JOB}.left.runpod.network_volume.delete-volume",
    } <= ids, said
    assert _mine(p, "pods") and _mine(p, "volumes") and _mine(p, "machines")  # nothing touched
    assert p.project_id in p.gj("audit", check=False).stdout  # (audit names the job's resources)

    flags = [w for i in sorted(ids) for w in ("--approve", i)]
    done = p.gj("destroy", "--auto-approve", *flags, timeout=300)
    out = done.stdout + done.stderr
    assert out.count("matched a verified local copy") >= 2, out  # each platform's gate pulled and checked
    assert not _mine(p, "pods") and not _mine(p, "volumes") and not _mine(p, "machines"), out
    # Each platform's copies where they belong: RunPod's beside the job's own, never over them.
    assert (p.dir / "checkpoints-from-runpod").is_dir() and (p.dir / "checkpoints").is_dir()
    assert (p.dir / "outputs-from-runpod" / ".gpujob" / JOB / "run.log").is_file()
    assert (p.dir / "outputs" / ".gpujob" / JOB / "run.log").is_file()
    status = p.gj("status", check=False).stdout
    assert "also on:" not in status, status
    cost = p.gj("cost", check=False).stdout  # what it spent stays as history; nothing bills any more
    assert f"{JOB} [runpod]" in cost and "burning $0.00/h" in cost, cost
    # Placed home again, status names the money spent on Paperspace too: the two add up to cost's TOTAL.
    here = float(re.search(r"\$([\d.]+) spent so far", status).group(1))
    there = float(re.search(r"also spent: paperspace: \$([\d.]+) before the job left it", status).group(1))
    total = float(re.search(r"TOTAL spent \$([\d.]+)", cost).group(1))
    assert abs(here + there - total) < 0.011, (status, cost)
    audit = p.gj("audit", check=False).stdout
    assert p.project_id not in audit, audit  # neither platform's account holds anything of the job
    where = json.loads(p.store().read(f"failover/{JOB}.json") or b"{}")
    assert where["entry"] == -1 and where["platform"] == "runpod", where  # --recreate starts at home
    assert where["moves"], where  # the history is kept
    assert f"── {JOB} · runpod" in p.gj("plan", check=False).stdout
