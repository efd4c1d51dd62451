"""Issue 11, cases 1-5: no destroy loses an un-pulled checkpoint, under real timing.

Each test runs a job on the simulator whose run checkpoints every 0.2 s with keep: 3 and saves once
more on SIGTERM, then tears it down through the CLI while two observers watch the checkpoint directory
on the simulated disk (a 50 ms poller, and a snapshot taken inside the simulator at the moment the
terminate / delete call arrives). Every file present at that moment must have a verified local copy
with the same bytes; the newest of them must be the run's final save."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.sim import rp_engine
from gpujob.sim.testing import Sim
from tests.reliability.teardown_kit import (
    NETWORK_VOLUME,
    CallSnapshots,
    DirWatch,
    Project,
    job_text,
    make_project,
    newest_is_final,
    poll,
    steps_on,
)
from tests.sim_pods import pod_simulator

pytestmark = pytest.mark.sim


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with pod_simulator(tmp_path / "sim", "the teardown-gate tests") as s:
        yield s


@pytest.fixture
def calls(sim: Sim, monkeypatch: pytest.MonkeyPatch) -> Iterator[CallSnapshots]:
    with CallSnapshots(sim).installed(monkeypatch) as c:
        yield c


def running(p: Project, min_steps: int = 6) -> Path:
    """Apply, then wait (polling) until the run has written and rotated checkpoints."""
    p.ok("apply", "--auto-approve")
    ck = p.ck_dir_of(p.pod())
    poll(f"{min_steps} checkpoints", lambda: (steps_on(ck) or [0])[-1] >= min_steps)
    return ck


def assert_nothing_lost(p: Project, calls: CallSnapshots, job: str, what: str) -> dict[str, str]:
    snaps = [snap for kind, _, snap in calls.calls if kind == what]
    assert snaps, f"no {what} call reached the simulator\n" + "\n".join(p.outputs[-4:])
    snap = snaps[0]
    assert snap, f"the disk held no checkpoint at {what} time (the test needs some to mean anything)"
    assert p.lost(snap, job) == [], f"lost at {what}: {p.lost(snap, job)} of {sorted(snap)}"
    return snap


def test_case1_volume_disk_destroy_pulls_everything_present_at_terminate(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    p = make_project(sim, tmp_path, job_text("vd"))
    ck = running(p)
    with DirWatch(ck) as watch:
        p.ok("destroy", "--auto-approve", "--approve", "vd.pod.terminate")
    snap = assert_nothing_lost(p, calls, "vd", "terminate")
    assert newest_is_final(snap, p.dir / "checkpoints"), "the final save on SIGTERM was not on the disk"
    # The 50 ms observer saw the same set last before the call: after the quiesce nothing wrote.
    t, _ = calls.at("terminate")
    assert watch.polls > 5 and watch.before(t) == snap
    assert p.pods() == []


def test_case1_network_volume_destroy_pulls_before_the_pod_and_the_volume_go(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    p = make_project(sim, tmp_path, job_text("nv", storage=NETWORK_VOLUME))
    ck = running(p)
    with DirWatch(ck) as watch:
        p.ok(
            "destroy", "--auto-approve",
            "--approve", "nv.pod.terminate", "--approve", "nv.network_volume.delete-volume",
        )  # fmt: skip
    at_terminate = assert_nothing_lost(p, calls, "nv", "terminate")
    at_delete = assert_nothing_lost(p, calls, "nv", "delete-volume")
    assert at_delete == at_terminate  # nothing wrote between the two calls
    assert newest_is_final(at_delete, p.dir / "checkpoints")
    assert p.lost(watch.before(calls.at("terminate")[0]), "nv") == []
    assert p.lost(watch.before(calls.at("delete-volume")[0]), "nv") == []
    assert p.pods() == [] and p.volumes() == []


def test_case1_saved_destroy_plan_applied_later_pulls_what_was_written_since(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    p = make_project(sim, tmp_path, job_text("sp"))
    ck = running(p)
    p.write_job(job_text("sp", state="absent"))
    p.ok("plan", "-o", "plan.json")
    made_at = steps_on(ck)[-1]
    poll("more checkpoints after the plan was saved", lambda: steps_on(ck)[-1] >= made_at + 5)
    with DirWatch(ck) as watch:
        p.ok("apply", "plan.json", "--approve", "sp.pod.terminate")
    snap = assert_nothing_lost(p, calls, "sp", "terminate")
    assert max(snap) > f"step_{made_at:06d}.json"
    assert newest_is_final(snap, p.dir / "checkpoints")
    assert p.lost(watch.before(calls.at("terminate")[0]), "sp") == []


def test_case3_network_volume_pod_replace_stops_the_run_and_proves_the_dir_is_on_the_volume(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    """A pod whose checkpoints are on a network volume goes away (here: replaced for another GPU)
    without a pull, only after the run stopped and a listing showed the dir is on the volume's mount;
    the new pod's run resumes from the final save."""
    p = make_project(sim, tmp_path, job_text("nt", storage=NETWORK_VOLUME))
    running(p)
    p.write_job(job_text("nt", storage=NETWORK_VOLUME).replace("gpu: [RTX4090]", "gpu: [A6000]"))
    plan = p.ok("plan").stdout
    assert "must list on the network volume's mount" in plan and "no pull needed" in plan, plan
    done = p.ok("apply", "--auto-approve", "--approve", "nt.pod.replace")
    assert "stay on the network volume" in done.stderr, done.stderr
    [(_, _, snap)] = [c for c in calls.calls if c[0] == "terminate"]
    assert snap and not (p.dir / ".gpujob" / "pulls" / "nt.json").exists()  # nothing needed pulling
    step = int(max(snap)[5:11])
    # The newest file at the terminate was the run's SIGTERM save, and the new pod resumed from it.
    poll("the new pod's run to resume", lambda: f"resumed from step {step}" in run_log(p))
    assert f"SIGTERM: final save at step {step}" in run_log(p)


