"""A job moved to Paperspace whose job file then drops its Paperspace entry, in the simulator: the
failover record still names Paperspace, so plan and destroy read it. The plan refuses to start the job
on RunPod while it still runs on Paperspace; `gpujob destroy` deletes what the job holds on both
platforms, each delete gated, Paperspace's by its own `<job>.left.paperspace.…` address."""

from __future__ import annotations

from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.failover_support import JOB, approve, mine, moved_by_apply, refused, where


def test_a_platform_dropped_from_the_job_file_is_still_read_and_torn_down(sim: Sim, tmp_path: Path) -> None:
    p = moved_by_apply(sim, tmp_path, "anywhere-unlisted")
    sim.inject("clear")
    text = (p.dir / "job.yaml").read_text()
    (p.dir / "job.yaml").write_text(text[: text.index("fallback:")])
    p.gj("validate")
    machines = mine(p, "machines")
    assert [m for m in machines if m.get("state") == "ready"]

    plan = p.gj("plan", check=False)
    out = plan.stdout + plan.stderr
    assert plan.returncode == 1, out  # an error finding blocks it
    assert "which its job file no longer lists" in out and "two runs, two bills" in out, out
    assert "put the fallback entry for paperspace back" in out, out
    released = p.gj("plan", "--release-left", check=False).stdout
    assert f"{JOB}.left.paperspace.machine.terminate" in released, released
    assert "only teardown is planned there" in released, released

    # status and cost count it too: one job, two platforms' meters
    status = p.gj("status", check=False).stdout
    assert f"{JOB} (runpod" in status and "also on:   paperspace:" in status, status
    cost = p.gj("cost", check=False).stdout
    assert f"{JOB} [paperspace]" in cost, cost

    said, wanted = refused(p, "destroy", "--auto-approve")
    assert {
        f"{JOB}.pod.terminate",
        f"{JOB}.network_volume.delete-volume",
        f"{JOB}.left.paperspace.machine.terminate",
    } <= wanted, said
    assert mine(p, "pods") and mine(p, "volumes") and mine(p, "machines")  # nothing touched

    done = p.gj("destroy", "--auto-approve", *approve(*wanted), timeout=300)
    out = done.stdout + done.stderr
    assert not mine(p, "pods") and not mine(p, "volumes") and not mine(p, "machines"), out
    # Paperspace's files landed beside the job's own (its run's log too), never over them.
    assert [f for f in (p.dir / "checkpoints-from-paperspace").iterdir() if f.is_file()], out
    assert (p.dir / "outputs-from-paperspace" / ".gpujob" / JOB / "run.log").is_file(), out
    assert p.project_id not in p.gj("audit", check=False).stdout  # neither account holds anything of it
    record = where(p)
    assert record["entry"] == -1 and record["platform"] == "runpod" and record["moves"], record
