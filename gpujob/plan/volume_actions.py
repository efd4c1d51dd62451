"""The network volume's actions (RunPod): create it before the pod that mounts it, grow it in place, and
say when the live volume drifted from the spec (grown outside gpujob, another tier).
"""

from __future__ import annotations

from typing import Any

from gpujob.live import LiveResource
from gpujob.plan.builder import add
from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind, FieldChange

K = ActionKind


def without_volume(ctx: JobContext, v: LiveResource) -> Any:
    """The footprint once volume `v` is deleted: the spec's volume, or one of the extras (orphans)."""
    if v is ctx.volume:
        return ctx.fp.with_(network_volume=None)
    return ctx.fp.with_(extra_volumes=tuple(x for x in ctx.fp.extra_volumes if x[0] != v.name))


def network_volume_action(ctx: JobContext) -> str | None:
    nv = ctx.spec.storage.network_volume
    if ctx.spec.platform != "runpod" or nv is None:
        return None
    from gpujob.layout.storage import holds_volume, shared_volume_findings

    ctx.findings += shared_volume_findings(ctx)
    if not holds_volume(ctx.spec, getattr(ctx.loaded, "sweep", None)):
        return None  # queue 1 of the sweep creates, grows and deletes it; this queue's pod mounts it
    name = ctx.volume_name or nv.name
    v = ctx.volume
    if v is None:
        region = (
            ctx.spec.machine.regions[0] if ctx.spec.machine.regions else "the data center the pod lands in"
        )
        return add(
            ctx,
            K.CREATE,
            "network_volume",
            name,
            reasons=[
                f"network volume {name} does not exist; created in {region} before the pod that mounts it"
            ],
            after=ctx.fp.with_(network_volume=(nv.name, nv.size_gb, nv.tier)),
        ).id
    live_size = v.volume_gb or 0
    if live_size < nv.size_gb:
        return add(
            ctx,
            K.UPDATE,
            "network_volume",
            v.name,
            resource_id=v.id,
            reasons=[f"grow in place from {live_size} GB to {nv.size_gb} GB"],
            changes=[FieldChange(path="size_gb", before=live_size, after=nv.size_gb)],
            after=ctx.fp.with_(network_volume=(nv.name, nv.size_gb, nv.tier)),
        ).id
    if live_size > nv.size_gb:
        ctx.findings.append(
            ctx.finding(
                "drift",
                "warning",
                f"network volume {v.name} is {live_size} GB but the spec says {nv.size_gb} GB: it was grown outside "
                "gpujob, and volumes never shrink",
                fix=f"set storage.network_volume.size_gb: {live_size}",
                key="storage.network_volume.size_gb",
            )
        )
    if (v.volume_tier or "standard") != nv.tier:
        ctx.findings.append(
            ctx.finding(
                "RP7",
                "error",
                f"network volume {v.name} is {v.volume_tier}, the spec says {nv.tier}: the tier is fixed at creation",
                fix="keep the live tier in the spec, or move the data to a new volume with another name",
                key="storage.network_volume.tier",
            )
        )
    return None
