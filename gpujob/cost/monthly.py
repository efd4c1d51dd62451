"""The project-wide budget: `budget: {max_monthly_usd: N}` in the project file (gpujob.yaml, found as the
state block is, gpujob.state.config), the month's spend of every job in the project's store (watch's
ledgers), and the check a plan is refused by: the month's spend plus the P50 still to come of every job the
plan starts must stay under it. `gpujob budget` reports the same figures per job."""

from __future__ import annotations

from collections.abc import Sequence
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

    @property
    def total(self) -> float:
        return round(sum(self.spent.values()), 6)


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


def project_monthly(loaded: Sequence[Any], now: datetime) -> Monthly:
    """The cap and the month's spend of every job in the store of the first job file's project."""
    from gpujob.state import open_store

    start = month_start(now)
    if not loaded:
        return Monthly(None, "", start)
    cap, source = read_cap(Path(loaded[0].path).resolve().parent)
    store = open_store(loaded[0].path)
    spent: dict[str, float] = {}
    for name in store.names("watch/"):
        job = name.removeprefix("watch/").removesuffix(".json")
        h: History | None = read_history(store, job)
        if h is not None:
            spent[job] = round(h.spent_since(start), 6)
    return Monthly(cap, source, start, spent)
