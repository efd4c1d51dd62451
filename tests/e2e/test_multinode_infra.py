"""A 2-node job's provisioning against the simulator (docs/multinode.md): the plan shows both nodes and
twice the per-node rate, apply makes one Instant Cluster of two real sshd pods, status shows both, a
cluster that cannot be had leaves nothing billing, destroy is gated and then ends every node."""

from __future__ import annotations

import json

from gpujob.sim.ps_engine import machine_dir as ps_machine_dir
from gpujob.sim.rp_engine import pod_dir
from tests.e2e.e2e_support import Project, poll
from tests.e2e.multinode_support import RUNPOD_MACHINE, billing_rates, job_text, live_members, project_with

JOB = (
    "version: 1\nname: mn\nplatform: runpod\n"
    + RUNPOD_MACHINE
    + """\
checkpoint:
  dir: /workspace/ckpt
  interval: 10m
  pull_to: ./checkpoints
  verify: python3 verify_ckpt.py {file}
teardown:
  on_finish: keep
budget:
  max_hourly_usd: 20
"""
)


def _job(p: Project, text: str = JOB) -> None:
    (p.dir / "job.yaml").write_text(text)


def test_two_nodes_planned_applied_shown_and_destroyed_behind_the_gate(project: Project) -> None:
    p = project
    _job(p)
    p.gj("plan", "-o", "plan.json")
    plan = json.loads((p.dir / "plan.json").read_text())["jobs"][0]
    [create] = plan["actions"]
    assert (create["id"], create["resource_kind"]) == ("mn.cluster.create", "cluster")
    gpus = [m for m in create["billing"]["starts"] if m["what"].startswith("GPU")]
    assert [m["what"][-8:] for m in gpus] == ["(node 0)", "(node 1)"]  # one line per node
    per_node = gpus[0]["usd_per_hour"]
    assert per_node > 0 and gpus[1]["usd_per_hour"] == per_node
    assert plan["running_usd_per_hour"] >= 2 * per_node  # twice the per-node rate, plus the disks

    applied = p.gj("apply", "plan.json")
    assert "Apply finished: 1 done, 0 failed" in applied.stdout + applied.stderr
    [status] = json.loads(p.gj("status", "--format", "json").stdout)
    nodes = status["machine"]["nodes"]
    assert [n["rank"] for n in nodes] == [0, 1] and all(n["status"] == "RUNNING" for n in nodes)
    assert len({n["private_ip"] for n in nodes}) == 2 and all(n["ssh"] for n in nodes)
    assert status["usd_per_hour"] >= 2 * per_node  # both members bill, and status counts both
    text = p.gj("status").stdout
    assert "node 0:" in text and "node 1:" in text

    # The rank-0 writer's checkpoint fails its check: destroy is refused and both nodes stay.
    ckpt = pod_dir(p.sim.engine, nodes[0]["id"]) / "volume" / "ckpt"  # rank 0's /workspace/ckpt
    ckpt.mkdir(parents=True)
    (ckpt / "step_5.json").write_text("garbage")
    term = ["--auto-approve", "--approve", "mn.cluster.terminate"]
    refused = p.gj("destroy", *term, check=False)
    assert refused.returncode == 1 and "failed verification: step_5.json" in refused.stdout + refused.stderr
    assert len(p.live("pods")) == 2
    assert "on every one of its 2 nodes" in refused.stdout  # what the terminate does to every node's data

    # A good checkpoint: pulled and verified first, then the cluster goes, every node with it.
    (ckpt / "step_5.json").write_text(json.dumps({"format": "toy-v1", "step": 5}))
    done = p.gj("destroy", *term)
    assert "Destroy finished: 2 done, 0 failed" in done.stdout + done.stderr
    assert (p.dir / "checkpoints" / "step_5.json").exists()
    assert p.live("pods") == [] and p.sim.bill()["items"]
    assert all(item["rate_per_hour"] == 0 for item in p.sim.bill()["items"])


