"""`gpujob init` output, as written, through the simulator: it validates, plans, runs, is preempted,
and the run resumes from the checkpoint train.py saved on SIGTERM (the starter's interval is the
realistic `auto`, minutes long, so that save is the only checkpoint there is)."""

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

    def logs() -> str:
        return p.gj("logs", "-n", "400").stdout

    poll("the run to train", lambda: re.search(r"step \d+ loss", logs()))
    assert "starting fresh at step 0" in logs()
    assert (p.status().get("run") or {}).get("last_checkpoint") is None  # `auto`: minutes away
    pod = p.live("pods")[0]["id"]
    assert p.sim.inject("preempt")["preempted"] == [pod]
    poll("the pod to be down", lambda: p.status()["machine"]["status"] != "RUNNING")

    p.gj("apply", "--auto-approve")  # the log lives on the network volume: readable again once a pod is up
    resumed = poll("the run to resume", lambda: re.search(r"resumed from step (\d+)", logs()))
    saved = re.search(r"SIGTERM: saved (step_\d+\.\w+) at step (\d+)", logs())
    assert saved, logs()  # the run used the grace for a last save
    assert int(resumed.group(1)) == int(saved.group(2)) > 0
    pulled = p.gj("pull").stdout
    assert "all verified" in pulled and saved.group(1) in pulled


def test_init_for_paperspace_validates_and_plans(sim: Sim, tmp_path: Path) -> None:
    p = new_project(sim, tmp_path, "ps")
    p.gj("init", "--platform", "paperspace", "--name", "ps-start")
    p.gj("validate", "job.yaml")
    plan = p.gj("plan", "--detailed-exitcode", check=False)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "ps-start" in plan.stdout
