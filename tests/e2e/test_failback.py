"""failback: auto, in the simulator: the issue's RunPod spot job moved to Paperspace by `gpujob watch`
(RunPod out of every GPU, its pod preempted) moves back once RunPod can serve again, right after a
checkpoint was pulled and verified; it resumes on RunPod from a step >= the one carried, and nothing of
the job runs on Paperspace afterwards (stopped through the quiesce, its disk kept and shown)."""

from __future__ import annotations

import re
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e import failover_support as fo
from tests.e2e.e2e_support import poll
from tests.e2e.failover_support import JOB


def _pulled_steps(p) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(m.group(1)) for n in fo.verified(p) if (m := re.search(r"step_(\d+)", n))]


def test_failback_auto_moves_the_job_home_once_runpod_can_serve_again(sim: Sim, tmp_path: Path) -> None:
    p = fo.applied(sim, tmp_path, "anywhere-back", "auto", extra="failback: auto\n")
    watching = fo.watch(p)
    try:
        fo.poll_verified_by_watch(p)
        fo.preempt(sim, p)  # every GPU, every cloud, until cleared
        away = poll("the move to Paperspace", lambda: fo.moves(p), deadline_s=180)[0]
        first_step = fo.where(p)["moves"][-1]["step"]
        # Paperspace trains on: checkpoints newer than the one carried there come home verified.
        poll("a newer checkpoint pulled from Paperspace", lambda: max(_pulled_steps(p)) > first_step,
             deadline_s=120)  # fmt: skip
        sim.inject("clear")  # RunPod's capacity returns
        back = poll("the move back to RunPod", lambda: fo.moves(p)[1:], deadline_s=180)[0]
        record = fo.where(p)
        carried_step = record["moves"][-1]["step"]
        resumed = poll(
            "the run to resume on RunPod",
            lambda: re.findall(r"resumed from step (\d+)", p.gj("logs", "-n", "400", check=False).stdout),
            deadline_s=120,
        )
        pulled_home = poll(
            "a checkpoint pulled from RunPod again",
            lambda: [s for s in _pulled_steps(p) if s > carried_step],
            deadline_s=120,
        )
    finally:
        out = fo.stop(watching)
    assert "paperspace" in away["did"] or "paperspace" in away["happened"], away
    # The move back: from/to/why/step in its event and in the record.
    assert re.search(r"from paperspace \(fallback\[0\]\) to runpod", back["happened"]), back
    assert "can serve again (failback: auto)" in back["happened"], back
    assert re.search(rf"carried step_\d+\.\w+ \(step {carried_step}\); started on runpod", back["did"]), back
    failover = [e for e in fo.events(p) if e["event"] == "failover"]
    assert len(failover) == 2 and "failback: auto" in failover[1]["happened"], failover
    assert record["platform"] == "runpod" and record["entry"] == -1, record
    last = record["moves"][-1]
    assert (last["from_platform"], last["to_platform"], last["outcome"]) == ("paperspace", "runpod", "done")
    assert carried_step > first_step, record  # what Paperspace trained came back with it
    assert last["checkpoint"] in fo.verified(p)  # pulled and verified here before it was carried
    # It resumed on RunPod from a step >= the one carried, and trains on there.
    assert int(resumed[-1]) >= carried_step, (resumed, out)
    assert pulled_home
    pods = fo.mine(p, "pods")
    assert [o["status"] for o in pods] == ["RUNNING"], pods
    # The carried bytes are the ones verified here, on the RunPod volume's checkpoint dir.
    assert fo.sha(p.dir / "checkpoints" / last["checkpoint"]) == _sha_on_runpod(sim, last["checkpoint"])
    # Nothing of the job runs on Paperspace: its machine is stopped (through the quiesce), not deleted.
    machines = fo.mine(p, "machines")
    assert machines and all(m["state"] == "off" for m in machines), machines
    # Watch follows the job: no pull (nor anything else) from the old machine once it moved.
    assert not [e for e in fo.events(p) if e["event"].endswith("-failed")], (fo.events(p), out)
    notes = " ".join(e.get("did", "") + e.get("happened", "") for e in fo.events(p) if e["event"] == "note")
    assert "before the move" in notes, notes  # the quiesce ran before the stop
    disk = sim.data_dir / "paperspace" / "machines" / machines[0]["id"] / "disk" / "workspace" / "ckpt"
    assert any(disk.glob("step_*")), "the Paperspace disk (and its checkpoints) must be kept"
    status = p.gj("status").stdout
    assert f"{JOB} (runpod" in status and "also on:   paperspace:" in status, status


def _sha_on_runpod(sim: Sim, name: str) -> str:
    """The file's sha256 in the job's RunPod network volume (the simulator's files)."""
    found = [f for f in (sim.data_dir / "runpod").rglob(name) if "ckpt" in f.parts]
    assert found, f"{name} is not on any RunPod volume"
    return fo.sha(found[0])
