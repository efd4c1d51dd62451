"""teardown.on_finish: a run that exits 0 gets its machine stopped, and is not started again."""

from __future__ import annotations

from tests.e2e.e2e_support import Project, poll


def test_on_finish_stop(project: Project) -> None:
    p = project
    job = p.dir / "job.yaml"
    text = (
        job.read_text()
        .replace('TOTAL_STEPS: "3000"', 'TOTAL_STEPS: "40"')
        .replace("on_finish: keep", "on_finish: stop")
    )
    job.write_text(text)
    p.gj("apply", "--auto-approve")
    # The launcher on the pod stops it as the run exits 0 (tests/e2e/test_self_stop.py times it).
    poll("the pod to stop itself", lambda: p.live("pods")[0]["status"] == "EXITED")
    # The next apply cannot tell that stop from a preemption until it reads the disk: it starts the pod,
    # finds the run ended under this job file, marks it finished and stops the pod again.
    res = p.gj("apply", "--auto-approve")
    out = res.stdout + res.stderr
    assert "not relaunched: the run ended (exit 0)" in out and "teardown.on_finish is stop" in out
    assert "Apply finished: 2 done, 0 failed" in out
    assert p.status()["machine"]["status"] == "EXITED"
    # Desired state is still `running`, but the finished run is not started again for the same file.
    assert (
        p.gj("apply", "--auto-approve")
        .stdout.strip()
        .endswith("No changes. Live state matches the job files.")
    )
    assert p.status()["machine"]["status"] == "EXITED"
    bill = p.sim.bill()
    assert all(i["rate_per_hour"] == 0 for i in bill["items"] if i["item"] == "gpu")
