"""`machine.when_unavailable: wait` in the plan: what a create does when no candidate has capacity, and
what the wait costs. On RunPod the create waits in RunPod's queue (Deploy When Available: a queued pod
is not a pod and bills nothing until it is placed; docs.runpod.io/api-reference-v2/pods/get-a-queued-pod,
read 2026-12-07); elsewhere, or for a `spot: true` create (the queue is v2 and v2 has no spot), gpujob's
own retries go on for as long. Past `wait_up_to` every candidate is tried once more, then the next
platform of `fallback:` or the job fails."""

from __future__ import annotations

from gpujob.cost.rates import quote_available
from gpujob.jobfile.rules import format_duration
from gpujob.plan.context import JobContext
from gpujob.plan.model import Finding

SOURCE = "docs.runpod.io/api-reference-v2/pods/get-a-queued-pod (Deploy When Available; read 2026-12-07)"


def queued(ctx: JobContext) -> bool:
    """Whether a create of this job that finds no capacity waits in RunPod's queue."""
    m = ctx.spec.machine
    return m.when_unavailable == "wait" and ctx.spec.platform == "runpod" and m.spot is not True


def _then(ctx: JobContext) -> str:
    return "then the next platform in fallback: is tried" if ctx.spec.fallback else "then the create fails"


def create_reasons(ctx: JobContext) -> list[str]:
    """The create's lines: how it waits, and that the wait bills $0.00/h."""
    m = ctx.spec.machine
    if m.when_unavailable != "wait":
        return []
    up_to = format_duration(m.wait_for)
    how = "it waits in RunPod's queue (Deploy When Available)" if queued(ctx) else "gpujob keeps retrying it"
    return [
        f"when_unavailable: wait: if no candidate has capacity, {how} for up to {up_to}; the wait bills "
        f"$0.00/h (nothing is placed, nothing runs) and the pod's rate starts once it is placed; after "
        f"{up_to} every candidate is tried once more, {_then(ctx)}"
    ]


def finding(ctx: JobContext, create_planned: bool) -> list[Finding]:
    """`capacity-wait` (info) on a planned create of a waiting job: no stock now means it will queue."""
    m = ctx.spec.machine
    if m.when_unavailable != "wait" or not create_planned:
        return []
    stock = [
        quote_available(ctx.profile, ctx.live.quotes, g, ctx.spot, cloud=m.cloud, count=m.gpu_count)
        for g in m.gpu
    ]
    none_now = bool(stock) and all(s is False for s in stock)
    up_to = format_duration(m.wait_for)
    where = "in RunPod's queue" if queued(ctx) else "in gpujob's retries"
    summary = (
        f"no candidate reports stock now: the create will wait {where} for up to {up_to}, billing $0.00/h until placed"
        if none_now
        else f"if no candidate has capacity at apply, the create waits {where} for up to {up_to}, billing $0.00/h until placed"
    )
    detail = (
        f"A queued pod is not a pod: nothing bills while it waits (source: {SOURCE})."
        if queued(ctx)
        else "RunPod's queue places on-demand pods only (REST v2 has no spot), so a spot: true create is "
        "retried by gpujob instead; nothing bills between the tries."
        if ctx.spec.platform == "runpod"
        else "Paperspace has no create queue: gpujob retries the create with backoff; nothing bills between the tries."
    )
    return [
        ctx.finding(
            "capacity-wait",
            "info",
            summary,
            detail=f"{detail} After {up_to}, every candidate is tried once more, {_then(ctx)}.",
            key="machine.when_unavailable",
        )
    ]
