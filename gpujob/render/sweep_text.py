"""A sweep in the text plan: one line for the whole sweep before its queues (cells, machines, the
estimated total, the rate while its machines run), and each finding once: a later queue of the same
sweep names the queue that already showed it instead of printing it again."""

from __future__ import annotations

from gpujob.cost.rates import usd
from gpujob.plan.finite import sweep_totals
from gpujob.plan.model import Finding, JobPlan, Plan


def sweep_lines(plan: Plan) -> list[str]:
    """`sweep abl: 6 cells on 2 machines, est. $2.31 in all, $1.38/h while its machines run`, per sweep
    (what the sweep line of its first queue says of the whole sweep, and the rate of all its queues)."""
    return [f"{t.whole}, {usd(t.usd_per_hour)}/h while its machines run" for t in sweep_totals(plan.jobs)]


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
