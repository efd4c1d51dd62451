"""What a machine's GPU may bill at apply time, read off the plan's one running rate (gpujob.plan.rate).

The plan prices a create on its first GPU candidate; apply's choosers may take another: the next
candidate when the first has no capacity (gpujob.apply.capacity), or, for `machine.spot: prefer`,
an on-demand pod when RunPod refuses spot (gpujob.providers.runpod). Either swaps the GPU part of the
running rate, so each is held to a **ceiling**: budget.max_hourly_usd less everything else the job
file's plan leaves billing (its other queues, its storage and IPs, what a move keeps), the slack
shared among the job file's machines being created. A chooser never takes an offer over it, so what
apply creates stays within the cap the plan was judged on.

The plan says beforehand when `spot: prefer`'s on-demand fallback is over the ceiling (apply then
takes spot or nothing), as a `budget` info finding at machine.spot.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gpujob.cost.rates import usd
from gpujob.plan.model import ActionKind, Finding, JobPlan

_STARTS = (ActionKind.CREATE, ActionKind.START, ActionKind.REPLACE)
_SPOT_LABEL = re.compile(r"^GPU (\d+)× (.+) \((\w+), spot\)$")


def gpu_part(jp: JobPlan) -> float:
    """The GPU meter(s) the job's plan starts: the part of its running rate a chooser at apply may swap."""
    return sum(
        m.usd_per_hour
        for a in jp.actions
        if a.billing is not None and a.kind in _STARTS and a.resource_kind in ("pod", "machine")
        for m in a.billing.starts
        if m.what.startswith("GPU ")
    )


def ceilings(group: Sequence[JobPlan], cap: float | None) -> dict[str, float]:
    """job -> the most its GPU may bill per hour for the group's running rate to stay within `cap`
    (only jobs whose plan starts a GPU; {} without a cap)."""
    from gpujob.plan.rate import running_rate

    if cap is None:
        return {}
    starting = {jp.job: g for jp in group if (g := gpu_part(jp)) > 0}
    if not starting:
        return {}
    slack = max(0.0, cap - running_rate(group).usd_per_hour)
    return {job: round(g + slack / len(starting), 6) for job, g in starting.items()}


def plan_ceilings(loaded: Sequence[Any], jobs: Sequence[JobPlan]) -> dict[str, float]:
    """Every job's ceiling in a plan (or the part of one an apply carries), each job file judged on its
    own cap: a sweep's queues together."""
    by_name = {jp.job: jp for jp in jobs}
    groups: dict[str, tuple[Any, list[JobPlan]]] = {}
    for ls in loaded:
        jp = by_name.get(ls.spec.name)
        if jp is not None:
            groups.setdefault(str(ls.path), (ls, []))[1].append(jp)
    out: dict[str, float] = {}
    for first, group in groups.values():
        out |= ceilings(group, first.spec.budget.max_hourly_usd)
    return out


def prefer_findings(loaded: Sequence[Any], group: Sequence[JobPlan], cap: float | None) -> list[Finding]:
    """For each `spot: prefer` job planned as spot: when its on-demand fallback is over its ceiling, an
    info finding saying apply takes spot or nothing, with the figures."""
    from gpujob.cost.rates import gpu_rate
    from gpujob.plan.rate import CAP_KEY
    from gpujob.profile import load_profile

    top = ceilings(group, cap)
    out: list[Finding] = []
    for ls, jp in zip(loaded, group, strict=True):
        if ls.spec.machine.spot != "prefer" or jp.job not in top:
            continue
        spots = [
            m
            for a in jp.actions
            if a.billing is not None and a.kind in _STARTS
            for m in a.billing.starts
            if _SPOT_LABEL.match(m.what)
        ]
        found = _SPOT_LABEL.match(spots[0].what) if spots else None
        if found is None:
            continue
        count, alias, cloud = int(found.group(1)), found.group(2), found.group(3)
        od = gpu_rate(load_profile(ls.spec.platform), [], alias, count=count, cloud=cloud, spot=False)
        if od is None or od.usd_per_hour <= top[jp.job] + 1e-9:
            continue
        out.append(
            Finding(
                code="budget",
                severity="info",
                summary=f"machine.spot: prefer: should RunPod refuse spot, apply creates no on-demand pod: "
                f"{od.label} at {usd(od.usd_per_hour)}/h would leave more billing than {CAP_KEY} "
                f"{usd(cap or 0)}/h allows its GPU ({usd(top[jp.job])}/h): it takes spot or nothing",
                fix=f"raise {CAP_KEY}, or list a cheaper GPU, or set machine.spot: true",
                job=jp.job,
                source=ls.source("machine.spot"),
            )
        )
    return out


def with_prefer(loaded: Sequence[Any], jobs: list[JobPlan]) -> list[JobPlan]:
    """After the cap check (gpujob.plan.rate.with_caps): each job file under its cap gets prefer_findings."""
    from gpujob.plan.rate import file_groups, over_cap, running_rate

    out = list(jobs)
    for first, idx in file_groups(loaded, jobs):
        cap = first.spec.budget.max_hourly_usd
        group = [out[i] for i in idx]
        if cap is None or first.spec.state == "absent" or over_cap(running_rate(group), cap):
            continue
        for f in prefer_findings([loaded[i] for i in idx], group, cap):
            i = next(i for i in idx if out[i].job == f.job)
            out[i] = out[i].model_copy(update={"findings": [*out[i].findings, f]})
    return out
