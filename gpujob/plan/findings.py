"""Platform traps a spec or an action walks into, as Findings with a gotcha id, severity and fix.

Spec findings look at the job file (and the live state it meets); action findings are attached to
the action that triggers them. Error findings block apply. Secrets are checked by name only: their
values are never read beyond "is it set".
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gpujob.cost.rates import Footprint, meters, monthly_total, usd
from gpujob.cost.spend import projected_charge
from gpujob.disks.findings import container_disk_findings
from gpujob.jobfile.model import format_duration
from gpujob.plan.cadence import human, young_daly
from gpujob.plan.context import JobContext, path_tier, tier_title
from gpujob.plan.image_findings import image_findings
from gpujob.plan.model import ActionKind, Finding, MeterLine
from gpujob.plan.template_findings import template_findings

# Assumed sustained write speed of a checkpoint to local NVMe when only its size is known.
FLUSH_GB_PER_S = 2.0


RANK = {"error": 0, "warning": 1, "info": 2}


def by_severity(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; otherwise in the order they were found (stable)."""
    return sorted(findings, key=lambda f: RANK[f.severity])


def spec_findings(
    ctx: JobContext,
    *,
    running_usd_per_hour: float,
    launch_planned: bool,
    running_meters: dict[str, MeterLine] | None = None,
) -> list[Finding]:
    out: list[Finding] = []
    out += _orphans(ctx)
    out += _checkpoint_tier(ctx)
    out += _parking(ctx)
    out += _caches(ctx)
    if not any(f.code == "RP11" for f in out):
        out += container_disk_findings(ctx)  # RP11 from run.setup: gpujob.disks.findings
    out += _auto_shutdown(ctx)
    out += _static_ip(ctx)
    out += _network_volume(ctx)
    out += _image(ctx)
    out += template_findings(ctx)  # resolves machine.template first: PS11 judges what it resolved to
    out += image_findings(ctx)  # RP9, cuda-arch, PS11: gpujob.plan.image_findings
    out += _spot(ctx)
    out += _budget(ctx, running_usd_per_hour, running_meters)
    out += _secrets(ctx, launch_planned)
    return out


def _orphans(ctx: JobContext) -> list[Finding]:
    """Owned volumes the spec no longer names: they hold data, so the plan never deletes them unasked."""
    out = []
    for v in ctx.stale_volumes:
        if ctx.spec.state == "absent":
            continue
        monthly = monthly_total(
            meters(
                Footprint(network_volume=(v.name, v.volume_gb or 0, v.volume_tier or "standard")), ctx.profile
            )
        )
        out.append(
            ctx.finding(
                "orphan",
                "warning",
                f"network volume {v.name} ({v.volume_gb} GB) is no longer in the spec and bills {usd(monthly)}/mo",
                detail="gpujob never deletes a volume the spec stopped naming: it may hold the only copy of your data.",
                fix="name it again in storage.network_volume, or delete it after copying what you need",
                key="storage",
            )
        )
    return out


def _checkpoint_tier(ctx: JobContext) -> list[Finding]:
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


def _parking(ctx: JobContext) -> list[Finding]:
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


def _caches(ctx: JobContext) -> list[Finding]:
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


