"""What the forecast reads of a job's past from gpujob's state: watch's ledger (watch/<job>.json, kept
by gpujob.watch.ledger), read as plain data so the reasoning floors need not import the watch loop.

Only what the forecast needs: money so far, the step rate (the median of watch's samples), the newest
step, the interruptions (a run that ended short of exit 0 and was followed by another), the GPU time
they happened in, and the time from each lost run's last step to the next run's first.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from gpujob.model import Model
from gpujob.state import StateRef
from gpujob.state.ledger import RunFields, read_ledger_as


class _Segment(RunFields):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Point(Model):
    model_config = ConfigDict(extra="ignore", frozen=True)

    at: datetime
    value: float


class History(Model):
    """The subset of the ledger the forecast reads (the rest of the document is ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    usd: float = 0.0
    billed_usd: float | None = None
    billed_anchor: float = 0.0
    gpu_seconds: float = 0.0
    rates: list[float] = Field(default_factory=list)
    segments: list[_Segment] = Field(default_factory=list)
    usd_trail: list[_Point] = Field(default_factory=list)

    def spent_since(self, since: datetime) -> float:
        """Money spent since `since`: now's figure less the trail's last point before it (0 before any)."""
        before = [p.value for p in self.usd_trail if p.at <= since]
        return max(0.0, self.spent_usd - (before[-1] if before else 0.0))

    @property
    def spent_usd(self) -> float:
        """As the ledger counts it (Ledger.money at its last tick): the cost engine's figure plus watch's
        own integration since."""
        if self.billed_usd is None:
            return self.usd
        return self.billed_usd + (self.usd - self.billed_anchor)

    @property
    def step_rate(self) -> float | None:
        """Steps per second: the median of watch's samples."""
        return statistics.median(self.rates) if self.rates else None

    @property
    def steps_done(self) -> int | None:
        return max((s.last_step for s in self.segments if s.last_step is not None), default=None)

    def interruptions(self) -> list[float]:
        """Each run lost short of exit 0 and followed by another: the seconds from its last step to the
        next run's first (the recovery), or -1 when either end is unknown."""
        out = []
        for a, b in zip(self.segments, self.segments[1:], strict=False):
            if a.exit_code == 0:
                continue
            if a.last_at is None or b.first_at is None:
                out.append(-1.0)
            else:
                out.append(max(0.0, (b.first_at - a.last_at).total_seconds()))
        return out


def read_history(state: StateRef, job: str) -> History | None:
    return read_ledger_as(state, job, History)


def job_histories(loaded: Sequence[Any]) -> dict[str, History]:
    """Each loaded job's history from its project's store, read-only (planning creates nothing)."""
    from gpujob.state import open_store

    out: dict[str, History] = {}
    for ls in loaded:
        h = read_history(open_store(ls.path), ls.spec.name)
        if h is not None:
            out[ls.spec.name] = h
    return out
