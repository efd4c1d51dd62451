"""The project-wide budget: `budget: {max_monthly_usd: N}` in the project file (gpujob.yaml, found as the
state block is, gpujob.state.config), the month's spend of every job in the project's store, and the check
a plan is refused by: the month's spend plus the P50 still to come of every job the plan starts must stay
under it. `gpujob budget` reports the same figures per job, each with where it came from.

A job's month is the larger of two counts: watch's ledger (its money now less its trail's last point
before the month) and the cost engine's (`gpujob cost`: the platforms' billing, else metered time, for
every resource the job has had), less what the ledger had counted before the month. A job never watched
has only the second: it is counted from its first resource, which may be before the month (the figure
then errs high, so the budget refuses early rather than late)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpujob.cost.history import History, read_history

KEY = "budget.max_monthly_usd"


@dataclass(frozen=True)
class Monthly:
    cap: float | None
    source: str  # the project file, or "" when none has a budget block
    month_start: datetime
    spent: dict[str, float] = field(default_factory=dict)  # job -> spent this month
    sources: dict[str, str] = field(default_factory=dict)  # job -> where that figure came from

    @property
    def total(self) -> float:
        return round(sum(self.spent.values()), 6)


@dataclass(frozen=True)
class Billed:
    """The cost engine's figure of one job (gpujob cost), on every platform it has anything on."""

    usd: float
    source: str


def billed_of(report: Any) -> dict[str, Billed]:
    """Each job's figure in a cost report (gpujob.plan.costs.CostReport: one row per platform)."""
    usd: dict[str, float] = {}
    how: dict[str, list[str]] = {}
    for j in report.jobs:
        usd[j.job] = usd.get(j.job, 0.0) + j.spent_usd
        kind = "estimate from metered time" if j.estimate else "billing"
        how.setdefault(j.job, []).append(f"{j.platform} {kind}")
    return {job: Billed(round(v, 6), f"gpujob cost ({', '.join(how[job])})") for job, v in usd.items()}


def month_start(now: datetime) -> datetime:
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def read_cap(start: Path) -> tuple[float | None, str]:
    """budget.max_monthly_usd of the project file above `start`; SpecError at file:line:key when wrong."""
    from gpujob.errors import SpecError
    from gpujob.spec.problem import SpecProblem
    from gpujob.spec.yamlsafe import parse_file
    from gpujob.state.config import project_file

    path = project_file(start)
    if path is None:
        return None, ""
    parsed = parse_file(path, str(path))
    block: Any = (parsed.data or {}).get("budget")
    if block is None:
        return None, ""
    cap = block.get("max_monthly_usd") if isinstance(block, dict) else None
    if not isinstance(block, dict) or set(block) - {"max_monthly_usd"} or not _positive(cap):
        line, col = parsed.positions.key("budget")
        raise SpecError([SpecProblem(str(path), line, col, "budget", "budget: takes max_monthly_usd, a positive "
                                     "number of dollars", "e.g. budget: {max_monthly_usd: 500}")])  # fmt: skip
    return float(cap or 0), str(path)


def _positive(value: Any) -> bool:
    return type(value) in (int, float) and value > 0


def project_monthly(
    loaded: Sequence[Any], now: datetime, billed: Mapping[str, Billed] | None = None
) -> Monthly:
    """The cap and the month's spend of every job in the store of the first job file's project: watch's
    ledgers, and `billed` (the cost engine's figure of the jobs read, gpujob.cost.monthly.billed_of)."""
    from gpujob.state import open_store

    start = month_start(now)
    if not loaded:
        return Monthly(None, "", start)
    cap, source = read_cap(Path(loaded[0].path).resolve().parent)
    store = open_store(loaded[0].path)
    histories: dict[str, History] = {}
    for name in store.names("watch/"):
        job = name.removeprefix("watch/").removesuffix(".json")
        h = read_history(store, job)
        if h is not None:
            histories[job] = h
    spent: dict[str, float] = {}
    sources: dict[str, str] = {}
    for job in sorted(set(histories) | set(billed or {})):
        spent[job], sources[job] = month_of(histories.get(job), (billed or {}).get(job), start)
    return Monthly(cap, source, start, spent, sources)


def month_of(h: History | None, billed: Billed | None, start: datetime) -> tuple[float, str]:
    """(spent since `start`, its source): the larger of watch's count and the cost engine's."""
    watched = round(h.spent_since(start), 6) if h is not None else None
    if billed is not None:
        before = h.spent_usd - h.spent_since(start) if h is not None else 0.0
        engine = round(max(0.0, billed.usd - before), 6)
        if watched is None:
            return engine, f"{billed.source}, never watched: since its first resource"
        if engine > watched:
            return engine, f"{billed.source}, less watch's count before the month"
    if watched is not None:
        return watched, "watch's ledger"
    return 0.0, ""
