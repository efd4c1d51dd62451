"""Storage findings: which tier checkpoint.dir sits on, whether parking keeps the data cheaply, caches on
wiped disks, and two jobs writing one network volume.
"""

from __future__ import annotations

from gpujob.cost.rates import Footprint, meters, monthly_total, usd
from gpujob.plan.context import JobContext, path_tier, tier_title
from gpujob.plan.model import Finding


def checkpoint_tier_findings(ctx: JobContext) -> list[Finding]:
    spec, ck = ctx.spec, ctx.spec.checkpoint
    if ck is None:
        return []
    tier = path_tier(spec, ck.dir)
    name = tier_title(ctx.profile, tier)
    verb = ctx.teardown_verb
    if not ctx.profile.survives(tier, "stop"):
        return [
            ctx.finding(
                "RP2",
                "error",
                f"checkpoint.dir {ck.dir} is on the {name}, which is wiped at every stop",
                detail="Only the volume mount survives a stop; a preemption or stop loses every checkpoint.",
                fix=f"put checkpoint.dir under storage.mount ({spec.storage.mount}) and give it a network_volume",
                key="checkpoint.dir",
            )
        ]
    if not ctx.profile.survives(tier, "terminate"):
        code = "RP3" if spec.platform == "runpod" else "checkpoint-tier"
        fix = (
            "add storage.network_volume and keep checkpoint.dir on it"
            if spec.platform == "runpod"
            else f"pull checkpoints to {ck.pull_to} (gpujob pull) before any destroy"
        )
        return [
            ctx.finding(
                code,
                "warning" if spec.platform == "runpod" else "info",
                f"checkpoint.dir {ck.dir} is on the {name}, which {verb} deletes",
                detail=f"The {verb} that stops the meter erases it; gpujob will insist on a verified pull first.",
                fix=fix,
                key="checkpoint.dir",
            )
        ]
    return []


def parking_findings(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    if spec.platform != "runpod":
        return []
    key = (
        "state"
        if spec.state == "stopped"
        else "teardown.on_finish"
        if spec.teardown.on_finish == "stop"
        else None
    )
    if key is None:
        return []
    parked = Footprint(machine="stopped", volume_gb=spec.storage.volume_gb)
    monthly = monthly_total(meters(parked, ctx.profile))
    # without a volume disk a stopped pod bills nothing: the trap left is the GPU taken meanwhile
    summary, detail = (
        (
            f"a stopped pod is not a cheap park: its volume disk bills {usd(monthly)}/mo at the stopped rate",
            "RunPod bills a stopped pod's volume disk at twice the running rate, and the GPU may be taken "
            "by someone else while it is stopped, so the pod can come back with zero GPUs (RP1).",
        )
        if monthly > 0
        else (
            "a stopped pod is not a safe park: it bills nothing stopped (no volume disk), but its GPU may be "
            "rented away meanwhile",
            "RunPod keeps a stopped pod on its host; if that GPU was taken while it was stopped, the pod comes "
            "back with zero GPUs (RP1).",
        )
    )
    return [
        ctx.finding(
            "RP4",
            "warning",
            summary,
            detail=detail,
            fix="state: parked (terminates the pod, keeps the network volume the checkpoints are on)"
            if spec.storage.network_volume is not None
            else "put checkpoint.dir on a storage.network_volume, then park with state: parked",
            key=key,
        )
    ]


def cache_findings(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    if spec.platform != "runpod" or spec.run is None:
        return []
    storage = spec.storage
    if spec.run.caches == "durable" and not storage.volume_gb and storage.network_volume is None:
        return [
            ctx.finding(
                "RP11",
                "warning",
                "run.caches is durable but there is no volume to put the caches on",
                detail=f"{storage.mount} is then on the small container disk, which pip and HF downloads fill.",
                fix="set storage.volume_gb or storage.network_volume",
                key="run.caches",
            )
        ]
    default = ctx.profile.tier("container_disk").default_gb or 5
    size = spec.machine.container_disk_gb or default
    if spec.run.caches == "default" and size < 50:
        return [
            ctx.finding(
                "RP11",
                "warning",
                f"caches stay on the {size} GB container disk",
                detail="pip, Hugging Face and apt caches default to /, and a few model downloads fill it mid-run.",
                fix="set run.caches: durable (the default), or raise machine.container_disk_gb",
                key="run.caches",
            )
        ]
    return []


def network_volume_findings(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    nv = spec.storage.network_volume
    if spec.platform != "runpod" or nv is None or spec.state == "absent":
        return []
    out: list[Finding] = []
    regions = spec.machine.regions
    region = ctx.volume.region if ctx.volume else (regions[0] if regions else None)
    if region is None:
        out.append(
            ctx.finding(
                "RP7",
                "warning",
                "network volume without machine.regions: it will pin every future pod to whichever data center "
                "it lands in",
                fix="choose the data center deliberately: set machine.regions",
                key="storage.network_volume",
            )
        )
    elif regions and region not in regions:
        out.append(
            ctx.finding(
                "RP7",
                "error",
                f"network volume {ctx.volume.name if ctx.volume else nv.name} is in {region}, "
                f"but machine.regions is {', '.join(regions)}",
                detail="A pod can only mount a network volume in the volume's own data center.",
                fix=f"add {region} to machine.regions, or move the data to a new volume (bridge pod or S3 API)",
                key="machine.regions",
            )
        )
    if region is not None:
        offers = [o for o in (ctx.profile.gpu(g) for g in spec.machine.gpu) if o is not None]
        if offers and all(o.regions and region not in o.regions for o in offers):
            out.append(
                ctx.finding(
                    "RP7",
                    "error",
                    f"none of {', '.join(spec.machine.gpu)} is offered in {region}, where the network volume is",
                    fix="pick a GPU sold in that data center, or a volume in a data center that has the GPU",
                    key="machine.gpu",
                )
            )
    if ctx.volume is not None:
        from gpujob.layout.storage import sibling_queue

        writers = [
            r
            for r in ctx.live.resources
            if r.kind == "pod"
            and r.network_volume_id == ctx.volume.id
            and (ctx.machine is None or r.id != ctx.machine.id)
            and r.status != "terminating"
            and not sibling_queue(ctx.spec, r, ctx.project)  # each cell writes only its own dirs
        ]
        if writers:
            out.append(
                ctx.finding(
                    "concurrent-writers",
                    "error",
                    f"network volume {ctx.volume.name} is also mounted by {', '.join(w.name for w in writers)}",
                    detail="Two pods writing one network volume at the same time can corrupt it.",
                    fix="give each job its own volume or its own write path, and stop the other writer first",
                    key="storage.network_volume",
                )
            )
    return out
