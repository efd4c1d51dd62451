"""What a finite run costs in all, for the plans' headlines: a sweep ends when its cells are done, so
its estimated total is the figure a reviewer weighs; a rate "per month if left running" is only true of
what keeps running after the run (a job with no end, or a queue whose teardown.on_finish is keep).

Computed here from the plan's values (gpujob.plan.sweep_model's estimates, each queue's running rate);
the renderers (gpujob.render) only word it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpujob.plan.model import JobPlan, RunEstimate
from gpujob.plan.rate import running_rate
from gpujob.plan.sweep_model import SweepPlan


@dataclass(frozen=True)
class SweepTotal:
    sweep: str
    whole: str  # the sweep-wide line every queue carries (cells, machines, est. total, budget)
    scope: str  # `sweep abl: 6 cells on 2 machines`
    notes: str  # what follows the estimate (against the budget, the cells not done yet)
    total_usd: float  # the estimate of the whole sweep (its first queue's, as the budget check reads it)
    usd_per_hour: float  # every queue's running rate: what the sweep bills while its machines run
    on_finish: str  # the queues' teardown.on_finish
    kept_usd_per_hour: float  # what keeps billing per hour once the cells are done (on_finish: keep)
    parked_usd_per_month: float  # what its queues bill per month while stopped (on_finish: stop)
    running: bool  # some queue of it is to run (not a sweep being destroyed)


def sweep_totals(jobs: Sequence[JobPlan]) -> list[SweepTotal]:
    """One per sweep in the plan, in the order its first queue appears."""
    first: dict[str, SweepPlan] = {}
    queues: dict[str, list[JobPlan]] = {}
    for job in jobs:
        if job.sweep is not None:
            first.setdefault(job.sweep.sweep, job.sweep)
            queues.setdefault(job.sweep.sweep, []).append(job)
    out = []
    for name, sw in first.items():
        mine = queues[name]
        rate = running_rate(mine).usd_per_hour
        kept = running_rate(
            j for j in mine if j.sweep is not None and j.sweep.on_finish == "keep"
        ).usd_per_hour
        on = any(j.desired_state == "running" for j in mine)
        parked = round(sum(j.parked_usd_per_month for j in mine), 9)
        out.append(SweepTotal(name, sw.whole_summary, sw.scope_summary, sw.estimate_notes, sw.total_usd,
                              rate, sw.on_finish, kept, parked, on))  # fmt: skip
    return out


def run_estimate(spec: Any, usd_per_hour: float, *, queue: Any = None) -> RunEstimate | None:
    """A job (no sweep queue: its sweep has its own estimate) to run with run.max_runtime: the most it
    costs by then at its running rate."""
    runtime = spec.run.max_runtime if spec.run is not None else None
    if runtime is None or queue is not None:
        return None
    hours = runtime.total_seconds() / 3600
    return RunEstimate(usd=round(usd_per_hour * hours, 6), hours=hours, usd_per_hour=usd_per_hour,
                       on_finish=spec.teardown.on_finish)  # fmt: skip


def endless(job: JobPlan) -> bool:
    """A job whose machine runs on after its run: no sweep queue, and no run.max_runtime, or
    teardown.on_finish: keep."""
    if job.desired_state != "running" or job.sweep is not None:
        return False
    return job.run_estimate is None or job.run_estimate.on_finish == "keep"


def finite(jobs: Sequence[JobPlan]) -> bool:
    """The plan runs something that ends: a sweep, or a job with run.max_runtime."""
    return any(s.running for s in sweep_totals(jobs)) or any(
        j.run_estimate is not None and j.desired_state == "running" for j in jobs
    )


def left_running_per_hour(jobs: Sequence[JobPlan]) -> float:
    """What the plan leaves billing per hour after every finite run has ended: each endless job at its
    running rate, and each queue whose machine is kept when its cells are done."""
    endless_jobs = [j for j in jobs if endless(j)]
    kept = sum(t.kept_usd_per_hour for t in sweep_totals(jobs))
    return round(running_rate(endless_jobs).usd_per_hour + kept, 9)
