"""The run is a resource (issue 22), on the simulator with the Paperspace job `gpujob init` writes, its
checkpoint.interval set to 10m (the SIGTERM save is then the only checkpoint a short run makes).

Growing the disk stops the machine: apply quiesces the run first, so it resumes from its SIGTERM save,
not step 0. Adding an env var is a `~ relaunch run`: plan exits 2 naming the key, apply quiesces and
relaunches, and the live run has the new env and resumed from at least the newest checkpoint's step."""

from __future__ import annotations

import re
from pathlib import Path

from gpujob.sim.testing import Sim
from tests.e2e.e2e_support import poll
from tests.e2e.test_init import new_project


def test_disk_grow_and_env_change_keep_the_runs_progress(sim: Sim, tmp_path: Path) -> None:
    p = new_project(sim, tmp_path, "ps")
    p.gj("init", "--platform", "paperspace", "--name", "psrun")
    job = p.dir / "job.yaml"
    # init's starter saves every few seconds; a 10m interval (a real job's) leaves the SIGTERM save as the
    # only checkpoint a short run makes, which is what this test is about.
    text, n = re.subn(r"(?m)^  interval: \S+", "  interval: 10m", job.read_text())
    assert n == 1, job.read_text()
    # Long enough to outlive both changes.
    job.write_text(text.replace('TRAIN_STEPS: "3000"', 'TRAIN_STEPS: "200000"'))
    p.gj("apply", "--auto-approve")

    def logs() -> str:
        return p.gj("logs", "-n", "2000").stdout

    poll("the run to train a few steps", lambda: re.search(r"step [1-9]\d* loss", logs()), deadline_s=120)
    assert (p.status().get("run") or {}).get("last_checkpoint") is None  # 10m: no periodic save yet

    # 1. Grow the disk: Paperspace resizes only a stopped machine.
    job.write_text(job.read_text().replace("volume_gb: 50", "volume_gb: 100"))
    grown = p.gj("apply", "--auto-approve")
    assert "grew the disk" in grown.stderr and "the run exited after SIGTERM" in grown.stderr, grown.stderr
    saved = re.findall(r"SIGTERM: saved step_\d+\.\w+ at step (\d+)", logs())
    assert saved and int(saved[-1]) > 0
    resumed = poll(
        "the run to resume", lambda: re.findall(r"resumed from step (\d+)", logs()), deadline_s=120
    )
    assert int(resumed[-1]) == int(saved[-1]) > 0

    # 2. Add an env var: a relaunch, named with its key, exit code 2.
    poll(
        "training after the grow",
        lambda: len(re.findall(r"step \d+ loss", logs().split("resumed from")[-1])) > 2,
    )
    job.write_text(job.read_text().replace('STEP_SECONDS: "0.02"', 'STEP_SECONDS: "0.02", RUN_TAG: "second"'))
    plan = p.gj("plan", "--detailed-exitcode", check=False)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "~ relaunch run psrun" in plan.stdout and "run.env.RUN_TAG" in plan.stdout, plan.stdout
    assert "work at risk" in plan.stdout
    newest_before = max(int(s) for s in re.findall(r"(?:saved|checkpoint) step_(\d+)", logs()))
    out = p.gj("apply", "--auto-approve")
    assert "psrun.run.relaunch" in out.stdout + out.stderr and "the run exited after SIGTERM" in out.stderr
    resumed_again = poll(
        "the relaunched run to resume",
        lambda: (r := re.findall(r"resumed from step (\d+)", logs())) and len(r) >= 2 and r,
        deadline_s=120,
    )
    assert int(resumed_again[-1]) >= newest_before > 0
    env = p.gj("ssh", "--", "tr '\\0' '\\n' < /proc/$(pgrep -n -f '^python3 train')/environ").stdout
    assert "RUN_TAG=second" in env, env
    # The plan after it: nothing left to change.
    again = p.gj("plan", "--detailed-exitcode", check=False)
    assert again.returncode == 0, again.stdout
    # `gpujob restart JOB`: the same relaunch with nothing changed.
    restarted = p.gj("restart", "psrun", "--auto-approve")
    assert "psrun.run.relaunch" in restarted.stdout + restarted.stderr
    poll("a third resume", lambda: len(re.findall(r"resumed from step (\d+)", logs())) >= 3, deadline_s=120)


def test_a_destroy_sticks_until_recreate_and_the_recreated_job_resumes(project) -> None:  # type: ignore[no-untyped-def]
    p = project
    term, delvol = "quickstart.pod.terminate", "quickstart.network_volume.delete-volume"
    p.gj("apply", "--auto-approve")

    def logs() -> str:
        return p.gj("logs", "-n", "2000").stdout

    poll("a few checkpoints", lambda: len(re.findall(r"checkpoint step_\d+", logs())) >= 3, deadline_s=120)
    done = p.gj("destroy", "--auto-approve", "--approve", term, "--approve", delvol)
    assert "0 failed" in done.stderr
    assert p.live("pods") == [] and p.live("volumes") == []
    record = p.record("pulls/quickstart.json")
    newest = max(f["name"] for f in record["files"] if f["verified"])
    step = int(re.search(r"(\d+)", newest).group(1))  # type: ignore[union-attr]
    assert step > 0

    # The cron recipe: watch --once creates nothing and says why, exit 0.
    watched = p.gj("watch", "--once", check=False)
    assert watched.returncode == 0, watched.stdout + watched.stderr
    assert (
        "destroyed at" in watched.stdout + watched.stderr
        and "apply --recreate" in watched.stdout + watched.stderr
    )
    assert p.live("pods") == [] and p.live("volumes") == []
    # apply refuses too, and so does an edit of the file.
    p.dir.joinpath("job.yaml").write_text(p.dir.joinpath("job.yaml").read_text() + "# touched\n")
    refused = p.gj("apply", "--auto-approve", check=False)
    assert refused.returncode != 0 and "apply --recreate" in refused.stderr, refused.stderr
    assert p.live("pods") == [] and p.live("volumes") == []
    status = p.gj("status").stdout
    assert "destroyed: destroyed at" in status

    # --recreate: created again, the newest verified local checkpoint pushed before the launch.
    back = p.gj("apply", "--auto-approve", "--recreate")
    out = back.stdout + back.stderr
    assert f"pushed the newest verified checkpoint {newest}" in out, out
    resumed = poll(
        "the run to resume", lambda: re.findall(r"resumed from step (\d+)", logs()), deadline_s=120
    )
    assert int(resumed[-1]) == step
    assert "destroyed: destroyed at" not in p.gj("status").stdout  # (the watch event stays in its history)
