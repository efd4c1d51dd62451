"""How many queues a sweep runs under budget.max_hourly_usd: the chooser of the queue count.

A sweep file with `sweep.min_machines` lets gpujob run fewer queues than `sweep.machines`: when the
queues' running rate (gpujob.plan.rate, the same sum the cap check judges) is over the cap, the file is
expanded again with the most queues from min_machines up whose rate fits, and the plan says so. Without
min_machines the count is the file's, and a sum over the cap is the plan's error. Called wherever a
plan is made from a live read (plan, apply, watch), after the cells in transit are settled, so apply
carries out the queues the plan showed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from gpujob.sweep.expand import first_of_group


def _rate(group: Sequence[Any], live: Any, now: datetime, env: Mapping[str, str]) -> Any:
    from gpujob.plan.planner import plan_one
    from gpujob.plan.rate import running_rate

    return running_rate(plan_one(ls, live, now=now, env=env) for ls in group)


def _expanded(origin: Any, machines: int, project: str | None) -> list[Any]:
    from gpujob.sweep.expand import expand_loaded

    sw = origin.spec.sweep.model_copy(update={"machines": machines})
    fewer = replace(origin, spec=origin.spec.model_copy(update={"sweep": sw}))
    return [replace(one, project=project) for one in expand_loaded(fewer)]


def fit_queues(
    loaded: Sequence[Any], live: Any, *, now: datetime, env: Mapping[str, str] | None = None
) -> list[Any]:
    """`loaded` with each sweep whose queues' running rate is over its budget.max_hourly_usd expanded
    again into the most queues that fit, when its sweep.min_machines allows fewer; the others as they are."""
    from gpujob.cost.rates import usd
    from gpujob.plan.rate import CAP_KEY, over_cap

    env = env or {}
    out: list[Any] = []
    done: set[tuple[str, str]] = set()
    for ls in loaded:
        q = getattr(ls, "sweep", None)
        if q is None or q.origin is None:
            out.append(ls)
            continue
        group = first_of_group(ls, loaded, done)
        if group is None:
            continue
        spec = q.origin.spec
        sw, cap = spec.sweep, spec.budget.max_hourly_usd
        if sw.min_machines is None or cap is None or spec.state != "running":
            out += group
            continue
        rate = _rate(group, live, now, env)
        if not over_cap(rate, cap):
            out += group
            continue
        chosen = group
        for k in range(min(sw.machines, len(group)) - 1, sw.min_machines - 1, -1):
            fewer = _expanded(q.origin, k, ls.project)
            fits = _rate(fewer, live, now, env)
            if not over_cap(fits, cap):
                why = (
                    f"sweep {q.sweep_job} runs {len(fewer)} queue(s), not {len(group)}: {len(group)} would bill "
                    f"{usd(rate.usd_per_hour)}/h, over {CAP_KEY} {usd(cap)}/h; {len(fewer)} bill "
                    f"{usd(fits.usd_per_hour)}/h (sweep.min_machines: {sw.min_machines} allows fewer)"
                )
                chosen = [replace(one, sweep=replace(one.sweep, fitted=why)) for one in fewer]
                break
        out += chosen
    return out
