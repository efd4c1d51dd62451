"""Which nodes of a gang are lost, and the step it restarts from. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpujob.jobfile.steps import newest_complete
from gpujob.live import LiveNode, LiveResource

WHOLE_TICKS = 10  # ticks a gang may stay broken (its nodes restarting) before watch parks it


def lost_nodes(machine: LiveResource | None, count: int) -> tuple[list[LiveNode], list[LiveNode], list[int]]:
    """(living nodes, nodes not running, ranks missing altogether) of a job of `count` nodes."""
    nodes = list(machine.nodes) if machine is not None else []
    living = [n for n in nodes if n.status == "running"]
    down = [n for n in nodes if n.status != "running"]
    have = {n.rank for n in nodes}
    return living, down, [r for r in range(count) if r not in have]


def restart_step(record: Any, writers: str, count: int) -> int | None:
    """The newest complete step the local pull record knows (node R's files named node-<R>/...)."""
    if record is None:
        return None
    listings: dict[int, list[str]] = {}
    for name in getattr(record, "remote_files", {}) or {}:
        head, _, rest = name.partition("/")
        if head.startswith("node-") and head[5:].isdigit() and rest:
            listings.setdefault(int(head[5:]), []).append(rest)
        else:
            listings.setdefault(0, []).append(name)
    return newest_complete(listings, writers, count)


def loss_line(
    down: list[LiveNode], missing: list[int], step: int | None, stopped: Mapping[int, str]
) -> tuple[str, str]:
    """(what happened, what watch did) for the event."""
    gone = [f"node {n.rank} ({n.name or n.machine_id}) is {n.raw_status or n.status}" for n in down]
    gone += [f"node {r} is missing from the cluster" for r in missing]
    where = f"step {step}" if step is not None else "the newest complete checkpoint step"
    did = "; ".join(f"node {r}: run {state}" for r, state in sorted(stopped.items()))
    did = (f"stopped the others through the quiesce ({did}); " if did else "") + (
        f"the gang restarts whole from {where} once every node runs"
    )
    return "; ".join(gone) + ": the gang cannot go on", did


def run_loss_line(
    dead: list[LiveNode], states: Mapping[int, str], step: int | None, stopped: Mapping[int, str]
) -> tuple[str, str]:
    """(what happened, what watch did) when a node runs but its run died while others live."""
    gone = [
        f"node {n.rank} ({n.name or n.machine_id}): its run is {states.get(n.rank, 'dead')}" for n in dead
    ]
    _, did = loss_line([], [], step, stopped)
    return "; ".join(gone) + " while the others run: the gang cannot go on", did
