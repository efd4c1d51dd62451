"""One running rate per plan: what the plan leaves billing per hour, summed over every job, queue and
platform it covers, and the one check of budget.max_hourly_usd against it.

A job's part is its JobPlan.running_usd_per_hour: every machine it starts or keeps running, its
storage and IPs, and, for a job that moves to a fallback platform, what stays billing where it was
(gpujob.failover.planning prices the move as the plan there plus what it keeps). A job file's cap is
judged on the sum of the jobs it expands into (a sweep's queues, a moving job's two platforms), never
on one of them; the choosers (gpujob.failover.planning's move, gpujob.sweep.fit's queue count) ask
`over_cap` before they propose anything, so a plan they make passes the check apply makes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpujob.cost.rates import usd
from gpujob.plan.model import Finding, JobPlan

CAP_KEY = "budget.max_hourly_usd"
SHOWN_PARTS = 3


@dataclass(frozen=True)
class Part:
    job: str
    platform: str
    what: str  # "runs" (its machine, storage and IP where it runs) or "keeps" (what a move leaves)
    usd_per_hour: float

    def text(self) -> str:
        return f"{self.job} {self.what} on {self.platform} {usd(self.usd_per_hour)}/h"


@dataclass(frozen=True)
class Rate:
    usd_per_hour: float
    parts: tuple[Part, ...]

    def largest(self, n: int = SHOWN_PARTS) -> list[Part]:
        return sorted(self.parts, key=lambda p: -p.usd_per_hour)[:n]

    def parts_text(self, n: int = SHOWN_PARTS) -> str:
        shown = self.largest(n)
        more = len(self.parts) - len(shown)
        return ", ".join(p.text() for p in shown) + (f" and {more} more" if more > 0 else "")


def job_parts(jp: JobPlan) -> list[Part]:
    """What one planned job leaves billing per hour: where it runs (or moves to), plus what a move keeps
    billing where it was (its billing's keeps)."""
    if jp.desired_state == "absent":
        return []
    from gpujob.plan.model import ActionKind

    moves = [a for a in jp.actions if a.kind is ActionKind.MOVE]
    kept = sum(m.usd_per_hour for a in moves for m in a.billing.keeps)
    there = moves[0].platform if moves else jp.platform
    out = [Part(jp.job, there, "runs", round(jp.running_usd_per_hour - kept, 9))]
    if kept > 0:  # what a move leaves billing where the job was (jp.platform: where it runs now)
        out.append(Part(jp.job, jp.platform, "keeps", round(kept, 9)))
    return out


def running_rate(jobs: Iterable[JobPlan]) -> Rate:
    """The plan's running rate: the sum of every job's parts, and the parts."""
    parts = tuple(p for jp in jobs for p in job_parts(jp))
    return Rate(round(sum(p.usd_per_hour for p in parts), 9), parts)


def over_cap(rate: Rate, cap: float | None) -> bool:
    return cap is not None and rate.usd_per_hour > cap + 1e-9


def cap_summary(rate: Rate, cap: float) -> str:
    """The budget error's one line: the cap, the sum and (when there are several) its largest parts."""
    text = f"running rate {usd(rate.usd_per_hour)}/h exceeds {CAP_KEY} {usd(cap)}/h"
    if len(rate.parts) > 1:
        text += f" (the sum of {len(rate.parts)} parts; largest: {rate.parts_text()})"
    return text


def file_groups(loaded: Sequence[Any], jobs: Sequence[JobPlan]) -> list[tuple[Any, list[int]]]:
    """(a job file's first LoadedSpec, the indexes of its jobs): a sweep's queues share their file."""
    groups: dict[str, tuple[Any, list[int]]] = {}
    for i, ls in enumerate(loaded):
        key = str(ls.path)
        groups.setdefault(key, (ls, []))[1].append(i)
    return list(groups.values())


def _is_cap_error(f: Finding) -> bool:
    return f.code == "budget" and f.severity == "error" and (f.source is None or f.source.key == CAP_KEY)


def with_caps(loaded: Sequence[Any], jobs: list[JobPlan]) -> list[JobPlan]:
    """Each job file's budget.max_hourly_usd judged on the running rate of all its jobs: an error on its
    first job naming the cap, the sum and its largest parts (in place of any one job's own)."""
    out = list(jobs)
    for first, idx in file_groups(loaded, jobs):
        group = [out[i] for i in idx]
        cap = first.spec.budget.max_hourly_usd
        if first.spec.state == "absent":
            continue
        rate = running_rate(group)
        at = next((k for k, f in enumerate(group[0].findings) if _is_cap_error(f)), None)
        kept = [[f for f in jp.findings if not _is_cap_error(f)] for jp in group]
        if cap is not None and over_cap(rate, cap):
            sweep = getattr(first, "sweep", None) is not None
            finding = Finding(
                code="budget",
                severity="error",
                summary=cap_summary(rate, cap),
                fix="pick a cheaper GPU, fewer GPUs, spot, "
                + ("fewer sweep.machines (or set sweep.min_machines), " if sweep else "")
                + "or raise the budget",
                job=group[0].job,
                source=first.source(CAP_KEY),
            )
            from gpujob.plan.findings import by_severity

            pos = at if at is not None else len(kept[0])
            kept[0] = by_severity([*kept[0][:pos], finding, *kept[0][pos:]])
        fitted = getattr(getattr(first, "sweep", None), "fitted", "")
        if fitted:  # gpujob.sweep.fit ran fewer queues than sweep.machines to stay under the cap
            kept[0] = [
                *kept[0],
                Finding(code="budget", severity="info", summary=fitted, job=group[0].job,
                        source=first.source("sweep.min_machines")),
            ]  # fmt: skip
        for i, jp, fs in zip(idx, group, kept, strict=True):
            if fs != jp.findings:
                out[i] = jp.model_copy(update={"findings": fs})
    return out
