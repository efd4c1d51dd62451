"""Node loss under a live `gpujob watch` (issue #38, docs/multinode.md "Node loss under gpujob watch"):
a 2-node RunPod job is applied, `gpujob watch` runs as its own process, and the simulator loses one
member of the cluster (`gpujob sim inject preempt --pod-id <member>`: RunPod lists it EXITED). Watch
stops the other node through the quiesce, says which node and which step, and the whole gang restarts
from the same newest complete step > 0 on both nodes, with nothing left billing half a cluster. A
cluster that cannot be made whole again (no capacity for the lost member) is parked: nothing bills."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from tests.e2e.e2e_support import Project, poll
from tests.e2e.multinode_support import billing_rates, job_text, live_members, project_with
from tests.e2e.watch_support import events, start_watch


def _log(p: Project, pod: dict[str, Any]) -> str:
    log = p.sim.data_dir / "runpod" / "pods" / pod["id"] / "volume" / ".gpujob" / "mn" / "run.log"
    return log.read_text() if log.is_file() else ""


def _resumes(p: Project, pod: dict[str, Any]) -> list[int]:
    return [int(line.rsplit(" ", 1)[1]) for line in _log(p, pod).splitlines() if " resumes at step " in line]


def _pulled(p: Project) -> int:
    """How many checkpoints watch's pulls have on record (a pull cut short by the loss records none)."""
    return sum(int(e["did"].split()[0]) > 0 for e in events(p) if e.get("event") == "pulled")


# A step every 1.5 s and a verify that starts no Python: watch verifies every checkpoint it pulls, and
# at a step every 0.3 s a Python per file kept its pulls behind the run on a busy machine (~30 s each).
STEP_SECONDS = "1.5"
VERIFY = "test -s {file}"


def _applied(p: Project, steps: int) -> list[dict[str, Any]]:
    env = {"STEPS": str(steps), "STEP_SECONDS": STEP_SECONDS}
    text = job_text(
        command="python3 gangsteps.py", pull="continuous", env=env, on_finish="keep", verify=VERIFY
    )
    project_with(p, text)
    out = p.gj("apply", "--auto-approve")
    assert "run launched on 2 node(s)" in out.stdout + out.stderr, out.stdout + out.stderr
    members = live_members(p)
    assert len(members) == 2
    return members


def _stop(watch: subprocess.Popen[str]) -> str:
    watch.terminate()
    try:
        out, _ = watch.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        watch.kill()
        out, _ = watch.communicate()
    return out or ""


def test_a_member_preempted_under_watch_restarts_the_whole_gang_from_the_same_step(project: Project) -> None:
    p = project
    n0, n1 = _applied(p, steps=2000)
    watch = start_watch(p)
    try:
        poll("watch to pull both writers' steps", lambda: _pulled(p) >= 3, deadline_s=120)
        lost = p.sim.inject("preempt", pod_id=n1["id"], grace=1)
        assert lost["preempted"] == [n1["id"]]

        def said() -> dict[str, Any] | None:
            return next((e for e in events(p) if e.get("event") == "node-lost"), None)

        event = poll("watch to see node 1 lost", said, deadline_s=90)
        text = f"{event.get('happened')} {event.get('did')}"
        assert "node 1 (" in text and "is EXITED" in text, event
        assert "node 0: run stopped" in text and "restarts whole from step " in text, event
        step = int(text.split("restarts whole from step ")[1].split()[0])
        assert step > 0

        def resumed() -> list[int] | None:
            got = [_resumes(p, n) for n in (n0, n1)]
            return [g[-1] for g in got] if all(len(g) >= 2 for g in got) else None

        first, second = poll("both nodes to resume", resumed, deadline_s=150)
        assert first == second > 0 and first >= step, (first, second, step)
        # Whole again, and nothing of the job billing beside it: the same two members, both running.
        members = live_members(p)
        assert [m["id"] for m in members] == [n0["id"], n1["id"]]
        assert all(m["status"] == "RUNNING" for m in members)
        gpus = {i["id"] for i in billing_rates(p) if i["item"] == "gpu"}
        assert gpus == {n0["id"], n1["id"]}, billing_rates(p)
        assert {i["id"] for i in billing_rates(p)} <= {n0["id"], n1["id"]}, billing_rates(p)
    finally:
        out = _stop(watch)
    assert "node 1 (" in out, out[-3000:]


