"""The pull before a terminate does not start a stopped pod whose data all stays (issue 37).

A stopped RunPod pod runs nothing and its container disk was reset by the stop; everything it keeps is
on its network volume, which a pod terminate does not erase. The teardown gate already lets such a
terminate through without starting the pod (gpujob.apply.teardown._machine_gate: "never start a
machine to look at nothing"); the pull step planned before it started the pod all the same, for
checkpoints that stay on the volume anyway, e.g. every queue pod of a sweep on a shared volume,
whose delete pulls every cell through a temporary pod. The pull now says so and starts nothing, except
when this very apply deletes that volume (not shared), whose gate needs the pull through the pod.
"""

from __future__ import annotations

from typing import Any

from gpujob.live import LiveResource
from gpujob.plan.model import ActionKind


def stays_on_volume(ctx: Any, machine: LiveResource) -> str | None:
    """Why the pull need not start `machine`, or None when it must."""
    from gpujob.layout.storage import shared

    vol_id = machine.network_volume_id if ctx.spec.platform == "runpod" else None
    if machine.status != "stopped" or vol_id is None:
        return None
    sweep = shared(ctx.spec)
    if not sweep and any(a.kind is ActionKind.DELETE_VOLUME and a.resource_id == vol_id for a in ctx.todo):
        return None
    later = (
        "; the delete of the sweep's volume pulls every cell of every queue through a temporary pod"
        if sweep
        else ""
    )
    return (
        f"{machine.name} is stopped and not started for the pull: no run is alive, the stop reset its "
        f"container disk, and its checkpoints are on network volume {vol_id}, which stays{later}"
    )
