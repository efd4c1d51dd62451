"""A sweep in the text plan: one line for the whole sweep before its queues (cells, machines, the
estimated total, the rate while its machines run), and each finding once: a later queue of the same
sweep names the queue that already showed it instead of printing it again."""

from __future__ import annotations

from gpujob.cost.rates import usd
from gpujob.plan.model import Finding, JobPlan, Plan
from gpujob.sweep.plan import SweepPlan


def sweep_lines(plan: Plan) -> list[str]:
    """`sweep abl: 6 cells on 2 machines, est. $2.31 in all, $1.38/h while its machines run`, per sweep
    (what the sweep line of its first queue says of the whole sweep, and the rate of all its queues)."""
    rates: dict[str, float] = {}
    first: dict[str, SweepPlan] = {}
    for job in plan.jobs:
        if job.sweep is not None:
            first.setdefault(job.sweep.sweep, job.sweep)
            rates[job.sweep.sweep] = rates.get(job.sweep.sweep, 0.0) + job.running_usd_per_hour
    out = []
    for name, sw in first.items():
        whole, _ = split_summary(sw)
        out.append(f"{whole}, {usd(rates[name])}/h while its machines run")
    return out


def split_summary(sw: SweepPlan) -> tuple[str, str]:
    """(the sweep-wide part of a queue's sweep line, the queue's own part): the text plan prints the first
    once above the queues and the second in each queue's block."""
    marker = f"; queue q{sw.queue}: "
    whole, _, mine = sw.summary.partition(marker)
    return whole, f"queue q{sw.queue}: {mine}" if mine else sw.summary


def _key(f: Finding) -> tuple[object, ...]:
    src = f.source
    return (f.code, f.severity, f.summary, None if src is None else (src.file, src.line, src.column))


class SeenFindings:
    """Which queue of each sweep first showed a finding (findings of jobs that are no queue: never folded)."""

    def __init__(self) -> None:
        self._first: dict[tuple[object, ...], str] = {}

    def split(self, job: JobPlan) -> tuple[list[Finding], dict[str, int]]:
        """(the findings to print for `job`, {earlier queue: how many of its findings apply here too})."""
        if job.sweep is None:
            return list(job.findings), {}
        shown: list[Finding] = []
        same: dict[str, int] = {}
        for f in job.findings:
            key = (job.sweep.sweep, *_key(f))
            seen = self._first.setdefault(key, job.job)
            if seen == job.job:
                shown.append(f)
            else:
                same[seen] = same.get(seen, 0) + 1
        return shown, same
