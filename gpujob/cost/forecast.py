"""The forecast of a run's cost and finish at P50 and P90: an analytic model, pure, its clock handed in.

Model (docs/forecast.md): the run still has W seconds of compute to do (steps left × seconds per
step). Checkpoints every τ seconds of work, each taking δ to write, stretch it to B = W·(1 + δ/τ).
Interruptions arrive as a Poisson process at λ per second of running; each one costs the work since
the last completed checkpoint, U ~ Uniform(0, τ + δ), plus the recovery time R (a new machine, the
sync, the resume). The redone work is itself exposed, so the expected count is μ = λB / (1 − λ(τ+δ)/2)
and the count N ~ Poisson(μ). The wall time is T = B + N·R + ΣU_i: its distribution is the Poisson
mixture of shifted Irwin–Hall sums, evaluated exactly for up to IRWIN_HALL_EXACT interruptions and by
the normal approximation above; P50 and P90 are found by bisection. Cost is the running rate times T
plus what was spent so far (every second of T bills: the recovery's machine boots and resumes on the
meter), and finish is now + T. tests/cost/test_forecast.py checks it against a seeded event-driven
simulation of the same process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import Field

from gpujob.model import Model

IRWIN_HALL_EXACT = 20
QUANTILES = (0.5, 0.9)
STALLED = 0.9  # λ(τ+δ)/2 at or above this: interruptions undo work about as fast as it is done


class Input(Model):
    """One figure the forecast used, with where it came from (so a reviewer can check it)."""

    name: str
    value: str
    source: str
    estimate: bool = False


class Forecast(Model):
    """Cost and finish at P50 and P90, and what they were computed from."""

    p50_usd: float
    p90_usd: float
    p50_finish: datetime
    p90_finish: datetime
    p50_hours: float = Field(description="Wall time left at P50.")
    p90_hours: float
    expected_interruptions: float
    spent_usd: float = Field(description="Spend so far, included in p50_usd and p90_usd.")
    usd_per_hour: float
    steps_done: int | None = None
    total_steps: int | None = None
    model: str = "analytic: Poisson interruptions, uniform loss since the last checkpoint (docs/forecast.md)"
    estimate: bool = Field(description="Some input is an estimate, not this job's own measurement.")
    inputs: list[Input] = Field(default_factory=list)

    def line(self) -> str:
        from gpujob.cost.rates import usd

        tag = " (estimate)" if self.estimate else ""
        return (
            f"P50 {usd(self.p50_usd)}, finish {self.p50_finish:%Y-%m-%d %H:%M} UTC · "
            f"P90 {usd(self.p90_usd)}, finish {self.p90_finish:%Y-%m-%d %H:%M} UTC{tag}"
        )

    def input_lines(self) -> list[str]:
        return [f"{i.name} {i.value} ({i.source}{', estimate' if i.estimate else ''})" for i in self.inputs]


@dataclass(frozen=True)
class Work:
    """What is left and how it is interrupted; every time in seconds, λ per second of running."""

    work_s: float
    interval_s: float | None  # None: no checkpoints (an interruption loses everything done)
    write_s: float
    per_s: float
    recovery_s: float

    @property
    def base_s(self) -> float:
        if self.interval_s is None or self.interval_s <= 0:
            return self.work_s
        return self.work_s * (1 + self.write_s / self.interval_s)

    @property
    def span_s(self) -> float:
        """τ + δ: the longest stretch an interruption can undo (with no checkpoints: everything)."""
        if self.interval_s is None or self.interval_s <= 0:
            return self.base_s
        return self.interval_s + self.write_s

    @property
    def mean_interruptions(self) -> float:
        load = self.per_s * self.span_s / 2
        if load >= STALLED:
            return math.inf
        return self.per_s * self.base_s / (1 - load)


def quantiles(w: Work, qs: tuple[float, ...] = QUANTILES) -> tuple[list[float], float]:
    """The wall-time quantiles (seconds) and the expected number of interruptions."""
    mu = w.mean_interruptions
    if math.isinf(mu):
        return [math.inf for _ in qs], mu
    if mu <= 0 or w.work_s <= 0:
        return [w.base_s for _ in qs], 0.0
    top = int(mu + 10 * math.sqrt(mu) + 10)
    weights = _poisson(mu, top)
    span = w.span_s

    def cdf(t: float) -> float:
        total = 0.0
        for n, p in enumerate(weights):
            rest = t - w.base_s - n * w.recovery_s
            if rest < 0:
                continue  # n recoveries alone outlast t (so does every larger n)
            total += p * _irwin_hall_cdf(n, rest / span)
        return total

    hi = w.base_s + top * (w.recovery_s + span)
    return [_bisect(cdf, q, w.base_s, hi) for q in qs], mu


def _poisson(mu: float, top: int) -> list[float]:
    out = [math.exp(-mu)]
    for n in range(1, top + 1):
        out.append(out[-1] * mu / n)
    return out


def _irwin_hall_cdf(n: int, x: float) -> float:
    """P(U_1 + ... + U_n <= x) for U ~ Uniform(0, 1); exact for small n, normal above."""
    if n == 0:
        return 1.0 if x >= 0 else 0.0
    if x <= 0:
        return 0.0
    if x >= n:
        return 1.0
    if n > IRWIN_HALL_EXACT:
        z = (x - n / 2) / math.sqrt(n / 12)
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))
    total = sum((-1) ** k * math.comb(n, k) * (x - k) ** n for k in range(math.floor(x) + 1))
    return min(1.0, max(0.0, total / math.factorial(n)))


def _bisect(cdf: object, q: float, lo: float, hi: float) -> float:
    f = cdf  # a callable; typed loosely to keep the signature short
    for _ in range(80):
        mid = (lo + hi) / 2
        if f(mid) < q:  # type: ignore[operator]
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-3:
            break
    return hi


def forecast(
    w: Work,
    *,
    now: datetime,
    usd_per_hour: float,
    spent_usd: float,
    inputs: list[Input],
    steps_done: int | None = None,
    total_steps: int | None = None,
) -> Forecast | None:
    """The forecast, or None when interruptions undo work as fast as it is done (no finish to forecast)."""
    (p50, p90), mu = quantiles(w)
    if math.isinf(p90):
        return None
    return Forecast(
        p50_usd=round(spent_usd + usd_per_hour * p50 / 3600, 4),
        p90_usd=round(spent_usd + usd_per_hour * p90 / 3600, 4),
        p50_finish=now + timedelta(seconds=p50),
        p90_finish=now + timedelta(seconds=p90),
        p50_hours=round(p50 / 3600, 4),
        p90_hours=round(p90 / 3600, 4),
        expected_interruptions=round(mu, 3),
        spent_usd=round(spent_usd, 4),
        usd_per_hour=usd_per_hour,
        steps_done=steps_done,
        total_steps=total_steps,
        estimate=any(i.estimate for i in inputs),
        inputs=inputs,
    )
