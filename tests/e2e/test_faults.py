"""Fault tests: apply killed at every step then re-run, and HTTP storms, against the real simulator."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from gpujob import naming
from tests.e2e.e2e_support import Project, poll

STEPS = ["quickstart.network_volume.create", "quickstart.pod.create", "quickstart.run.launch"]


def assert_converged(p: Project) -> None:
    """One pod and one volume were ever created, the run is alive, and a new plan is empty."""
    names = Counter(o["name"] for o in p.sim_objects("pods"))
    assert names == {p.machine_name(): 1}, names
    vols = Counter(o["name"] for o in p.sim_objects("volumes"))
    assert vols == {p.volume_name(): 1}, vols
    poll("the run to be alive", lambda: (p.status().get("run") or {}).get("alive"))
    again = p.gj("plan", "--detailed-exitcode", check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (
        p.gj("apply", "--auto-approve")
        .stdout.strip()
        .endswith("No changes. Live state matches the job files.")
    )


def started(p: Project, action_id: str) -> bool:
    return any(e.get("action_id") == action_id and e.get("phase") == "intent" for e in p.journal())


@pytest.mark.parametrize("step", STEPS)
def test_apply_killed_when_step_starts_then_rerun_converges(project: Project, step: str) -> None:
    p = project
    proc = p.popen("apply", "--auto-approve")
    try:
        poll(
            f"{step} to start",
            lambda: started(p, step) or proc.poll() is not None,
            deadline_s=120,
            every=0.02,
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert started(p, step), proc.stdout.read() if proc.stdout else ""
    assert not any(e.get("action_id") == step and e.get("phase") == "done" for e in p.journal())
    out = p.gj("apply", "--auto-approve")
    assert "Apply finished" in out.stderr and "0 failed" in out.stderr, (
        p.journal(),
        out.stdout[-1500:],
        p.status(),
    )
    assert_converged(p)


@pytest.mark.parametrize("step", STEPS)
def test_apply_dies_after_a_step_before_recording_it_then_rerun_converges(
    project: Project, step: str
) -> None:
    p = project
    proc = p.popen("apply", "--auto-approve", extra_env={"GPUJOB_TEST_CRASHPOINT": f"after:{step}"})
    assert proc.wait(120) == 137
    entries = [e for e in p.journal() if e.get("action_id") == step]
    assert [e["phase"] for e in entries] == ["intent"]  # the outcome was never written
    p.gj("apply", "--auto-approve")
    assert_converged(p)


def test_http_429_and_5xx_storms_are_ridden_out(project: Project) -> None:
    p = project
    p.sim.inject("http_error", status=429, retry_after=0.2, count=4, platform="runpod")
    p.sim.inject("http_error", status=503, count=4, platform="runpod")
    out = p.gj("apply", "--auto-approve")
    assert "Apply finished: 3 done, 0 failed" in out.stderr
    assert_converged(p)


def test_no_capacity_for_the_first_gpu_falls_back_to_the_next(project: Project) -> None:
    p = project
    p.sim.inject("capacity", gpu="RTX 4090", count=None)  # until cleared
    out = p.gj("apply", "--auto-approve")
    assert "no capacity for 1× RTX4090 in EU-RO-1" in out.stderr
    assert "Apply finished: 3 done, 0 failed" in out.stderr
    pods = p.sim_objects("pods")
    assert len(pods) == 1 and "A6000" in str(pods[0].get("gpu_id") or pods[0])


@pytest.mark.parametrize("step", ["quickstart.pod.terminate", "quickstart.network_volume.delete-volume"])
def test_destroy_killed_mid_teardown_then_rerun_finishes_it(project: Project, step: str) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    poll("a checkpoint", lambda: (p.status().get("run") or {}).get("last_checkpoint"))
    approve = [
        "--approve",
        "quickstart.pod.terminate",
        "--approve",
        "quickstart.network_volume.delete-volume",
    ]
    proc = p.popen("destroy", "--auto-approve", *approve)
    try:
        poll(
            f"{step} to start",
            lambda: started(p, step) or proc.poll() is not None,
            deadline_s=120,
            every=0.02,
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert started(p, step)
    out = p.gj("destroy", "--auto-approve", *approve)
    assert "0 failed" in out.stdout + out.stderr or "No changes" in out.stdout  # summary: stderr
    assert p.live("pods") == [] and p.live("volumes") == []
    # Killed once the terminate went through, the re-run finds the volume with no pod mounting it: the
    # gate looks at it (and pulls) through one temporary pod before deleting it, never on the old
    # record alone. Killed earlier (or after the delete), no temporary pod is needed.
    pods = Counter(o["name"] for o in p.sim_objects("pods"))
    helper = naming.helper_name("quickstart", p.project_id)
    assert pods[p.machine_name()] == 1 and pods[helper] <= 1
    assert set(pods) <= {p.machine_name(), helper}
    assert all(i["rate_per_hour"] == 0 for i in p.sim.bill()["items"])
