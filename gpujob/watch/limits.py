"""The limits that stop watching a job and park it: run.max_runtime, budget.max_total_usd and a
maximum number of recoveries per hour. Pure: the ledger and the burn rate in, a reason (or None) out.

The budget is checked ahead of time: money so far (the cost engine's figure, Ledger.money) plus what
the current burn adds before watch can have parked the job (the next tick plus the time a park takes), so the limit is not crossed while
watch sleeps.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from gpujob.cost.forecast import Forecast
from gpujob.jobfile.model import JobSpec, format_duration
from gpujob.watch.ledger import Ledger

PARK_TAKES_S = 120.0  # a final pull and a stop, with margin


def horizon_s(interval_s: float) -> float:
    return 2 * interval_s + PARK_TAKES_S


def limit_reached(
    spec: JobSpec,
    ledger: Ledger,
    now: datetime,
    *,
    burn_usd_per_hour: float,
    interval_s: float,
    max_recoveries_per_hour: int,
    recovering: bool,
) -> str | None:
    """Why the job must be parked now, or None. `recovering`: the tick is about to make a recovery."""
    run = spec.run
    if run is not None and run.max_runtime is not None and ledger.run_started_at is not None:
        took = now - ledger.run_started_at
        if took >= run.max_runtime:
            return (
                f"run.max_runtime {format_duration(run.max_runtime)} reached: the run has been going since "
                f"{ledger.run_started_at:%Y-%m-%d %H:%M} UTC ({took.total_seconds() / 3600:.2f} h)"
            )
    budget = spec.budget.max_total_usd
    if budget is not None:
        spent = ledger.money(now)
        ahead = spent + burn_usd_per_hour * horizon_s(interval_s) / 3600
        if ahead >= budget:
            return (
                f"budget.max_total_usd ${budget:,.2f}: ${spent:,.2f} spent so far at ${burn_usd_per_hour:,.2f}/h "
                f"would cross it before the next check (${ahead:,.2f})"
            )
    if recovering:
        recent = ledger.recoveries_since(now - timedelta(hours=1))
        if recent >= max_recoveries_per_hour:
            return (
                f"{recent} recoveries in the last hour (the limit is {max_recoveries_per_hour}): "
                "something keeps taking the job down; look at `gpujob status` and the events before resuming"
            )
    return None


def stall_reason(spec: JobSpec, ledger: Ledger, now: datetime, *, alive: bool, billing: bool) -> str | None:
    """run.stall_after: the run is alive and its machine bills, yet no new step, checkpoint or log line
    came for that long; the reason names the last step, how long and what it cost meanwhile."""
    run = spec.run
    if run is None or run.stall_after is None or not (alive and billing):
        return None
    span = run.stall_after.total_seconds()
    steps = [s.last_step for s in ledger.segments if s.last_step is not None]
    last = f"last step {steps[-1]}" if steps else "no step reported"
    quiet = ledger.stalled_for(now)
    if quiet is None or quiet < span:
        idle = ledger.idle_for(now)
        if idle is None or min(idle) < span:
            return None
        # where nvidia-smi answers: a GPU at 0 % with no new step or checkpoint is a stall, logging or not
        cost = max(0.0, ledger.money(now) - ledger.progress_usd)
        return (
            f"run.stall_after {format_duration(run.stall_after)}: GPU 0 % for "
            f"{format_duration(timedelta(seconds=int(idle[0])))} and no new step or checkpoint for "
            f"{format_duration(timedelta(seconds=int(idle[1])))} ({last}); ${cost:,.2f} billed while it stalled"
        )
    cost = max(0.0, ledger.money(now) - ledger.activity_usd)
    return (
        f"run.stall_after {format_duration(run.stall_after)}: the run is alive but wrote no new step, "
        f"checkpoint or log line for {format_duration(timedelta(seconds=int(quiet)))} ({last}); "
        f"${cost:,.2f} billed while it stalled"
    )


def projection_warning(
    spec: JobSpec, ledger: Ledger, now: datetime, burn_usd_per_hour: float, forecast: Forecast | None = None
) -> str | None:
    """Spend so far plus the forecast (run.total_steps: P50, else P90), or else the burn until
    run.max_runtime, when that crosses the budget (said once)."""
    budget, run = spec.budget.max_total_usd, spec.run
    if budget is not None and forecast is not None:
        for q, usd in (("P50", forecast.p50_usd), ("P90", forecast.p90_usd)):
            if usd > budget:
                return (
                    f"the forecast's {q} is ${usd:,.2f} (spent ${forecast.spent_usd:,.2f} so far), over "
                    f"budget.max_total_usd ${budget:,.2f}: it will be parked when the budget runs out"
                )
        return None
    if budget is None or run is None or run.max_runtime is None or ledger.run_started_at is None:
        return None
    left_s = max(0.0, (ledger.run_started_at + run.max_runtime - now).total_seconds())
    projected = ledger.money(now) + burn_usd_per_hour * left_s / 3600
    if projected <= budget:
        return None
    return (
        f"at ${burn_usd_per_hour:,.2f}/h the run reaches ${projected:,.2f} by run.max_runtime, over "
        f"budget.max_total_usd ${budget:,.2f}: it will be parked when the budget runs out"
    )