def test_paperspace_two_nodes_run_on_a_private_network_talk_and_destroy_is_gated(project: Project) -> None:
    """Paperspace's half of the Done when: a 2-node launcher: none job on one private network."""
    p = project
    project_with(p, job_text("paperspace", on_finish="keep"))
    plan = p.gj("plan").stdout
    assert "private_network" in plan and "(node 0)" in plan and "(node 1)" in plan, plan
    assert "node 1: NODE_RANK=1 WORLD_SIZE=2 MASTER_ADDR=<node 0's private address>" in plan, plan
    out = p.gj("apply", "--auto-approve")
    text = out.stdout + out.stderr
    assert "run launched on 2 node(s)" in text and "preflight of 2 node(s) took" in text, text
    [network] = [n for n in p.sim_objects("networks") if n.get("ended_at") is None]
    [status] = json.loads(p.gj("status", "--format", "json").stdout)
    nodes = status["machine"]["nodes"]
    assert [n["rank"] for n in nodes] == [0, 1] and len({n["private_ip"] for n in nodes}) == 2
    machines = {m["id"]: m for m in p.sim_objects("machines")}
    assert all(machines[n["id"]]["network_id"] == network["id"] for n in nodes), (network, machines)
    for n in nodes:  # each machine's run log, on its own disk
        log = ps_machine_dir(p.sim.engine, n["id"]) / "disk" / "workspace" / ".gpujob" / "mn" / "run.log"
        heard = f"heard: hello from node {1 - n['rank']}"
        poll(f"node {n['rank']} to hear the other",
             lambda log=log, heard=heard: log.is_file() and heard in log.read_text())  # fmt: skip
        assert f"NODE_RANK={n['rank']} WORLD_SIZE=2" in log.read_text()
    text = p.gj("status").stdout
    assert "node 0:" in text and "node 1:" in text, text

    # Node 1's step fails its check: destroy is refused and both machines stay.
    ckpt = ps_machine_dir(p.sim.engine, nodes[1]["id"]) / "disk" / "workspace" / "ckpt"
    poll("node 1's checkpoint", lambda: (ckpt / "step-000001.json").is_file())
    (ckpt / "step-000001.json").write_text("garbage")
    term = ["--auto-approve", "--approve", "mn.private_network.terminate"]
    refused = p.gj("destroy", *term, check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1 and "failed verification: node-1/step-000001.json" in said, said
    assert len([m for m in p.sim_objects("machines") if m.get("ended_at") is None]) == 2
    (ckpt / "step-000001.json").write_text('{"node": 1}')
    done = p.gj("destroy", *term)
    assert "Destroy finished" in done.stdout + done.stderr, done.stdout + done.stderr
    assert json.loads((p.dir / "checkpoints" / "node-1" / "step-000001.json").read_text()) == {"node": 1}
    assert billing_rates(p) == []


def test_every_writer_is_gated_even_when_node_0_has_nothing_to_lose(project: Project) -> None:
    """checkpoint.writers: all: node 0's empty checkpoint dir does not wave the terminate through while
    node 1's disk holds a step; a step one writer has is not complete (gpujob.jobfile.steps)."""
    p = project
    project_with(p, job_text(on_finish="keep"))
    p.gj("apply", "--auto-approve")
    poll("both runs to end", lambda: p.status().get("run", {}).get("exit_code") == 0)
    [status] = json.loads(p.gj("status", "--format", "json").stdout)
    n0, n1 = (pod_dir(p.sim.engine, n["id"]) / "volume" / "ckpt" for n in status["machine"]["nodes"])
    assert (n1 / "step-000001.json").is_file()
    kept = (n0 / "step-000001.json").read_text()
    (n0 / "step-000001.json").unlink()  # only node 1 has step 1
    term = ["--auto-approve", "--approve", "mn.cluster.terminate"]
    refused = p.gj("destroy", *term, check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 1 and "no checkpoint step is complete: writer node(s) [1]" in said, said
    assert len(live_members(p)) == 2 and (n1 / "step-000001.json").is_file()
    (n0 / "step-000001.json").write_text(
        kept
    )  # step 1 complete again: pulled from both, then the cluster goes
    done = p.gj("destroy", *term)
    assert "Destroy finished" in done.stdout + done.stderr
    assert json.loads((p.dir / "checkpoints" / "node-1" / "step-000001.json").read_text()) == {"node": 1}
    assert live_members(p) == [] and billing_rates(p) == []
