"""The preflight before every launch, against real sshd pods that answer nvidia-smi and dmesg."""

from __future__ import annotations

from tests.e2e.e2e_support import Project, poll
from tests.e2e.test_lifecycle import last_step


def _running(p: Project) -> list[dict]:
    return [o for o in p.live("pods") if o["status"] == "RUNNING"]


def test_an_xid_host_is_left_for_a_healthy_one(project: Project) -> None:
    p = project
    p.sim.inject("gpu_fault", kind="xid", count=1)
    (p.dir / "prepare.sh").write_bytes(b"#!/bin/bash\r\nset -e\r\n")  # and the sync flags a CRLF script (U26)
    out = p.gj("apply", "--auto-approve")
    text = out.stdout + out.stderr
    assert "CRLF (Windows) line endings: prepare.sh" in text, text
    pods = p.sim_objects("pods")
    assert len(pods) == 2, pods
    bad = next(o for o in pods if o["gpu_fault"] == "xid")
    good = next(o for o in pods if o["gpu_fault"] is None)
    assert bad["status"] == "TERMINATED" and good["status"] == "RUNNING"
    assert "Xid 79" in text and f"left {bad['id']}" in text, text
    assert [o["id"] for o in _running(p)] == [good["id"]]
    poll("the run to start on the healthy pod", lambda: p.status()["run"]["alive"])


def test_a_host_still_bad_after_two_replacements_is_stopped_and_apply_fails(project: Project) -> None:
    p = project
    p.sim.inject("gpu_fault", kind="xid", count=3)
    out = p.gj("apply", "--auto-approve", check=False)
    assert out.returncode == 1
    assert "preflight failed" in out.stderr and "Xid 79" in out.stderr and "stopped" in out.stderr
    pods = p.sim_objects("pods")
    assert sorted(o["status"] for o in pods) == ["EXITED", "TERMINATED", "TERMINATED"], pods
    assert _running(p) == [], "a faulty pod was left running"


def test_a_started_pod_whose_host_went_bad_is_stopped_not_replaced(project: Project) -> None:
    """Not created by this apply (it holds the run's disk): never replaced, stopped, apply exits 1."""
    p = project
    p.gj("apply", "--auto-approve")
    poll("a checkpoint", lambda: last_step(p) > 0)
    pod_id = p.live("pods")[0]["id"]
    assert p.sim.inject("preempt")["preempted"] == [pod_id]
    poll("the pod to be down", lambda: p.live("pods")[0]["status"] == "EXITED")
    p.sim.inject("gpu_fault", kind="throttle", pod_id=pod_id)
    out = p.gj("apply", "--auto-approve", check=False)
    assert out.returncode == 1, out.stdout + out.stderr
    assert (
        "preflight failed" in out.stderr
        and "hardware thermal slowdown" in out.stderr
        and "(U23)" in out.stderr
    )
    assert [(o["id"], o["status"]) for o in p.sim_objects("pods")] == [(pod_id, "EXITED")]
    # The next plan does not start that host again: it replaces the pod on a fresh one.
    plan = p.gj("plan", check=False).stdout
    assert "quickstart.pod.replace" in plan and "the preflight stopped" in plan, plan
    again = p.gj("apply", "--auto-approve", "--approve", "quickstart.pod.replace")  # gated like any replace
    assert "preflight on" in again.stdout + again.stderr and "fit to train" in again.stdout + again.stderr
    pods = {o["id"]: o["status"] for o in p.sim_objects("pods")}
    assert pods[pod_id] == "TERMINATED" and sorted(pods.values()) == ["RUNNING", "TERMINATED"], pods
    poll(
        "the run to resume on the fresh host", lambda: "resumed from step" in p.gj("logs", "-n", "200").stdout
    )
