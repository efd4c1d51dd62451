"""A multi-node job's plan (docs/multinode.md): one group action, one meter line per node, N x the
per-node rate in the job's one running rate, the cap judged on the sum; its members owned through it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

from gpujob import naming
from gpujob.live import LiveNode, LiveResource, LiveState
from gpujob.plan.planner import build_plan
from gpujob.spec.load import load_specs

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
JOB = """\
version: 1
name: mn
platform: runpod
machine:
  gpu: H100-80GB
  nodes: {nodes}
  image: runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04
storage:
  volume_gb: 20
budget:
  max_hourly_usd: {cap}
"""


def _plan(tmp_path: Path, nodes: int, cap: float, resources: list[LiveResource] | None = None):  # type: ignore[no-untyped-def]
    (tmp_path / "job.yaml").write_text(JOB.format(nodes=nodes, cap=cap))
    loaded = [dataclasses.replace(ls, project="p1234") for ls in load_specs([tmp_path / "job.yaml"])]
    return build_plan(loaded, LiveState(read_at=NOW, resources=resources or []), now=NOW, env={})


def _errors(plan) -> list[str]:  # type: ignore[no-untyped-def]
    return [f.code for f in plan.all_findings() if f.severity == "error"]


def test_two_nodes_are_one_create_at_twice_the_rate_and_the_cap_judges_the_sum(tmp_path: Path) -> None:
    one = _plan(tmp_path, 1, 100).jobs[0]
    two = _plan(tmp_path, 2, 100).jobs[0]
    [create] = two.actions
    assert (create.id, create.resource_kind, create.resource_name) == (
        "mn.cluster.create",
        "cluster",
        "gpujob-mn--p1234",
    )
    lines = [m.what for m in create.billing.starts]
    assert [w for w in lines if w.startswith("GPU")] == [
        f"{lines[0][:-9]} (node 0)",
        f"{lines[0][:-9]} (node 1)",
    ]
    assert abs(two.running_usd_per_hour - 2 * one.running_usd_per_hour) < 1e-6
    assert any("2 nodes of 1 GPU(s) each" in r for r in create.reasons)
    between = (one.running_usd_per_hour + two.running_usd_per_hour) / 2  # over one node's, under two
    assert _errors(_plan(tmp_path, 1, between)) == [] and _errors(_plan(tmp_path, 2, between)) == ["budget"]


def test_a_running_cluster_is_the_jobs_machine_and_its_members_are_owned_through_it(tmp_path: Path) -> None:
    name = naming.machine_name("mn", "p1234")
    members = [
        LiveResource(platform="runpod", kind="pod", id=f"pod{r}", name=f"{name}-{r}", status="running",
                     gpu_id="NVIDIA H100 80GB HBM3", gpu_count=1, volume_gb=20,
                     attributes={"cluster_id": "c1", "cluster_rank": r, "project": "p1234"})
        for r in range(2)
    ]  # fmt: skip
    nodes = [
        LiveNode(rank=r, machine_id=f"pod{r}", status="running", private_ip=f"10.65.0.{r + 2}")
        for r in range(2)
    ]
    group = LiveResource(platform="runpod", kind="cluster", id="c1", name=name, status="running", cloud="secure",
                         gpu_id="NVIDIA H100 80GB HBM3", gpu_count=1, volume_gb=20,
                         image="runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04", nodes=nodes)  # fmt: skip
    listed = [*members, group]
    assert naming.owned(listed, "mn", "p1234") == listed  # the members through their cluster
    assert naming.machines(listed, "mn", "p1234") == [group]  # acted on through the group only
    assert naming.owned(members, "mn", "p1234") == []  # a member pod alone is nobody's
    plan = _plan(tmp_path, 2, 100, listed).jobs[0]
    assert [a.kind.value for a in plan.actions] == ["no-op"], plan.actions
    assert abs(plan.current_usd_per_hour - plan.running_usd_per_hour) < 1e-6  # both nodes bill now
    bigger = _plan(tmp_path, 3, 100, listed).jobs[0]
    [replace] = [a for a in bigger.actions if a.kind.value == "replace"]
    assert [(c.path, c.before, c.after) for c in replace.changes] == [("nodes", 2, 3)]