def test_a_cluster_that_cannot_be_made_whole_is_parked_with_nothing_billing(project: Project) -> None:
    p = project
    _n0, n1 = _applied(p, steps=2000)
    p.sim.inject("capacity", platform="runpod", count=1000)  # the lost member's host is never given back
    watch = start_watch(p)
    try:
        poll("watch to pull both writers' steps", lambda: _pulled(p) >= 1, deadline_s=120)
        p.sim.inject("preempt", pod_id=n1["id"], grace=1)

        def parked() -> dict[str, Any] | None:
            return next((e for e in events(p) if "could not be made whole" in str(e)), None)

        event = poll("watch to park the gang", parked, deadline_s=150)
        assert (
            event["event"] == "limit"
            and "parked rather than left billing half a cluster" in event["happened"]
        )
        assert "then terminate the machine" in event["did"]  # an Instant Cluster has no stop
        # The gate reads the lost node's disk before the terminate: refused while no host can start it.
        poll(
            "the gate to wait for node 1's disk", lambda: any(e["event"] == "park-failed" for e in events(p))
        )
        assert live_members(p) != []
        p.sim.inject("clear")  # a GPU frees up: the gate can read node 1's disk, then the cluster goes
        poll("nothing of the job billing", lambda: billing_rates(p) == [] and live_members(p) == [],
             deadline_s=90)  # fmt: skip
        poll("the parked event", lambda: any(e["event"] == "parked" for e in events(p)))
        assert (p.dir / "checkpoints" / "node-1").is_dir()
    finally:
        _stop(watch)


def _on(p: Project, pod: dict[str, Any], command: str) -> str:
    """A command on one member over its real sshd, with the project's key."""
    from gpujob.ssh.keys import ensure_project_key

    key, _ = ensure_project_key(p.state)
    port = pod["ssh_port"]
    out = subprocess.run(
        ["ssh", "-i", str(key), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
         "-o", "LogLevel=ERROR", "-p", str(port), "root@127.0.0.1", command],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return out.stdout + out.stderr


def test_a_run_dying_on_node_1_only_is_seen_and_the_whole_gang_restarts(project: Project) -> None:
    p = project
    n0, n1 = _applied(p, steps=2000)
    pid = p.sim.data_dir / "runpod" / "pods" / n1["id"] / "volume" / "code" / "gangsteps-1.pid"
    poll("node 1's run to start", pid.is_file)
    [row] = json.loads(p.gj("status", "--format", "json").stdout)
    assert [n["run"]["alive"] for n in row["machine"]["nodes"]] == [True, True], row["machine"]["nodes"]
    watch = start_watch(p)
    try:
        poll("watch to pull both writers' steps", lambda: _pulled(p) >= 2, deadline_s=120)
        _on(p, n1, f"kill -9 {pid.read_text().strip()}")  # node 1's command dies; node 1 itself runs on

        def said() -> dict[str, Any] | None:
            return next((e for e in events(p) if e.get("event") == "node-lost"), None)

        event = poll("watch to see node 1's run dead", said, deadline_s=90)
        text = f"{event['happened']} {event['did']}"
        assert "node 1 (" in text and "its run is" in text and "node 0: run stopped" in text, event
        assert "restarts whole from step " in text, event

        def resumed() -> list[int] | None:
            got = [_resumes(p, n) for n in (n0, n1)]
            return [g[-1] for g in got] if all(len(g) >= 2 for g in got) else None

        first, second = poll("both nodes to resume", resumed, deadline_s=150)
        assert first == second > 0, (first, second)
    finally:
        _stop(watch)


def test_a_paperspace_network_machine_lost_under_watch_restarts_both_from_the_same_step(
    project: Project,
) -> None:
    """The same on Paperspace: one machine of the private network turns off (sim preempt --machine-id)."""
    from gpujob.sim.ps_engine import machine_dir

    p = project
    env = {"STEPS": "2000", "STEP_SECONDS": STEP_SECONDS}
    text = job_text(
        "paperspace",
        command="python3 gangsteps.py",
        pull="continuous",
        env=env,
        on_finish="keep",
        verify=VERIFY,
    )
    project_with(p, text)
    p.gj("apply", "--auto-approve")
    [row] = json.loads(p.gj("status", "--format", "json").stdout)
    ids = [n["id"] for n in row["machine"]["nodes"]]

    def resumes(mid: str) -> list[int]:
        log = machine_dir(p.sim.engine, mid) / "disk" / "workspace" / ".gpujob" / "mn" / "run.log"
        text = log.read_text() if log.is_file() else ""
        return [int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if " resumes at step " in line]

    watch = start_watch(p)
    try:
        poll("watch to pull both writers' steps", lambda: _pulled(p) >= 3, deadline_s=120)
        assert p.sim.inject("preempt", machine_id=ids[1])["preempted"] == [ids[1]]
        event = poll("watch to see node 1 lost",
                     lambda: next((e for e in events(p) if e.get("event") == "node-lost"), None), deadline_s=90)  # fmt: skip
        assert "node 1 (" in event["happened"] and "node 0: run stopped" in event["did"], event

        def resumed() -> list[int] | None:
            got = [resumes(m) for m in ids]
            return [g[-1] for g in got] if all(len(g) >= 2 for g in got) else None

        first, second = poll("both nodes to resume", resumed, deadline_s=150)
        assert first == second > 0
        live = [m for m in p.sim_objects("machines") if m.get("ended_at") is None]
        assert sorted(m["id"] for m in live) == sorted(ids)  # the same two machines, no third
    finally:
        _stop(watch)
