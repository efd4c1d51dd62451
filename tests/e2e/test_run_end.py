"""Issue 42 from inside the machine, against real sshd pods with a simulated GPU host and cgroup: GPU
memory already in use refuses the launch (U11); the run's environment feeds the GPU (U40, U43); an
out-of-memory kill the cgroup counts is said so in `gpujob status`, relaunched once and not twice (U41)."""

from __future__ import annotations

import os

from tests.e2e.e2e_support import Project, poll
from tests.e2e.test_traps import edit, last_step


def _run_env(p: Project) -> dict[str, str]:
    # the command's own process (the launcher exports them after its exec); one word: ssh joins the
    # command's words with spaces for the pod's shell
    cmd = (
        "for c in $(pgrep -P $(cat /workspace/.gpujob/quickstart/pid)); do "
        "grep -q train.py /proc/$c/cmdline && tr '\\0' '\\n' < /proc/$c/environ; done; true"
    )
    out = p.gj("ssh", "--", cmd)
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


def _ended(p: Project) -> str:
    return str((p.status().get("run") or {}).get("ended") or "")


def test_a_busy_gpu_fails_preflight_and_an_oom_is_said_relaunched_once_and_not_twice(
    project: Project,
) -> None:
    p = project
    edit(p, ('TOTAL_STEPS: "3000"', 'TOTAL_STEPS: "100000"'))  # the run outlives the test
    p.sim.inject("gpu_fault", kind="busy", count=1)
    out = p.gj("apply", "--auto-approve")
    text = out.stdout + out.stderr
    assert "already has 18432 MiB of 24564 MiB in use before the launch" in text and "(U11)" in text, text
    pods = p.sim_objects("pods")
    busy = next(o for o in pods if o["gpu_fault"] == "busy")
    assert busy["status"] == "TERMINATED" and f"left {busy['id']}" in text, text
    poll("the run on the healthy pod", lambda: last_step(p) > 0)

    # the launcher fed the GPU: threads from the cgroup's 4-vCPU quota, Python unbuffered
    env = _run_env(p)
    assert env["OMP_NUM_THREADS"] == "4" and env["MKL_NUM_THREADS"] == "4" and env["PYTHONUNBUFFERED"] == "1"

    pod_id = next(o["id"] for o in p.live("pods") if o["status"] == "RUNNING")
    p.sim.inject("oom", pod_id=pod_id)
    poll("the OOM kill to be read", lambda: "out of memory" in _ended(p))
    shown = p.gj("status").stdout
    assert "killed: out of memory (limit 32 GiB" in shown, shown
    again = p.gj("apply", "--auto-approve")
    assert "relaunched once" in again.stdout + again.stderr
    poll("the relaunched run", lambda: (p.status().get("run") or {}).get("alive"))

    p.sim.inject("oom", pod_id=pod_id)
    poll("the second OOM kill", lambda: "out of memory" in _ended(p))
    plan = p.gj("plan", check=False).stdout
    assert "[run-oom]" in plan and "again after its one relaunch: it is not relaunched" in plan, plan
    assert "quickstart.run.launch" not in plan, plan  # not relaunched a second time
    p.gj("apply", "--auto-approve")
    assert not (p.status().get("run") or {}).get("alive")


def test_a_second_oom_under_watch_stops_the_pod_with_its_checkpoint_home(project: Project) -> None:
    """With nobody but watch there: the first OOM kill is relaunched, the second stops the pod through
    gpujob's own stop (quiesce, newest checkpoint pulled and verified off the pod's disk, then stop)."""
    import json

    from tests.e2e.test_traps import ON_VOLUME_DISK
    from tests.e2e.watch_support import start_watch

    p = project
    edit(p, ('TOTAL_STEPS: "3000"', 'TOTAL_STEPS: "100000"'), ON_VOLUME_DISK)
    p.gj("apply", "--auto-approve")
    poll("the run's first checkpoint", lambda: last_step(p) > 0)
    pod_id = next(o["id"] for o in p.live("pods") if o["status"] == "RUNNING")

    def events() -> list[dict]:  # type: ignore[type-arg]
        return [json.loads(line) for line in p.store().lines("events.jsonl")]

    watch = start_watch(p)
    try:
        p.sim.inject("oom", pod_id=pod_id)
        poll("watch to relaunch after the first OOM", lambda: any(e["event"] == "run-lost" for e in events()),
             deadline_s=90)  # fmt: skip
        poll("the relaunched run", lambda: (p.status().get("run") or {}).get("alive"), deadline_s=60)
        p.sim.inject("oom", pod_id=pod_id)
        poll("the pod to stop billing", lambda: p.live("pods")[0]["status"] == "EXITED", deadline_s=90)
    finally:
        watch.terminate()
        out, _ = watch.communicate(timeout=30)
    (oom,) = [e for e in events() if e["event"] == "run-oom"]
    assert "out of memory twice (limit 32 GiB)" in json.dumps(oom), (oom, out)
    assert "out of memory twice (limit 32 GiB)" in p.gj("status").stdout
    pulled = p.record("pulls/quickstart.json")
    newest = max(f["name"] for f in pulled["files"])
    assert all(f["verified"] for f in pulled["files"] if f["name"] == newest), pulled
    assert (p.dir / "checkpoints" / newest).exists(), sorted(os.listdir(p.dir / "checkpoints"))


def test_a_run_that_ends_far_sooner_than_expected_is_questioned_by_plan_and_watch(project: Project) -> None:
    """LC4.3 beyond `status`: a run done in seconds against run.max_runtime 10h is a warning on the next
    plan (its results not trusted unread) and a watch event."""
    import json

    from tests.e2e.watch_support import start_watch

    p = project
    edit(
        p,
        ('TOTAL_STEPS: "3000"', 'TOTAL_STEPS: "20"'),
        ("  detach: tmux\n", "  detach: tmux\n  max_runtime: 10h\n"),
    )
    p.gj("apply", "--auto-approve")
    poll("the run to exit 0", lambda: (p.status().get("run") or {}).get("exit_code") == 0, deadline_s=60)
    plan = p.gj("plan", check=False).stdout
    assert "[fast-finish]" in plan and "under a tenth of run.max_runtime (10 h): did it train?" in plan, plan
    assert "before trusting the result" in plan, plan

    def events() -> list[dict]:  # type: ignore[type-arg]
        return [json.loads(line) for line in p.store().lines("events.jsonl")]

    watch = start_watch(p)
    try:
        poll("watch to question the fast finish", lambda: any(e["event"] == "fast-finish" for e in events()),
             deadline_s=60)  # fmt: skip
    finally:
        watch.terminate()
        watch.communicate(timeout=30)
    (e,) = [e for e in events() if e["event"] == "fast-finish"]
    assert "did it train?" in json.dumps(e), e
