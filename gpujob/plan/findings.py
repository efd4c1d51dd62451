"""Platform traps a spec or an action walks into, as Findings with a gotcha id, severity and fix.

Spec findings look at the job file (and the live state it meets); action findings are attached to
the action that triggers them. Error findings block apply. Secrets are checked by name only: their
values are never read beyond "is it set".
"""

from __future__ import annotations

from gpujob.cost.model import MeterLine
from gpujob.cost.rates import Footprint, meters, monthly_total, usd
from gpujob.cost.spend import projected_charge
from gpujob.plan import capability, migration, waiting
from gpujob.plan.context import JobContext
from gpujob.plan.image_findings import image_findings
from gpujob.plan.machine_findings import auto_shutdown_findings, static_ip_findings
from gpujob.plan.model import Finding
from gpujob.plan.spot_findings import spot_findings
from gpujob.plan.storage_findings import (
    cache_findings,
    checkpoint_tier_findings,
    network_volume_findings,
    parking_findings,
)
from gpujob.plan.template_findings import template_findings

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
    out += checkpoint_tier_findings(ctx)
    out += parking_findings(ctx)
    out += cache_findings(ctx)
    if not any(f.code == "RP11" for f in out):
        for cap in capability.of(ctx):
            out += cap.disk_findings(ctx)  # e.g. RP11 from run.setup: gpujob.disks.findings
    out += auto_shutdown_findings(ctx)
    out += static_ip_findings(ctx)
    out += network_volume_findings(ctx)
    out += _image(ctx)
    out += template_findings(ctx)  # resolves machine.template first: PS11 judges what it resolved to
    out += image_findings(ctx)  # RP9, cuda-arch, PS11: gpujob.plan.image_findings
    out += spot_findings(ctx)
    out += migration.finding(ctx)
    creates = any(a.kind.value == "create" and a.resource_kind in ("pod", "machine") for a in ctx.actions)
    out += waiting.finding(ctx, creates)
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
