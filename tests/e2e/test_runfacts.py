"""The run over SSH is a live fact of the plan: `gpujob plan` shows the relaunch of a killed run and the
teardown.on_finish of a finished one, and `gpujob apply` does exactly that."""

from __future__ import annotations

import json
import re

from tests.e2e.e2e_support import Project, poll


def last_step(p: Project) -> int:
    name = (p.status().get("run") or {}).get("last_checkpoint") or ""
    m = re.search(r"step_(\d+)", name)
    return int(m.group(1)) if m else 0


def test_killed_run_is_planned_for_relaunch_and_resumes(project: Project) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    before = poll("a few checkpoints", lambda: (s := last_step(p)) >= 40 and s)
    quiet = p.gj("plan", "--detailed-exitcode", check=False)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "the run is alive" in quiet.stdout and "run: running" in quiet.stdout

    # Kill the run inside the pod; the pod itself keeps running (the platform sees nothing).
    p.gj("ssh", "--", "tmux", "kill-server")
    poll("the run to be lost", lambda: (p.status().get("run") or {}).get("state") == "lost")
    assert p.status()["machine"]["status"] == "RUNNING"

    plan = p.gj("plan", "--detailed-exitcode", "-o", "plan.json", check=False)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "quickstart.run.launch" in plan.stdout and "run lost: started at" in plan.stdout
    saved = json.loads((p.dir / "plan.json").read_text())
    assert [a["id"] for j in saved["jobs"] for a in j["actions"]] == ["quickstart.run.launch"]
    assert saved["jobs"][0]["run"]["state"] == "lost"

    # Without the SSH read the plan cannot see it, and says so.
    fast = p.gj("plan", "--no-refresh-runs", "--detailed-exitcode", check=False)
    assert fast.returncode == 0 and "--no-refresh-runs" in fast.stdout

    # Apply exactly the saved plan: one launch, and the step counter comes back from the checkpoint.
    out = p.gj("apply", "plan.json").stderr  # the summary follows the step log (#41)
    assert "Apply finished: 1 done, 0 failed" in out
    resumed = poll(
        "the run to resume", lambda: re.search(r"resumed from step (\d+)", p.gj("logs", "-n", "2000").stdout)
    )
    step = int(resumed.group(1))
    assert step >= before, f"resumed from {step}, but step {before} was checkpointed before the kill"
    poll("checkpoints after the resume", lambda: last_step(p) > step)
    assert p.status()["run"]["alive"] is True


def test_plan_shows_on_finish_stop_of_a_finished_run(project: Project) -> None:
    p = project
    job = p.dir / "job.yaml"
    job.write_text(
        job.read_text()
        .replace('TOTAL_STEPS: "3000"', 'TOTAL_STEPS: "40"')
        .replace("on_finish: keep", "on_finish: stop")
    )
    p.gj("apply", "--auto-approve")
    # An image without runpodctl: the pod cannot stop itself (tests/e2e/test_self_stop.py has one that
    # can), so the stop is left to gpujob, as the run's log says.
    from gpujob.sim.rp_engine import pod_dir

    (pod_dir(p.sim.engine, p.live("pods")[0]["id"]) / "ctl" / "bin" / "runpodctl").unlink()
    poll("the run to exit 0", lambda: (p.status().get("run") or {}).get("exit_code") == 0)
    poll(
        "the failed self-stop in the log",
        lambda: "could not stop this pod" in p.gj("logs", "-n", "50").stdout,
    )

    plan = p.gj("plan", "--detailed-exitcode", check=False)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "quickstart.pod.stop" in plan.stdout
    assert "the run exited 0 and teardown.on_finish is stop" in plan.stdout
    assert "run: exited 0" in plan.stdout
    assert p.status()["machine"]["status"] == "RUNNING"  # planning changed nothing

    out = p.gj("apply", "--auto-approve").stderr  # the summary follows the step log (#41)
    assert "Apply finished: 1 done, 0 failed" in out
    assert p.status()["machine"]["status"] == "EXITED"
    # The finished run is not started again for the same job file: plan and apply agree.
    again = p.gj("plan", "--detailed-exitcode", check=False)
    assert again.returncode == 0 and "not started again until the job file changes" in again.stdout
