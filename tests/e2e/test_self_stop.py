"""teardown.on_finish / on_failure: stop on RunPod, with nobody watching: the launcher on the pod stops
it through the pod's own runpodctl (the simulator's: a token good for this pod only, never the account
key) within seconds of the run's exit, after `gpujob apply` has long returned."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gpujob.sim.rp_engine import volume_dir
from tests.e2e.e2e_support import Project, poll


def _pod(p: Project) -> dict:
    pods = p.live("pods")
    assert len(pods) == 1, pods
    return pods[0]


@pytest.mark.parametrize(
    ("edits", "code", "why"),
    [
        ((("on_finish: keep", "on_finish: stop"),), 0, "teardown.on_finish is stop"),
        (
            (
                ("on_finish: keep", "on_finish: keep\n  on_failure: stop"),
                ("command: python3 train.py", "command: python3 train.py && exit 1"),
            ),
            1,
            "teardown.on_failure is stop",
        ),
    ],
)
def test_the_pod_stops_itself_when_the_run_ends(
    project: Project, edits: tuple[tuple[str, str], ...], code: int, why: str
) -> None:
    p = project
    job = p.dir / "job.yaml"
    text = job.read_text().replace('TOTAL_STEPS: "3000"', 'TOTAL_STEPS: "40"')
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    job.write_text(text)
    p.gj("apply", "--auto-approve")  # returns once the run is launched: no gpujob process is left
    pod = _pod(p)
    assert pod["status"] == "RUNNING"
    vol_id = pod["mounts"]["network"][0]["volumeId"]
    jobdir = volume_dir(p.sim.engine, vol_id) / ".gpujob" / "quickstart"
    exit_file = jobdir / "exit_code"
    poll("the run to exit", exit_file.exists, deadline_s=60, every=0.1)
    exited_at = exit_file.stat().st_mtime
    assert int(exit_file.read_text()) == code
    stopped = poll("the pod to stop itself", lambda: _pod(p)["status"] == "EXITED", deadline_s=30, every=0.2)
    assert stopped and time.time() - exited_at < 30
    log = (jobdir / "run.log").read_text()
    assert why in log and "stopping this pod" in log
    # No account key went onto the pod: its tool and its environment hold only a pod-scoped token.
    key = p.env["RUNPOD_API_KEY"]
    ctl = Path(p.sim.engine.data_dir) / "runpod" / "pods" / pod["id"] / "ctl"
    assert all(key not in f.read_text(errors="replace") for f in ctl.rglob("*") if f.is_file())
    assert all(key not in f.read_text(errors="replace") for f in jobdir.rglob("*") if f.is_file())
    bill = p.sim.bill()
    assert all(i["rate_per_hour"] == 0 for i in bill["items"] if i["item"] == "gpu")
    assert os.path.exists(jobdir / "stopped_itself")


def test_the_on_box_budget_stop_on_the_pods_disk_is_refused_unless_approved(project: Project) -> None:
    """The launcher's agent stops the pod when budget.max_total_usd trips, with nobody watching and no
    pull: with the checkpoints on the pod's own volume disk apply refuses it (self-stop-unpulled) until
    its approval is given; then the pod runs with the guard armed."""
    from tests.e2e.test_traps import ON_VOLUME_DISK, edit

    p = project
    edit(p, ON_VOLUME_DISK, ("  max_hourly_usd: 1.0\n", "  max_hourly_usd: 1.0\n  max_total_usd: 50\n"))
    refused = p.gj("apply", "--auto-approve", check=False)
    text = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "[self-stop-unpulled] the stop when budget.max_total_usd trips" in text
    assert "--approve quickstart.pod.self-stop" in text and p.live("pods") == [], text
    p.gj("apply", "--auto-approve", "--approve", "quickstart.pod.self-stop")
    assert _pod(p)["status"] == "RUNNING"
