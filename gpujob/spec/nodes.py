"""The platform checks of `machine.nodes` (a multi-node job, docs/multinode.md), on the raw mapping as
gpujob.spec.checks reads it, so both validate paths (full and fast) run them on a profile or its facts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpujob.jobfile.rules import one_or_many
from gpujob.spec.problem import CheckProblem


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def node_problems(profile: Any, data: Mapping[str, Any]) -> list[CheckProblem]:
    """What cannot work with `nodes` > 1: a platform or GPU that cannot cluster, a count out of the
    platform's bounds, `sweep:` beside it, a checkpoint dir some node loses, a state the nodes cannot take."""
    raw_machine = data.get("machine")
    machine: Mapping[str, Any] = raw_machine if isinstance(raw_machine, Mapping) else {}
    nodes = _int(machine.get("nodes"))
    if nodes is None or nodes == 1:
        return []
    mn = profile.multinode
    where = profile.platform
    if mn is None:
        return [CheckProblem("machine.nodes", f"{where} runs no multi-node jobs", "set machine.nodes: 1")]
    out: list[CheckProblem] = []
    if not mn.min_nodes <= nodes <= mn.max_nodes:
        out.append(
            CheckProblem(
                "machine.nodes",
                f"{where} takes {mn.min_nodes} to {mn.max_nodes} nodes in one job, got {nodes}",
                "set machine.nodes within the bounds (1: one machine)",
            )
        )
    raw_gpu = machine.get("gpu")
    named = one_or_many(raw_gpu)
    if mn.gpus is not None and isinstance(named, list):
        for i, name in enumerate(named):
            offer = profile.gpu(name) if isinstance(name, str) else None
            if offer is not None and offer.alias not in mn.gpus:
                out.append(
                    CheckProblem(
                        f"machine.gpu[{i}]" if isinstance(raw_gpu, list) else "machine.gpu",
                        f"{offer.alias} cannot cluster on {where}",
                        f"GPUs that can: {', '.join(mn.gpus)}",
                    )
                )
    if mn.kind == "cluster":  # an Instant Cluster is on-demand, in the secure cloud (v2 CreateClusterRequest)
        if machine.get("spot") not in (None, False):
            out.append(
                CheckProblem("machine.spot", f"a cluster on {where} has no spot pricing", "remove spot")
            )
        if machine.get("cloud") == "community":
            out.append(CheckProblem("machine.cloud", f"a cluster on {where} runs in the secure cloud only",
                                    "remove cloud or set it to secure"))  # fmt: skip
    if machine.get("when_unavailable") == "wait":
        out.append(
            CheckProblem(
                "machine.when_unavailable",
                "a multi-node job cannot wait in a create queue: RunPod queues one pod, never a cluster",
                "remove when_unavailable (fail: gpujob retries a while, all or nothing)",
            )
        )
    if data.get("sweep") is not None:
        out.append(
            CheckProblem(
                "machine.nodes",
                "a multi-node job cannot be a sweep: each sweep cell is one machine's run",
                "remove sweep: or set machine.nodes: 1",
                True,
            )
        )
    if data.get("fallback"):
        out.append(
            CheckProblem(
                "machine.nodes",
                "a multi-node job cannot move to a fallback platform (its nodes are one cluster, made whole "
                "only where it is)",
                "remove fallback: or set machine.nodes: 1",
                True,
            )
        )
    state = data.get("state", "running")
    if not mn.stoppable and state == "stopped":
        out.append(
            CheckProblem(
                "state",
                f"the nodes of one job on {where} cannot be stopped, only deleted (a cluster has no stop)",
                "use state: parked (with a network volume) or absent; pull checkpoints first",
            )
        )
    teardown = data.get("teardown")
    for key in ("on_finish", "on_failure"):
        value = teardown.get(key) if isinstance(teardown, Mapping) else None
        if not mn.stoppable and value == "stop":
            out.append(
                CheckProblem(
                    f"teardown.{key}",
                    f"the nodes of one job on {where} cannot be stopped, only deleted",
                    "use keep, or terminate for on_finish (it passes the teardown gate)",
                )
            )
    out += _checkpoint_dir(profile, data)
    return out


def _checkpoint_dir(profile: Any, data: Mapping[str, Any]) -> list[CheckProblem]:
    """A checkpoint dir must survive on every node: on a RunPod cluster member the container disk (outside
    storage.mount) is wiped by every restart, so a node restarted after a loss would resume from nothing."""
    ck, storage = data.get("checkpoint"), data.get("storage")
    ck_dir = ck.get("dir") if isinstance(ck, Mapping) else None
    mount = storage.get("mount", "/workspace") if isinstance(storage, Mapping) else "/workspace"
    if profile.platform != "runpod" or not isinstance(ck_dir, str) or not isinstance(mount, str):
        return []
    base = mount.rstrip("/") or "/"
    if base == "/" or ck_dir == base or ck_dir.startswith(base + "/"):
        return []
    return [
        CheckProblem(
            "checkpoint.dir",
            f"{ck_dir} is on each node's container disk, which a restart wipes: a node that is lost and "
            "restarted would find no checkpoint to resume from",
            f"write the checkpoints under storage.mount ({mount}), e.g. {base}/ckpt",
        )
    ]
