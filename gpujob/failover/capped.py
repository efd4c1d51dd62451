"""The failover chooser under budget.max_hourly_usd: a move is proposed only where the whole moved job
fits the cap — the plan there (its machine, storage and IP, not only the GPU offer) plus what stays
billing where it was — judged by the same running rate (gpujob.plan.rate) the plan's cap check reads.
So a plan never promises a move apply would refuse, and watch never retries one every interval."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gpujob.failover.choice import Choice


def within_cap(
    ls: Any,
    choice: Choice,
    live: Any,
    *,
    now: datetime,
    env: Mapping[str, str],
    jp: Any = None,
    record: Any = None,
) -> Choice:
    """`choice` when its move fits the cap (or there is no cap, or no move); else the first other
    place that can serve within it; else no move, `held` saying what each would bill. `jp`: the job's
    plan where it runs now (planned here from `live` when not given)."""
    declared = getattr(ls, "declared", None) or ls.spec
    cap = declared.budget.max_hourly_usd
    if choice.move_to is None or cap is None:
        return choice
    from gpujob.cost.rates import usd
    from gpujob.failover.planning import moved_plan
    from gpujob.plan.rate import CAP_KEY, over_cap, running_rate

    if jp is None:
        from gpujob.plan.planner import plan_one

        jp = plan_one(ls, live, now=now, env=env)
    first = choice.move_to
    others = [p for p in choice.places if p.serves and p.entry not in (choice.here.entry, first.entry)]
    refused = []
    for to in [first, *([] if choice.failback else others)]:
        option = dataclasses.replace(choice, move_to=to)
        rate = running_rate([moved_plan(jp, ls, option, live, record, now=now, env=env)])
        if not over_cap(rate, cap):
            return option
        refused.append(f"moved to {to.name} it would bill {usd(rate.usd_per_hour)}/h ({rate.parts_text()})")
    held = "; ".join(refused) + f", over {CAP_KEY} {usd(cap)}/h"
    return dataclasses.replace(choice, move_to=None, held=held)
