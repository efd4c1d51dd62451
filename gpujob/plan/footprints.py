"""What a job bills as the plan sees it, priced by the cost engine: now (its live resources), once applied
(running as the spec wants it), while it waits (stopped or parked), and which GPU it then runs on.
"""

from __future__ import annotations

from gpujob import naming
from gpujob.cost.live import footprint
from gpujob.cost.rates import Footprint, GpuRate
from gpujob.live import LiveResource
from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind


def current_footprint(ctx: JobContext) -> Footprint:
    """What the job's live resources bill now, priced by the cost engine exactly as status, cost and
    audit price them (the GPU it really runs, its state, snapshot sizes from the machine's disk)."""
    resources = [r for r in (ctx.machine, ctx.volume) if r is not None]
    resources += ctx.stale_volumes + ctx.ips + ctx.snapshots
    nv = ctx.spec.storage.network_volume
    label = nv.name if nv and ctx.volume and ctx.volume.name == ctx.volume_name else None
    if ctx.volume is not None and label is None:
        label = nv_label(ctx, ctx.volume)
    volume = ctx.volume.name if ctx.volume is not None else None
    fp = footprint(ctx.pricing(), resources, volume=volume, label=label)
    return fp if ctx.machine is not None else fp.with_(nodes=ctx.spec.machine.nodes)


def desired_footprint(ctx: JobContext) -> Footprint:
    """The job as the spec wants it, running (snapshots are never created by gpujob, so live ones stay)."""
    spec = ctx.spec
    from gpujob.layout.storage import holds_volume

    holds = holds_volume(spec, getattr(ctx.loaded, "sweep", None))
    nv = spec.storage.network_volume if holds else None  # a sweep's volume bills once, on its holder
    size = spec.storage.volume_gb
    if (
        ctx.machine is not None
        and size is not None
        and ctx.machine.volume_gb
        and ctx.machine.volume_gb > size
    ):
        size = ctx.machine.volume_gb  # grow-only: a larger live volume stays larger
    return Footprint(
        machine="running",
        nodes=spec.machine.nodes,
        gpu=running_gpu(ctx),
        container_disk_gb=spec.machine.container_disk_gb,
        volume_gb=size,
        network_volume=(nv.name, max(nv.size_gb, (ctx.volume.volume_gb or 0) if ctx.volume else 0), nv.tier)
        if nv
        else None,
        static_ip=spec.machine.public_ip == "static",
        dynamic_ip=spec.platform == "paperspace" and spec.machine.public_ip in (None, "dynamic"),
        snapshots=ctx.fp.snapshots,
    )


def parked_footprint(ctx: JobContext, desired: Footprint) -> Footprint:
    """What the job bills while it waits: stopped, or parked (on RunPod: the network volume alone)."""
    if ctx.spec.state == "absent":
        return ctx.fp
    if ctx.spec.state == "parked" and ctx.spec.platform == "runpod":
        return desired.with_(machine=None, gpu=None, container_disk_gb=None, volume_gb=None)
    return desired.with_(machine="stopped")


def running_gpu(ctx: JobContext) -> GpuRate | None:
    """The GPU the job runs on once the plan is applied: the live machine's own when the plan keeps it
    (a fallback candidate that is running stays; its rate, not the first choice's, is what bills)."""
    m = ctx.machine
    replaced = any(a.kind in (ActionKind.REPLACE, ActionKind.CREATE) and a.resource_kind == ctx.machine_kind
                   for a in ctx.actions)  # fmt: skip
    if m is None or replaced or m.status == "terminating":
        return ctx.desired_gpu
    live = ctx.live_gpu_rate(m)
    return live if live is not None else ctx.desired_gpu


def nv_label(ctx: JobContext, volume: LiveResource) -> str:
    owner = naming.parse(volume.name)
    return owner.volume if owner is not None and owner.volume else volume.name