def run_log(p: Project) -> str:
    pod = p.pod()
    log = rp_engine.volume_dir(p.sim.engine, pod.network_volume_id) / ".gpujob" / "nt" / "run.log"
    return log.read_text() if log.exists() else ""


def test_case2_volume_with_no_pod_left_is_pulled_through_a_temporary_pod_before_the_delete(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    """The pod was terminated out of band while the run wrote on: the volume holds checkpoints newer
    than any pull record. The delete pulls them through a temporary pod first."""
    p = make_project(sim, tmp_path, job_text("np", storage=NETWORK_VOLUME))
    ck = running(p, min_steps=3)
    p.ok("pull")  # an old record, soon stale
    pulled = steps_on(ck)[-1]
    poll("checkpoints newer than the pull", lambda: steps_on(ck)[-1] >= pulled + 6)
    rp_engine.terminate(sim.engine, p.pod().id)  # out of band (the console)
    calls.calls.clear()
    with DirWatch(ck) as watch:
        done = p.ok("destroy", "--auto-approve", "--approve", "np.network_volume.delete-volume")
    assert "temporary pod" in done.stdout + done.stderr
    snap = assert_nothing_lost(p, calls, "np", "delete-volume")
    assert max(snap) > f"step_{pulled:06d}.json"  # newer than the record: the old record was not enough
    assert watch.before(calls.at("delete-volume")[0]) == snap
    assert p.pods() == [] and p.volumes() == []  # the temporary pod is gone too
    helper = [c for c in calls.calls if c[0] == "terminate"]
    assert len(helper) == 1  # the temporary pod, terminated after the pull


def test_case2_audit_fix_plan_of_an_idle_volume_pulls_before_the_delete(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    p = make_project(sim, tmp_path, job_text("af", storage=NETWORK_VOLUME))
    ck = running(p, min_steps=4)
    rp_engine.terminate(sim.engine, p.pod().id)  # out of band
    calls.calls.clear()
    audit = p.gj("audit", "--fix", "-o", "fix.json")
    assert audit.returncode in (0, 2), audit.stdout + audit.stderr
    fix = (p.dir / "fix.json").read_text()
    aid = next(a["id"] for j in json.loads(fix)["jobs"] for a in j["actions"] if a["kind"] == "delete-volume")
    p.ok("apply", "fix.json", "--approve", aid)
    snap = assert_nothing_lost(p, calls, "af", "delete-volume")
    assert len(snap) == 3 and steps_on(ck) == []


def test_case4_tier_change_carries_the_checkpoints_across_and_training_continues(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    """volume disk -> network volume: the pod is replaced; every checkpoint present at the terminate is
    pulled, pushed onto the new volume before the run starts, and the run resumes from its step."""
    p = make_project(sim, tmp_path, job_text("tc"))
    running(p)
    p.write_job(job_text("tc", storage=NETWORK_VOLUME))
    plan = p.ok("plan").stdout
    assert "push checkpoints" in plan and "LOST unless pulled" in plan, plan
    p.ok("apply", "--auto-approve", "--approve", "tc.pod.replace")
    snap = assert_nothing_lost(p, calls, "tc", "terminate")
    final_step = int(max(snap)[5:11])
    assert newest_is_final(snap, p.dir / "checkpoints")
    new = p.pod()
    assert new.network_volume_id
    log = p.ck_dir_of(new).parent / ".gpujob" / "tc" / "run.log"
    poll(
        "the run on the new pod to resume",
        lambda: log.exists() and f"resumed from step {final_step}" in log.read_text(),
    )
    assert "starting fresh" not in log.read_text()


def test_case4_an_apply_killed_between_the_replace_and_the_push_pushes_on_the_next_apply(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    p = make_project(sim, tmp_path, job_text("kp"))
    running(p)
    p.write_job(job_text("kp", storage=NETWORK_VOLUME))
    p.env["GPUJOB_TEST_CRASHPOINT"] = "after:kp.pod.replace"  # dies with the new pod made, nothing pushed
    killed = p.gj("apply", "--auto-approve", "--approve", "kp.pod.replace")
    del p.env["GPUJOB_TEST_CRASHPOINT"]
    assert killed.returncode == 137, killed.stdout + killed.stderr
    snap = assert_nothing_lost(p, calls, "kp", "terminate")
    plan = p.ok("plan").stdout
    assert "stopped before this push" in plan and "push checkpoints" in plan, plan
    p.ok("apply", "--auto-approve")
    final_step = int(max(snap)[5:11])
    log = p.ck_dir_of(p.pod()).parent / ".gpujob" / "kp" / "run.log"
    poll("the run to resume", lambda: log.exists() and f"resumed from step {final_step}" in log.read_text())
    assert "push checkpoints" not in p.ok("plan").stdout  # done: no longer pending


def test_case5_removed_checkpoint_block_still_protects_the_files_on_the_disk(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    p = make_project(sim, tmp_path, job_text("rb"))
    ck = running(p)
    p.write_job(job_text("rb", checkpoint=""))
    refused = p.gj("destroy", "--auto-approve", "--approve", "rb.pod.terminate")
    assert refused.returncode == 1
    text = refused.stdout + refused.stderr
    assert "no checkpoint block" in text and "/workspace/ckpt" in text and "gpujob ssh -- rm -r" in text, text
    assert [c for c in calls.calls if c[0] == "terminate"] == []
    assert p.pods() and steps_on(ck)  # nothing was erased


def test_case4_checkpoint_dir_change_moves_the_checkpoints_and_training_continues(
    sim: Sim, tmp_path: Path, calls: CallSnapshots
) -> None:
    """checkpoint.dir edited on a job whose disk stays: the next launch moves the checkpoints into the
    new dir (read back first), the run resumes from its step, and a destroy then pulls the new dir."""
    p = make_project(sim, tmp_path, job_text("cd"))
    old = running(p)
    moved = job_text("cd").replace("dir: /workspace/ckpt", "dir: /workspace/ckpt2")
    p.write_job(moved)
    plan = p.ok("plan").stdout  # the run alive still writes the old dir: the plan says what happens
    assert "checkpoint.dir is now /workspace/ckpt2, but the run alive writes /workspace/ckpt" in plan, plan
    p.write_job(moved.replace("state: running", "state: stopped"))
    p.ok("apply", "--auto-approve")
    before = steps_on(old)
    assert before
    p.write_job(moved)
    out = p.ok("apply", "--auto-approve")
    assert "moved 3 checkpoint file(s)" in out.stderr, out.stderr
    new = old.parent / "ckpt2"
    log = old.parent / ".gpujob" / "cd" / "run.log"
    poll("the run to resume in the new dir", lambda: f"resumed from step {before[-1]}" in log.read_text())
    assert steps_on(old) == []  # moved, not copied: nothing left behind for the gate to trip over
    poll("checkpoints in the new dir", lambda: steps_on(new) and steps_on(new)[-1] > before[-1])
    calls.disk_of = lambda what, rid: new  # type: ignore[method-assign]
    p.ok("destroy", "--auto-approve", "--approve", "cd.pod.terminate")
    assert_nothing_lost(p, calls, "cd", "terminate")
