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
    poll("the run to exit 0", lambda: (p.status().get("run") or {}).get("exit_code") == 0)
    out = p.gj("apply", "--auto-approve").stdout
    assert "the run exited 0 and teardown.on_finish is stop" in out
    assert "Apply finished: 1 done, 0 failed" in out
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
