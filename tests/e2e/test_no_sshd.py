"""A pod the platform reports RUNNING whose sshd never answers (a custom image that does not start it,
RP10), end to end: the simulator's no_sshd fault boots the pod without sshd. `status`, `logs` and
`pull` give up after the connect limit (GPUJOB_SSH_CONNECT_TIMEOUT) with what was tried, for how
long and what to check; `apply`, which just started the pod, waits longer but stops as soon as the
platform reports the pod stopped."""

from __future__ import annotations

import time

from gpujob.sim import rp_engine
from tests.e2e.e2e_support import Project, poll

CONNECT_S = 1  # GPUJOB_SSH_CONNECT_TIMEOUT takes any positive number of seconds: each give-up stays short
# The connect limit, plus the CLI's start and its API reads on a loaded 2-core machine (generous: the
# old wait was 600 s).
BOUND_S = CONNECT_S + 12.0


def _running_without_sshd(p: Project) -> str:
    """The quickstart applied, its spot pod preempted and started again (outside gpujob) with no sshd."""
    p.gj("apply", "--auto-approve")
    pod = str(p.live("pods")[0]["id"])
    assert p.sim.inject("preempt", pod_id=pod)["preempted"] == [pod]
    poll("the pod to be down", lambda: p.live("pods")[0]["status"] == "EXITED")
    p.sim.inject("no_sshd", pod_id=pod, count=1)
    return pod


def test_reads_of_a_running_pod_without_sshd_give_up_after_the_connect_limit(project: Project) -> None:
    p = project
    pod = _running_without_sshd(p)
    rp_engine.start(p.sim.engine, pod)
    poll("the pod to run", lambda: p.live("pods")[0]["status"] == "RUNNING")
    p.env["GPUJOB_SSH_CONNECT_TIMEOUT"] = str(CONNECT_S)

    for args in (["status"], ["logs", "-n", "4"], ["pull"]):
        started = time.monotonic()
        out = p.gj(*args, check=False, timeout=120)
        elapsed, text = time.monotonic() - started, out.stdout + out.stderr
        # status prints what it read (the pod) and the run as unknown, and fails as logs and pull do
        # (README: "fails `status`, `logs`, `pull` and `ssh`")
        assert out.returncode == 1 and elapsed < BOUND_S, (args, elapsed, text)
        assert "no SSH answer from pod gpujob-quickstart--" in text, (args, text)
        assert f"after trying for {CONNECT_S}s, though the platform reports it RUNNING" in text, (args, text)
        assert "starts sshd" in text and "RP10" in text, (args, text)
        assert "GPUJOB_SSH_CONNECT_TIMEOUT" in text, (args, text)


def test_apply_waiting_for_sshd_after_a_start_stops_when_the_pod_exits(project: Project) -> None:
    p = project
    pod = _running_without_sshd(p)
    p.env["GPUJOB_SSH_CONNECT_TIMEOUT"] = str(CONNECT_S)
    proc = p.popen("apply", "--auto-approve")
    try:
        # Past the read-only limit, apply (which started the pod itself) is still waiting for sshd.
        poll("the launch to start", lambda: _launching(p), deadline_s=60, every=0.1)
        poll("the pod to run", lambda: p.live("pods")[0]["status"] == "RUNNING", every=0.1)
        assert proc.poll() is None
        time.sleep(CONNECT_S + 2)  # not a race guard: the interval the read-only bound would have ended
        assert proc.poll() is None, proc.communicate()[0]
        assert p.sim.inject("preempt", pod_id=pod)["preempted"] == [pod]
        preempted = time.monotonic()
        out, _ = proc.communicate(timeout=60)
        elapsed = time.monotonic() - preempted
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and elapsed < 20, (elapsed, out)
    assert "is EXITED, not running: `gpujob apply` starts it again" in out, out
    assert "not ready yet" in out and "(gives up after 10m00s)" in out, out  # the wait it was in

    # The fault was for one boot: the next apply starts the pod with sshd and converges.
    p.gj("apply", "--auto-approve")
    poll("the run to be alive", lambda: (p.status().get("run") or {}).get("alive"))


def _launching(p: Project) -> bool:
    return any(
        e.get("action_id") == "quickstart.run.launch" and e.get("phase") == "intent" for e in p.journal()
    )
