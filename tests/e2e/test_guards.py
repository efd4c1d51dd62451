"""The apply command's guards: no prompt without a terminal, stale saved plans, one writer per job."""

from __future__ import annotations

import os

from gpujob.lock import job_lock
from tests.e2e.e2e_support import Project


def test_without_a_terminal_apply_refuses_and_names_the_flag(project: Project) -> None:
    p = project
    out = p.gj("apply", check=False)
    assert out.returncode == 1
    assert "--auto-approve" in out.stderr and "no terminal" in out.stderr
    assert p.sim_objects("pods") == [] and p.sim_objects("volumes") == []


def test_saved_plan_is_refused_when_the_job_file_changed(project: Project) -> None:
    p = project
    assert p.gj("plan", "-o", "plan.json", check=False).returncode == 0
    job = p.dir / "job.yaml"
    job.write_text(job.read_text() + "# edited after planning\n")
    out = p.gj("apply", "plan.json", check=False)
    assert out.returncode == 1 and "stale" in out.stderr and "job file changed" in out.stderr
    assert p.sim_objects("pods") == []


def test_saved_plan_is_refused_when_live_state_changed(project: Project) -> None:
    p = project
    assert p.gj("plan", "-o", "plan.json", check=False).returncode == 0
    p.gj("apply", "--auto-approve")  # someone else applied in between
    out = p.gj("apply", "plan.json", check=False)
    assert out.returncode == 1 and "live resources changed" in out.stderr
    assert len(p.sim_objects("pods")) == 1  # the stale plan created nothing


def test_a_held_lock_refuses_a_second_apply(project: Project) -> None:
    p = project
    with job_lock(p.state, "quickstart", command="gpujob apply (held by the test)"):
        out = p.gj("apply", "--auto-approve", check=False)
    assert out.returncode == 1
    assert (
        "locked by" in out.stderr
        and "held by the test" in out.stderr
        and f"`kill {os.getpid()}`" in out.stderr  # the holder runs here: stop it, never force-unlock it
        and "force-unlock" not in out.stderr
    )
    assert p.sim_objects("pods") == []
    p.gj("apply", "--auto-approve")  # released: the next apply runs
    assert len(p.sim_objects("pods")) == 1
