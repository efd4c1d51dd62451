"""A 2-node job's provisioning against the simulator (docs/multinode.md): the plan shows both nodes and
twice the per-node rate, apply makes one Instant Cluster of two real sshd pods, status shows both, a
cluster that cannot be had leaves nothing billing, destroy is gated and then ends every node."""

from __future__ import annotations

import json

from tests.e2e.e2e_support import Project

JOB = """\
version: 1
name: mn
platform: runpod
machine:
  gpu: H100-80GB
  nodes: 2
  regions: [EU-RO-1]
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
  container_disk_gb: 20
storage:
  volume_gb: 20
checkpoint:
  dir: /workspace/ckpt
  interval: 10m
  pull_to: ./checkpoints
teardown:
  on_finish: keep
budget:
  max_hourly_usd: 20
"""


def _job(p: Project, text: str = JOB) -> None:
    (p.dir / "job.yaml").write_text(text)


def test_two_nodes_planned_applied_shown_and_destroyed_behind_the_gate(project: Project) -> None:
    p = project
    _job(p)
    plan = json.loads(p.gj("plan", "--format", "json").stdout)["jobs"][0]
    [create] = plan["actions"]
    assert (create["id"], create["resource_kind"]) == ("mn.cluster.create", "cluster")
    gpus = [m for m in create["billing"]["starts"] if m["what"].startswith("GPU")]
    assert [m["what"][-8:] for m in gpus] == ["(node 0)", "(node 1)"]  # one line per node
    per_node = gpus[0]["usd_per_hour"]
    assert per_node > 0 and gpus[1]["usd_per_hour"] == per_node
    assert plan["running_usd_per_hour"] >= 2 * per_node  # twice the per-node rate, plus the disks

    p.gj("plan", "-o", "plan.json")
    assert "Apply finished: 1 done, 0 failed" in p.gj("apply", "plan.json").stdout
    [status] = json.loads(p.gj("status", "--format", "json").stdout)
    nodes = status["machine"]["nodes"]
    assert [n["rank"] for n in nodes] == [0, 1] and all(n["status"] == "RUNNING" for n in nodes)
    assert len({n["private_ip"] for n in nodes}) == 2 and all(n["ssh"] for n in nodes)
    assert status["usd_per_hour"] >= 2 * per_node  # both members bill, and status counts both
    text = p.gj("status").stdout
    assert "node 0:" in text and "node 1:" in text

    # The rank-0 writer's checkpoint fails its check: destroy is refused and both nodes stay.
    p.gj("ssh", "--", "sh", "-c", "'mkdir -p /workspace/ckpt && echo garbage > /workspace/ckpt/step_5.json'")
    refused = p.gj("destroy", "--auto-approve", "--approve", "mn.cluster.terminate", check=False)
    print(refused.stdout, refused.stderr)
    assert refused.returncode == 1
    assert len(p.live("pods")) == 2
    assert False
