"""run.deadline: among the candidates the job file allows (each GPU type of machine.gpu; spot and
on-demand with machine.spot: prefer), the cheapest whose P90 finish meets the deadline, with why each
other one was not chosen; none meets it: an error naming the best P90.

The choice is made only where the plan starts a machine (none exists, or it is gone after a
preemption): a running machine is never replaced for it, the plan warns instead when its forecast
slips past the deadline (and watch says so each time it re-plans).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gpujob.cost.forecast import Forecast
from gpujob.cost.history import History
from gpujob.cost.job_forecast import Now, job_forecast
from gpujob.cost.rates import GpuRate, gpu_rate, quote_available, usd
from gpujob.invariant import present
from gpujob.plan.context import JobContext
from gpujob.plan.model import Finding

KEY = "run.deadline"


@dataclass(frozen=True)
class Candidate:
    gpu: str
    spot: bool
    rate: GpuRate
    forecast: Forecast | None
    why_not: str = ""

    @property
    def name(self) -> str:
        return f"{self.gpu} {'spot' if self.spot else 'on-demand'}"


def _spots(ctx: JobContext) -> list[bool]:
    want = ctx.spec.machine.spot
    if ctx.spec.platform != "runpod" or want is False:
        return [False]
    if want is True:
        return [True]
    return [True, False] if ctx.spot_gone is None else [False]


def candidates(ctx: JobContext, history: History | None) -> list[Candidate]:
    m = ctx.spec.machine
    out = []
    for alias in m.gpu:
        for spot in _spots(ctx):
            r = gpu_rate(ctx.profile, ctx.live.quotes, alias, count=m.gpu_count, cloud=m.cloud, spot=spot)
            if r is None:
                continue
            why = ""
            if (
                quote_available(ctx.profile, ctx.live.quotes, alias, spot, cloud=m.cloud, count=m.gpu_count)
                is False
            ):
                why = "out of stock"
            elif m.max_price_per_hour is not None and r.usd_per_hour > m.max_price_per_hour:
                why = f"{usd(r.usd_per_hour)}/h is over machine.max_price_per_hour"
            f = job_forecast(
                ctx.spec, Now(at=ctx.now, usd_per_hour=r.usd_per_hour, gpu=alias, spot=spot), history
            )
            out.append(Candidate(alias, spot, r, f, why))
    return out


def _finish(f: Forecast | None) -> datetime | None:
    return f.p90_finish if f is not None else None


def choose(ctx: JobContext, history: History | None) -> list[Finding]:
    """Set the plan's GPU and spot choice for run.deadline; the findings that say why."""
    run = ctx.spec.run
    if run is None or run.deadline is None or ctx.spec.state != "running" or ctx.machine is not None:
        return []
    deadline = run.deadline
    cands = candidates(ctx, history)
    if not any(c.forecast is not None for c in cands):
        return [ctx.finding("deadline", "warning", "run.deadline is set but no forecast can be made",
                            fix="set run.total_steps and run.step_time (or run.max_runtime)", key=KEY)]  # fmt: skip
    fits = [
        c for c in cands if not c.why_not and c.forecast is not None and c.forecast.p90_finish <= deadline
    ]
    if not fits:
        timed = [c for c in cands if c.forecast is not None and not c.why_not]
        best = min(
            timed or [c for c in cands if c.forecast is not None],
            key=lambda c: present(c.forecast, "f").p90_finish,
        )
        bf = present(best.forecast, "a timed candidate's forecast")
        return [ctx.finding(
            "deadline", "error",
            f"nothing the job file allows finishes by run.deadline {deadline:%Y-%m-%d %H:%M} UTC at P90: the best "
            f"is {best.name}, P90 finish {bf.p90_finish:%Y-%m-%d %H:%M} UTC",
            detail=_others(cands, None, deadline),
            fix="move the deadline, add a faster GPU type to machine.gpu, or allow on-demand (machine.spot: prefer)",
            key=KEY,
        )]  # fmt: skip
    pick = min(fits, key=lambda c: present(c.forecast, "f").p50_usd)
    ctx.desired_gpu_alias, ctx.desired_gpu, ctx.spot_choice = pick.gpu, pick.rate, pick.spot
    pf = present(pick.forecast, "a fitting candidate's forecast")
    return [ctx.finding(
        "deadline", "info",
        f"run.deadline {deadline:%Y-%m-%d %H:%M} UTC: {pick.name} chosen, the cheapest whose P90 finish "
        f"({pf.p90_finish:%Y-%m-%d %H:%M} UTC) meets it",
        detail=_others(cands, pick, deadline), key=KEY,
    )]  # fmt: skip


def _others(cands: list[Candidate], pick: Candidate | None, deadline: datetime) -> str:
    lines = []
    for c in cands:
        if c is pick:
            continue
        f = c.forecast
        if c.why_not:
            why = c.why_not
        elif f is None:
            why = "no forecast"
        elif f.p90_finish > deadline:
            why = f"P90 finish {f.p90_finish:%Y-%m-%d %H:%M} UTC is past the deadline"
        else:
            why = f"P50 {usd(f.p50_usd)} costs more"
        lines.append(f"{c.name}: {why}")
    return "; ".join(lines)


def slipped(ctx: JobContext, f: Forecast | None) -> list[Finding]:
    """A running job whose forecast's P90 finish is past run.deadline: a warning (no machine is replaced)."""
    run = ctx.spec.run
    if (
        run is None
        or run.deadline is None
        or f is None
        or ctx.machine is None
        or f.p90_finish <= run.deadline
    ):
        return []
    return [ctx.finding(
        "deadline", "warning",
        f"the forecast slipped past run.deadline {run.deadline:%Y-%m-%d %H:%M} UTC: P90 finish "
        f"{f.p90_finish:%Y-%m-%d %H:%M} UTC (P50 {f.p50_finish:%Y-%m-%d %H:%M} UTC)",
        fix="the next start (after a preemption or a stop) is chosen for the deadline again; to switch now, "
        "gpujob apply --replace <job>.pod", key=KEY,
    )]  # fmt: skip
