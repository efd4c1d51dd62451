"""Spot withdrawn while RunPod's GraphQL still answers: the third state beside `limited` and `gone`.

RunPod's docs dropped every spot and interruptible reference on 2026-05-06 (runpod/docs commit 8e5aebdb,
"Per user request…"; /work/shared/api/REFERENCE.md §1.4), months before GraphQL's 410 (early 2027). A
GraphQL that answers but offers no spot (no GPU type has an interruptible price; a rent or bid resume is
refused) is read as spot withdrawn (gpujob.providers.runpod.client.SPOT_WITHDRAWN). What RunPod's API
answers then is not documented; the simplest reading is modelled and said so.

  * `spot: prefer` plans on-demand: the GPU is the first candidate whose on-demand price is within
    machine.max_price_per_hour (gpujob.plan.context.choose_gpu); the finding says why, with the source.
  * `spot: true` is an error wherever a spot create or resume is needed, naming the on-demand
    alternatives of the job's GPUs and their prices.
"""

from __future__ import annotations

from typing import Any

from gpujob.cost.rates import gpu_rate, usd
from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind, Finding
from gpujob.providers.runpod.client import SPOT_WITHDRAWN, SPOT_WITHDRAWN_SOURCE

DETAIL = (
    f"{SPOT_WITHDRAWN}. Source: {SPOT_WITHDRAWN_SOURCE} (months before GraphQL's 410 in early 2027). "
    "What such an API answers is not documented; gpujob reads it as: no interruptible price for any GPU "
    "type, and podRentInterruptable / podBidResume refused. On-demand pods are created through REST v2."
)


def alternatives(ctx: JobContext) -> list[tuple[str, float, str]]:
    """(GPU alias, on-demand USD/h for the job's count, source) of each GPU the job names, within
    max_price_per_hour when it is set."""
    m = ctx.spec.machine
    out = []
    for alias in m.gpu:
        r = gpu_rate(ctx.profile, ctx.live.quotes, alias, count=m.gpu_count, cloud=m.cloud, spot=False)
        if r is None or (m.max_price_per_hour is not None and r.usd_per_hour > m.max_price_per_hour):
            continue
        out.append((alias, r.usd_per_hour, r.source))
    return out


def _alternatives_text(ctx: JobContext) -> str:
    found = alternatives(ctx)
    cap = ctx.spec.machine.max_price_per_hour
    within = f" within max_price_per_hour {usd(cap)}/h" if cap is not None else ""
    if not found:
        return f"no GPU of machine.gpu is offered on-demand{within}: raise max_price_per_hour or add a GPU"
    n = ctx.spec.machine.gpu_count
    listed = ", ".join(f"{a} ×{n} {usd(p)}/h" for a, p, _ in found)
    return f"on-demand{within}: {listed} ({found[0][2]})"


def withdrawn_findings(ctx: JobContext, needs: list[Any]) -> list[Finding]:
    want = ctx.spec.machine.spot
    if want is True:
        if not needs:
            return [
                ctx.finding(
                    "spot-withdrawn",
                    "info",
                    "RunPod offers no spot any more (GraphQL answers, spot is withdrawn): the spot pod runs on, "
                    "but once stopped or preempted it cannot resume as spot",
                    detail=DETAIL,
                    fix="set machine.spot: prefer or false; " + _alternatives_text(ctx),
                    key="machine.spot",
                )
            ]
        verb = "resume" if needs[0].kind is ActionKind.START else "create"
        return [
            ctx.finding(
                "spot-withdrawn",
                "error",
                f"machine.spot: true needs a spot {verb}, but RunPod offers no spot any more (GraphQL answers; "
                f"spot was withdrawn): the alternatives are {_alternatives_text(ctx)}",
                detail=DETAIL,
                fix="set machine.spot: false (on-demand) or prefer (spot if RunPod offers it again)",
                key="machine.spot",
                action_id=needs[0].id,
            )
        ]
    od = ctx.desired_gpu
    m = ctx.spec.machine
    price = ""
    if od is not None and ctx.desired_gpu_alias is not None:
        cap = f", within max_price_per_hour {usd(m.max_price_per_hour)}/h" if m.max_price_per_hour else ""
        price = (
            f": {ctx.desired_gpu_alias} ×{m.gpu_count} on-demand {usd(od.usd_per_hour)}/h{cap} ({od.source})"
        )
    what = "creates and resumes are on-demand" if not needs else f"the {needs[0].kind.value} is on-demand"
    return [
        ctx.finding(
            "spot-prefer",
            "info",
            f"machine.spot: prefer: {what}, as RunPod offers no spot any more (GraphQL answers; spot "
            f"withdrawn, {SPOT_WITHDRAWN_SOURCE}){price}",
            detail=DETAIL + " A running spot pod is never replaced for this; a stopped one is.",
            key="machine.spot",
            action_id=needs[0].id if needs else None,
        )
    ]
