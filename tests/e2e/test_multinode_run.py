"""The run half of multi-node (issue #38) end to end: a simulated Instant Cluster of two real sshd member
pods on their own private addresses, and gpujob's launch (gpujob.apply.runtime.launch) over real SSH:
preflight across the nodes, then each node's run detached (tmux, else nohup).

  * launcher: none: the command prints NODE_RANK and WORLD_SIZE on each node and the nodes exchange a
    message over MASTER_ADDR:MASTER_PORT;
  * launcher: torchrun: a real torchrun (gloo, CPU) on both nodes, an all-reduce and a checkpoint per
    step; node 1 lost under the run, the gang restarts whole and both nodes resume from the same step > 0;
  * a node cut off the private network (gpujob sim inject partition) fails the preflight by name and
    nothing is launched.

The cluster is made over the simulator's RunPod API and read into the live shape here; the plan and
apply of a cluster (gpujob apply on machine.nodes: 2) are nodes-infra's half of the issue."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpujob.apply.runtime import launch
from gpujob.apply.runtime.gang import PreflightFailed
from gpujob.apply.runtime.remote import Target
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import SystemClock
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveNode, LiveResource, SSHEndpoint
from gpujob.sim.testing import Sim
from gpujob.ssh.keys import ensure_project_key
from tests.e2e.e2e_support import Project, poll
from tests.e2e.multinode_support import CODE, PORT, job_text, project_with
from tests.torchenv import require_torch, torch_env

JOB = job_text(budget=20)


def _api(sim: Sim) -> httpx.Client:
    return httpx.Client(
        base_url=sim.env["GPUJOB_RUNPOD_API_URL"],
        headers={"Authorization": f"Bearer {sim.env['RUNPOD_API_KEY']}"},
        timeout=30,
    )


def _cluster(sim: Sim, pub: str) -> str:
    with _api(sim) as rp:
        made = rp.post(
            "/clusters",
            json={"name": "gpujob-gang", "type": "TRAINING", "image": "img", "ports": ["22/tcp"],
                  "compute": {"gpuTypeId": "NVIDIA H100 80GB HBM3", "gpuCountPerPod": 1, "podCount": 2},
                  "env": {"PUBLIC_KEY": pub}, "mounts": {"persistent": {"size": 20, "path": "/workspace"}}},
        )  # fmt: skip
        assert made.status_code == 201, made.text
        return str(made.json()["id"])


def _resource(sim: Sim, cid: str) -> LiveResource:
    """The cluster as the live shape has it, once both members run."""

    def members() -> list[dict[str, Any]]:
        with _api(sim) as rp:
            pods = rp.get(f"/clusters/{cid}/pods").json()["pods"]
        return (
            pods
            if len(pods) == 2 and all(p["status"] == "RUNNING" and p["ssh"]["direct"] for p in pods)
            else []
        )

    pods = poll("both members running", members, deadline_s=60)
    nodes = [
        LiveNode(
            rank=p["cluster"]["rank"],
            machine_id=p["id"],
            name=f"gpujob-gang-{p['cluster']['rank']}",
            status="running",
            ssh=SSHEndpoint(host=p["ssh"]["direct"]["host"], port=p["ssh"]["direct"]["port"]),
            private_ip=p["cluster"]["ip"],
            interface="lo",
            cost_per_hour=p["cost"],
        )
        for p in pods
    ]
    return LiveResource(
        platform="runpod", kind="cluster", id=cid, name="gpujob-gang", status="running", nodes=nodes
    )


def _spec(launcher: str, command: str, **env: str) -> JobSpec:
    return JobSpec.model_validate(
        {
            "version": 1,
            "name": "gang",
            "platform": "runpod",
            "machine": {"gpu": ["H100-80GB"], "nodes": 2, "regions": ["EU-RO-1"]},
            "checkpoint": {"dir": "/workspace/ckpt", "interval": "1m", "writers": "all"},
            "run": {
                "command": command,
                "launcher": launcher,
                "rendezvous_port": PORT,
                "detach": "nohup",
                "env": {**torch_env(), **env},
            },
        }
    )


def _target(spec: JobSpec, resource: LiveResource, state: Path) -> Target:
    return Target(
        spec=spec, spec_path=CODE / "job.yaml", provider=None, resource=resource, state_dir=state, moved=True
    )  # type: ignore[arg-type]


def _launch(target: Target, notes: list[str]) -> str:
    return asyncio.run(launch(target, SSHApi.default(), SystemClock(), {}, notes.append))


def _on(key: Path, node: LiveNode, command: str) -> str:
    assert node.ssh is not None
    out = subprocess.run(
        ["ssh", "-i", str(key), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
         "-o", "LogLevel=ERROR", "-p", str(node.ssh.port), f"root@{node.ssh.host}", command],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return out.stdout


def _log(key: Path, node: LiveNode) -> str:
    return _on(key, node, "cat /workspace/.gpujob/gang/run.log 2>/dev/null")


@pytest.fixture
def gang(sim: Sim, tmp_path: Path) -> tuple[LiveResource, Path, Path]:
    state = tmp_path / "state"
    state.mkdir()
    key, pub = ensure_project_key(state)
    return _resource(sim, _cluster(sim, pub)), key, state


def test_launcher_none_applied_runs_on_both_nodes_and_they_talk_over_master_addr(project: Project) -> None:
    """The whole path: gpujob apply on a 2-node job makes the cluster, preflights, launches both nodes."""
    p = project
    project_with(p, JOB)
    plan = p.gj("plan").stdout
    assert "node 1: NODE_RANK=1 WORLD_SIZE=2 MASTER_ADDR=<node 0's private address>" in plan, plan
    out = p.gj("apply", "--auto-approve")
    text = out.stdout + out.stderr
    assert "run launched on 2 node(s)" in text and "preflight of 2 node(s) took" in text, text
    [status] = json.loads(p.gj("status", "--format", "json").stdout)
    nodes = status["machine"]["nodes"]
    for n in nodes:  # each member's run log, read on its volume from the simulator's side
        log = p.sim.data_dir / "runpod" / "pods" / n["id"] / "volume" / ".gpujob" / "mn" / "run.log"
        heard = f"heard: hello from node {1 - n['rank']}"
        poll(
            f"node {n['rank']} to hear the other",
            lambda log=log, heard=heard: log.is_file() and heard in log.read_text(),
        )
        assert f"NODE_RANK={n['rank']} WORLD_SIZE=2" in log.read_text()
    poll("both runs to end", lambda: p.status().get("run", {}).get("exit_code") == 0)
    # checkpoint.writers: all: the pull takes every writer's step, node 1's into checkpoints/node-1/
    pulled = p.gj("pull")
    assert "node 1 (" in pulled.stdout + pulled.stderr, pulled.stdout + pulled.stderr
    ck = p.dir / "checkpoints"
    assert json.loads((ck / "step-000001.json").read_text()) == {"node": 0}
    assert json.loads((ck / "node-1" / "step-000001.json").read_text()) == {"node": 1}


def test_torchrun_gang_all_reduces_and_a_lost_node_restarts_both_from_the_same_step(sim: Sim, gang) -> None:
    require_torch()  # torch missing: this fails, never skips (`make install` installs it)

    from gpujob.sim import rp_engine

    resource, key, state = gang
    spec = _spec("torchrun", "python3 allreduce.py", STEPS="400", STEP_SECONDS="0.2", GANG_WRITERS="all")
    notes: list[str] = []
    _launch(_target(spec, resource, state), notes)
    n0, n1 = resource.nodes
    steps = "ls /workspace/ckpt | grep -c '^step-'"
    poll(
        "a few steps on both nodes",
        lambda: all(int(_on(key, n, steps) or 0) >= 3 for n in (n0, n1)),
        deadline_s=150,
    )
    both = _log(key, n0) + _log(key, n1)  # c10d gives the global ranks out in the order nodes join
    assert "rank 0/2 step 1 sum 3" in both and "rank 1/2 step 1 sum 3" in both, both

    # Node 1 is lost under the run: its container goes down and comes back (an on-demand member has no
    # spot preemption; the platform's host failure does this), node 0's run is left half a gang.
    rp_engine.restart(sim.engine, n1.machine_id)
    fresh = _resource(sim, resource.id)
    notes.clear()
    out = _launch(_target(spec, fresh, state), notes)
    assert "restarted: it was alive on node(s) [0] only" in out, (out, notes)
    assert any("node 0 (gpujob-gang-0): run stopped" in n for n in notes), notes

    def resumed() -> list[int]:
        got = []
        for n in fresh.nodes:
            lines = [line for line in _log(key, n).splitlines() if "resumes at step" in line]
            if len(lines) >= 2:
                got.append(int(lines[-1].rsplit(" ", 1)[1]))
        return got if len(got) == 2 else []

    first, second = poll("both nodes to resume", resumed, deadline_s=120)
    assert first == second > 0


def test_a_node_cut_off_the_private_network_fails_preflight_by_name_and_nothing_launches(
    sim: Sim, gang
) -> None:
    resource, key, state = gang
    cut = resource.nodes[1]
    sim.inject("partition", pod_id=cut.machine_id)
    fresh = _resource(sim, resource.id)
    assert fresh.nodes[1].private_ip is not None and fresh.nodes[1].private_ip.startswith("192.0.2.")
    with pytest.raises(PreflightFailed) as info:
        _launch(_target(_spec("none", "python3 exchange.py"), fresh, state), [])
    text = str(info.value)
    assert "node 0 (gpujob-gang-0): cannot reach node 1 (gpujob-gang-1)" in text, text
    assert "preflight of 2 node(s) took" in (info.value.hint or "")
    for n in fresh.nodes:
        assert _on(key, n, "ls /workspace/.gpujob/gang/").split().count("launcher.sh") == 0
