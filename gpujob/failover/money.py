"""One job, two platforms' meters: `gpujob cost` and `gpujob status` of a job with fallback entries
count what it holds on every platform it may run on, not only where it runs now."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any


def elsewhere(loaded: Sequence[Any]) -> list[Any]:
    """Each job with fallback entries as it would be on each other platform of its chain (one per
    platform), and on each platform its failover record names that the job file no longer lists:
    what cost reads for the resources it left there."""
    from gpujob.failover.leftover import stray_spec
    from gpujob.project.placement import placed_spec

    out = []
    for ls in loaded:
        declared = getattr(ls, "declared", None) or ls.spec
        seen = {ls.spec.platform}
        for entry in [-1, *range(len(declared.fallback))] if declared.fallback else []:
            spec = placed_spec(declared, entry)
            if spec.platform in seen:
                continue
            seen.add(spec.platform)
            out.append(dataclasses.replace(ls, spec=spec, entry=entry, declared=declared))
        for platform in getattr(ls, "strays", ()):
            if platform not in seen:
                seen.add(platform)
                spec = stray_spec(declared, platform, [])
                out.append(dataclasses.replace(ls, spec=spec, entry=-1, declared=declared))
    return out


async def read_costs_anywhere(
    loaded: Sequence[Any], providers: Mapping[str, Any], *, record: bool = True
) -> Any:
    """read_costs of the jobs where they run, plus what they hold on their other platforms (a job
    appears once per platform it has anything on); the totals sum both. Without `record` nothing is
    written (a plan's read: gpujob.cost.seen is kept by cost, status, watch and apply)."""
    from gpujob.plan.costs import read_costs

    report = await read_costs(loaded, providers, record=record)
    others = [o for o in elsewhere(loaded) if o.spec.platform in providers]  # (a stray without its key)
    if not others:
        return report
    # Not recorded as seen: the seen record is the job's where it runs (a second platform's listing
    # would read as its resources having gone).
    extra = await read_costs(others, providers, record=False)
    kept = [j for j in extra.jobs if j.resources]
    # Each job's rows together, the platform it runs on first (where its goodput is shown).
    order = {job: i for i, job in enumerate(dict.fromkeys(j.job for j in report.jobs))}
    jobs = sorted(report.jobs + kept, key=lambda j: order.get(j.job, len(order)))
    return report.model_copy(
        update={
            "jobs": jobs,
            "spent_usd": round(sum(j.spent_usd for j in jobs), 6),
            "burn_usd_per_hour": round(sum(j.burn_usd_per_hour for j in jobs), 9),
            "read_errors": report.read_errors + [e for e in extra.read_errors if e not in report.read_errors],
        }
    )
