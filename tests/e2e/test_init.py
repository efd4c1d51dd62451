"""`gpujob init` output, as written, through the simulator: it validates, plans, runs, checkpoints on its
timer (every few seconds, so a first try sees it), is preempted, and the run resumes from the newest
checkpoint it wrote: a timed one, or the one train.py saved on SIGTERM."""

from __future__ import annotations

import os
import re
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import Project, poll


def new_project(sim: Sim, tmp_path: Path, name: str) -> Project:
    d = tmp_path / name
    d.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    env.update(sim.env)
    env.update({"CI": "true", "NO_COLOR": "1"})
    return Project(dir=d, env=env, sim=sim)


def test_init_runs_to_a_resumed_checkpoint_in_the_simulator(sim: Sim, tmp_path: Path) -> None:
    p = new_project(sim, tmp_path, "my-first-job")
    out = p.gj("init").stdout
    assert {"job.yaml", "train.py", "verify_ckpt.py"} <= {f.name for f in p.dir.iterdir()}
    assert "name: my-first-job" in (p.dir / "job.yaml").read_text()
    assert "gpujob validate" in out
    p.gj("validate")
    plan = p.gj("plan", "--detailed-exitcode", check=False)
    assert plan.returncode == 2, plan.stdout + plan.stderr  # changes to make, no error
    p.gj("apply", "--auto-approve")

    def logs() -> (
        str
    ):  # read in this process (the polls call it most); the commands above and below run as processes
        return p.in_process("logs", "-n", "400").stdout

    poll("the run to train", lambda: re.search(r"step \d+ loss", logs()))
    assert "starting fresh at step 0" in logs()
    poll("a timed checkpoint", lambda: re.search(r"step \d+: checkpoint step_", logs()))
    poll("status to show it", lambda: (p.status().get("run") or {}).get("last_checkpoint"))
    pod = p.live("pods")[0]["id"]
    assert p.sim.inject("preempt")["preempted"] == [pod]
    poll("the pod to be down", lambda: p.status()["machine"]["status"] != "RUNNING")

    p.gj("apply", "--auto-approve")  # the log lives on the network volume: readable again once a pod is up
    resumed = poll("the run to resume", lambda: re.search(r"resumed from step (\d+)", logs()))
    before = logs().split(resumed.group(0), 1)[0]
    written = re.findall(r"step (\d+): checkpoint (step_\d+\.\w+)", before)
    written += [
        (step, name) for name, step in re.findall(r"SIGTERM: saved (step_\d+\.\w+) at step (\d+)", before)
    ]
    newest = max(written, key=lambda w: int(w[0]))
    assert int(resumed.group(1)) == int(newest[0]) > 0, before  # the newest checkpoint, not step 0
    pulled = p.gj("pull").stdout
    assert "all verified" in pulled and newest[1] in pulled


def test_init_for_paperspace_validates_and_plans(sim: Sim, tmp_path: Path) -> None:
    p = new_project(sim, tmp_path, "ps")
    p.gj("init", "--platform", "paperspace", "--name", "ps-start")
    p.gj("validate", "job.yaml")
    plan = p.gj("plan", "--detailed-exitcode", check=False)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "ps-start" in plan.stdout
