"""`gpujob rehearse` on a live spot job in the simulator: interrupt, recover as watch does, prove it."""

from __future__ import annotations

import re

from tests.e2e.e2e_support import Project, poll
from tests.e2e.test_lifecycle import last_step


def test_rehearse_a_live_spot_job_proves_the_resume_and_records_it(project: Project) -> None:
    p = project
    plan = p.gj("plan").stdout
    assert "never rehearsed" in plan
    p.gj("apply", "--auto-approve")
    poll("a few checkpoints", lambda: last_step(p) >= 40)
    out = p.gj("rehearse", timeout=400)
    text = out.stdout + out.stderr
    line = re.search(r"rehearsed \d{4}-\d\d-\d\d: recovery (\d+) s, \$[0-9.]+ .*resumed from step (\d+) >= checkpoint step (\d+)\)"
                     r"; redone (\d+) step\(s\), \$([0-9.]+)", out.stdout)  # fmt: skip
    assert line, text
    resume, ck = int(line.group(2)), int(line.group(3))
    assert resume > 0 and resume >= ck
    assert "preempted" in text and "watch: recovered" in text, text
    rec = p.record("rehearsals/quickstart.json")
    assert rec["ok"] is True and rec["resume_step"] == resume and rec["recovery_s"] >= 0
    assert rec["redone_usd"] is not None and rec["usd_per_hour"] > 0 and rec["detection_s"] is not None
    assert rec["recovery_usd"] == round(rec["recovery_s"] * rec["usd_per_hour"] / 3600, 6)
    # The run itself says where it resumed from, and the same pod came back (a spot resume).
    logs = p.gj("logs", "-n", "2000").stdout
    assert f"resumed from step {resume}" in logs
    assert len(p.sim_objects("pods")) == 1 and p.status()["run"]["alive"] is True
    # The plan of the spot job now shows the drill.
    assert re.search(r"rehearsed \d{4}-\d\d-\d\d: recovery \d+ s", p.gj("plan").stdout)


def test_rehearse_refuses_a_job_without_a_checkpoint_block(project: Project) -> None:
    p = project
    job = p.dir / "job.yaml"
    text = job.read_text()
    start, end = text.index("checkpoint:\n"), text.index("run:\n")
    job.write_text(text[:start] + text[end:])
    out = p.gj("rehearse", check=False)
    assert out.returncode == 1 and "no checkpoint block" in out.stderr
    assert p.sim_objects("pods") == []


def test_rehearse_refuses_a_job_that_is_not_running(project: Project) -> None:
    out = project.gj("rehearse", check=False)
    assert out.returncode == 1 and "does not exist" in out.stderr and "gpujob apply" in out.stderr


def test_rehearse_a_paperspace_machine_stops_it_through_the_api_and_proves_the_resume(
    project: Project,
) -> None:
    from tests.e2e.test_paperspace import JOB

    p = project
    (p.dir / "job.yaml").write_text(JOB.replace("  public_ip: static\n", ""))
    p.gj("apply", "--auto-approve")

    def step() -> int:
        m = re.search(r"step_(\d+)", (p.status().get("run") or {}).get("last_checkpoint") or "")
        return int(m.group(1)) if m else 0

    poll("a checkpoint on the machine", lambda: step() > 20)
    out = p.gj("rehearse", timeout=400)
    assert "by a stop through the paperspace API" in out.stdout, out.stdout + out.stderr
    rec = p.record("rehearsals/pscore.json")
    assert rec["ok"] is True and rec["resume_step"] >= rec["checkpoint_step"] > 0
    # priced from the one rate (the profile's where the platform reports none), the recovery too (#39)
    assert rec["recovery_usd"] is not None and rec["redone_usd"] is not None, rec
    assert "redone work $" in out.stdout and "recovery $" in out.stdout, out.stdout
    assert f"resumed from step {rec['resume_step']}" in p.gj("logs", "-n", "2000").stdout
