"""Spot findings: RunPod's GraphQL spot API and its retirement, what `spot: prefer` chose, and whether a
checkpoint fits the spot grace before SIGKILL (Young/Daly interval, flush time).
"""

from __future__ import annotations

from typing import Any

from gpujob.cost.rates import usd
from gpujob.plan import capability
from gpujob.plan.cadence import human, young_daly
from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind, Finding
from gpujob.providers.runpod.client import SPOT_WITHDRAWN


def spot_findings(ctx: JobContext) -> list[Finding]:
    spec = ctx.spec
    if spec.machine.spot is False or spec.state == "absent":
        return []
    out = _spot_api(ctx)
    # The checkpoint advice (and gpujob rehearse's last drill) is for a pod that is, or stays,
    # interruptible: not one being replaced on-demand.
    if ctx.spot or (ctx.machine is not None and ctx.machine.spot and ctx.machine.status != "stopped"):
        out += _spot_checkpoints(ctx)
        for cap in capability.of(ctx):
            out += cap.spot_findings(ctx)  # e.g. the last drill of gpujob rehearse (gpujob.rehearse.record)
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
    if gone == SPOT_WITHDRAWN:
        from gpujob.plan.spot_withdrawn import withdrawn_findings

        return withdrawn_findings(ctx, needs)
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


# Assumed sustained write speed of a checkpoint to local NVMe when only its size is known.
FLUSH_GB_PER_S = 2.0