def _auto_shutdown(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    if spec.platform != "paperspace" or spec.state == "absent":
        return []
    m, runtime = spec.machine, spec.run.max_runtime if spec.run else None
    core = next((a for a in ctx.profile.auto_shutdown if a.kind == "core"), None)
    cap = timedelta(hours=core.max_hours) if core and core.max_hours else None
    out: list[Finding] = []
    if m.auto_shutdown is not None and runtime is not None and runtime > m.auto_shutdown:
        has_ck = spec.checkpoint is not None
        out.append(
            ctx.finding(
                "PS2",
                "warning" if has_ck else "error",
                f"max_runtime {format_duration(runtime)} is longer than auto_shutdown "
                f"{format_duration(m.auto_shutdown)}: the machine powers off mid-run",
                detail="Core auto-shutdown on Linux is a wall-clock timer; an open SSH or tmux session does not "
                "hold it off."
                + ("" if has_ck else " Without a checkpoint block the work since launch is lost."),
                fix=f"set machine.auto_shutdown to at least {format_duration(runtime)}"
                + (" (the platform allows at most 1w)" if cap and runtime > cap else ""),
                key="machine.auto_shutdown",
            )
        )
    elif m.auto_shutdown is None:
        suggestion = format_duration(min(runtime, cap) if runtime and cap else runtime) if runtime else "48h"
        out.append(
            ctx.finding(
                "PS2",
                "warning",
                "auto_shutdown is unset: nothing powers off a forgotten machine",
                detail="The GPU bills by the hour until someone stops it."
                + (f" The run is expected to take up to {format_duration(runtime)}." if runtime else ""),
                fix=f"set machine.auto_shutdown: {suggestion} (set it before the machine is created; changing it later is unreliable)",
                key="machine",
            )
        )
    if runtime is not None and cap is not None and runtime > cap:
        out.append(
            ctx.finding(
                "PS2",
                "warning",
                f"max_runtime {format_duration(runtime)} exceeds the longest auto-shutdown (1w)",
                fix="make the run resumable from checkpoints and expect at least one restart",
                key="run.max_runtime",
            )
        )
    return out


def _static_ip(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    # state: stopped gets the sharper PS1 warning on its stop action instead
    if spec.platform != "paperspace" or spec.state != "running":
        return []
    if spec.machine.public_ip == "static":
        addon = ctx.profile.addon("static_ip")
        return [
            ctx.finding(
                "PS1",
                "info",
                f"the static IP bills while the machine is off (capped at {usd(addon.monthly_cap_usd)}/mo) "
                "until it is released",
                fix="state: absent releases it; public_ip: dynamic avoids it (the address then changes each start, PS6)",
                key="machine.public_ip",
            )
        ]
    return []


def _network_volume(ctx: JobContext) -> list[Finding]:
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
        from gpujob.sweep.storage import sibling_queue

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


def _image(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    image = spec.machine.image
    if image is None or "@sha256:" in image or spec.state == "absent":
        return []
    code = "PS12" if spec.platform == "paperspace" else "image-digest"
    return [
        ctx.finding(
            code,
            "warning",
            f"image {image} is not pinned by digest",
            detail="A tag can point at different layers tomorrow; a replaced or restarted machine may run other code.",
            fix="pin it: image: name@sha256:<digest>",
            key="machine.image",
        )
    ]


def _spot(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    if spec.machine.spot is False or spec.state == "absent":
        return []
    from gpujob.rehearse.record import plan_finding

    out = _spot_api(ctx)
    # The checkpoint advice (and gpujob rehearse's last drill) is for a pod that is, or stays,
    # interruptible: not one being replaced on-demand.
    if ctx.spot or (ctx.machine is not None and ctx.machine.spot and ctx.machine.status != "stopped"):
        out += _spot_checkpoints(ctx) + plan_finding(ctx)
    return out


RETIRED_DETAIL = (
    "RunPod retires its GraphQL API in early 2027 (410 Gone; staged rate limits since 2026-09-17). REST v2 "
    "has no spot pods, no bid floor and no balance, and will not start a spot pod as on-demand. gpujob goes "
    "on with v2 alone: on-demand pods, spot prices from the profile, no balance (RP8 says so)."
)
SPOT_FIX = (
    "set machine.spot: prefer (spot while RunPod offers it, else on-demand) or false; a stopped spot pod is "
    "then replaced by an on-demand pod on the same storage"
)


def _spot_api(ctx: JobContext) -> list[Finding]:
    """Spot rides on RunPod's GraphQL, which is being retired: say so while it lives, block a spot create
    or resume once it is gone (only then: a running spot pod goes on), and show what `prefer` chose."""
    if ctx.spec.platform != "runpod":
        return []
    want = ctx.spec.machine.spot
    gone = ctx.spot_gone
    if gone is None:
        return [
            ctx.finding(
                "spot-graphql",
                "info",
                "spot pods go through RunPod's legacy GraphQL API (podRentInterruptable, podBidResume), which "
                "RunPod retires in early 2027: REST v2 has no spot",
                detail="gpujob bids the live minimum bid (gpuTypes.lowestPrice.minimumBidPrice) read at apply "
                "time; a bid the market has moved past is refused and the next candidate is tried. "
                + (
                    "With spot: prefer, creates and resumes fall back to on-demand once it is gone."
                    if want == "prefer"
                    else "Once it is gone, spot: true blocks every spot create or resume."
                ),
                fix="" if want == "prefer" else "machine.spot: prefer keeps working after the retirement",
                key="machine.spot",
            )
        ]
    needs = [
        a
        for a in ctx.actions
        if a.resource_kind == ctx.machine_kind
        and a.kind in (ActionKind.CREATE, ActionKind.START, ActionKind.REPLACE)
    ]
    if want is True:
        if needs:
            verb = "resume" if needs[0].kind is ActionKind.START else "create"
            return [
                ctx.finding(
                    "spot-retired",
                    "error",
                    f"machine.spot: true needs a spot {verb}, but RunPod's spot API is gone ({gone})",
                    detail=RETIRED_DETAIL,
                    fix=SPOT_FIX,
                    key="machine.spot",
                    action_id=needs[0].id,
                )
            ]
        return [
            ctx.finding(
                "spot-retired",
                "info",
                f"RunPod's spot API is gone ({gone}): the spot pod runs on, but once stopped or preempted it "
                "cannot resume as spot",
                detail=RETIRED_DETAIL,
                fix=SPOT_FIX,
                key="machine.spot",
            )
        ]
    return [_prefer_finding(ctx, gone, needs)]


def _prefer_finding(ctx: JobContext, gone: str, needs: list[Any]) -> Finding:
    """`prefer` without spot: what the on-demand pod costs more than a spot one would have."""
    from gpujob.cost.rates import gpu_rate

    m = ctx.spec.machine
    extra = ""
    od = ctx.desired_gpu
    if od is not None and ctx.desired_gpu_alias is not None:
        sp = gpu_rate(
            ctx.profile, ctx.live.quotes, ctx.desired_gpu_alias, count=m.gpu_count, cloud=m.cloud, spot=True
        )
        if sp is not None:
            extra = (
                f": on-demand {usd(od.usd_per_hour)}/h, {usd(od.usd_per_hour - sp.usd_per_hour)}/h more than spot "
                f"at {usd(sp.usd_per_hour)}/h ({sp.source})"
            )
    what = "creates and resumes are on-demand" if not needs else f"the {needs[0].kind.value} is on-demand"
    return ctx.finding(
        "spot-prefer",
        "info",
        f"machine.spot: prefer: {what}, as RunPod's spot API is gone ({gone}){extra}",
        detail=RETIRED_DETAIL + " A running spot pod is never replaced for this; a stopped one is.",
        key="machine.spot",
        action_id=needs[0].id if needs else None,
    )


def _spot_checkpoints(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    ck = spec.checkpoint
    if ck is None:
        return [
            ctx.finding(
                "spot-no-checkpoint",
                "warning",
                "spot pod without a checkpoint block: a preemption restarts training from zero",
                fix="add checkpoint: {dir: /workspace/ckpt, interval: auto, mtbf: ..., write_time: ...}",
                key="machine.spot",
            )
        ]
    out: list[Finding] = []
    grace = ctx.profile.spot.grace_seconds or 5.0
    if ck.interval != "auto" and ck.mtbf is not None and ck.write_time is not None:
        optimum = young_daly(ck.mtbf.total_seconds(), ck.write_time.total_seconds())
        if ck.interval.total_seconds() > optimum:
            out.append(
                ctx.finding(
                    "cadence",
                    "warning",
                    f"checkpoint interval {human(ck.interval.total_seconds())} is longer than the Young/Daly "
                    f"optimum {human(optimum)} for mtbf {human(ck.mtbf.total_seconds())}",
                    detail="Each preemption then throws away more work than the checkpoints save.",
                    fix=f"set checkpoint.interval: auto (or {max(1, int(optimum // 60))}m)",
                    key="checkpoint.interval",
                )
            )
    flush = ck.write_time.total_seconds() if ck.write_time else None
    basis = "write_time"
    if flush is None and ck.size_gb is not None:
        flush, basis = ck.size_gb / FLUSH_GB_PER_S, f"{ck.size_gb:g} GB at ~{FLUSH_GB_PER_S:g} GB/s"
    if flush is not None and flush > grace:
        out.append(
            ctx.finding(
                "spot-grace",
                "info",
                f"a checkpoint takes ~{human(flush)} ({basis}); the spot grace before SIGKILL is ~{grace:g} s",
                detail="A final save on SIGTERM cannot finish; only the timed checkpoints protect the work.",
                fix="keep the timer cadence; use SIGTERM only to flush a small marker",
                key="checkpoint.write_time" if basis == "write_time" else "checkpoint.size_gb",
            )
        )
    return out


def _budget(ctx: JobContext, running: float, lines: dict[str, MeterLine] | None = None) -> list[Finding]:
    spec, b = ctx.spec, ctx.spec.budget
    if spec.state == "absent":
        return []
    out: list[Finding] = []
    if b.max_hourly_usd is not None and running > b.max_hourly_usd:
        out.append(
            ctx.finding(
                "budget",
                "error",
                f"running rate {usd(running)}/h exceeds budget.max_hourly_usd {usd(b.max_hourly_usd)}/h",
                fix="pick a cheaper GPU, fewer GPUs, spot, or raise the budget",
                key="budget.max_hourly_usd",
            )
        )
    runtime = spec.run.max_runtime if spec.run else None
    if b.max_total_usd is not None and runtime is not None:
        projected = running * runtime.total_seconds() / 3600
        if lines is not None:  # billed as the platform bills: Paperspace charges every started hour in full
            projected = projected_charge(lines, runtime.total_seconds(), ctx.profile)
        if projected > b.max_total_usd:
            out.append(
                ctx.finding(
                    "budget",
                    "warning",
                    f"{runtime.total_seconds() / 3600:g}h at {usd(running)}/h projects {usd(projected)}, over "
                    f"budget.max_total_usd {usd(b.max_total_usd)}",
                    fix="shorten run.max_runtime, choose a cheaper GPU, or raise the budget",
                    key="budget.max_total_usd",
                )
            )
    elif b.max_total_usd is not None:
        out.append(
            ctx.finding(
                "budget",
                "info",
                "budget.max_total_usd is set but run.max_runtime is not, so no projection can be checked",
                fix="set run.max_runtime",
                key="budget.max_total_usd",
            )
        )
    if ctx.desired_gpu is None:
        out.append(
            ctx.finding(
                "gpu-price",
                "error",
                f"no price known for {', '.join(spec.machine.gpu)} on {spec.platform}"
                + (" as spot" if ctx.spot else ""),
                fix="use a GPU alias from the platform profile",
                key="machine.gpu",
            )
        )
    elif (
        spec.machine.max_price_per_hour is not None
        and ctx.desired_gpu.usd_per_hour > spec.machine.max_price_per_hour
    ):
        out.append(
            ctx.finding(
                "max-price",
                "error",
                f"every GPU candidate costs more than max_price_per_hour {usd(spec.machine.max_price_per_hour)}/h "
                f"(cheapest listed first: {ctx.desired_gpu.label} at {usd(ctx.desired_gpu.usd_per_hour)}/h)",
                fix="add a cheaper candidate or raise machine.max_price_per_hour",
                key="machine.max_price_per_hour",
            )
        )
    return out


def _secrets(ctx: JobContext, launch_planned: bool) -> list[Finding]:
    spec = ctx.spec
    if spec.run is None or spec.state == "absent":
        return []
    missing = [name for name in spec.run.secrets if not ctx.env.get(name)]
    if not missing:
        return []
    return [
        ctx.finding(
            "secrets",
            "error" if launch_planned else "warning",
            f"secret{'s' if len(missing) > 1 else ''} not set in this environment: {', '.join(missing)}",
            detail="Secrets are passed to the run over SSH from local environment variables at launch.",
            fix=f"export {missing[0]}=... before apply" + (" (and the others)" if len(missing) > 1 else ""),
            key="run.secrets",
        )
    ]
