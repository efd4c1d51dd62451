"""The plan's forecast of a job (gpujob.cost.job_forecast at the plan's running rate, from the job's
history in gpujob's state) and budget.max_total_usd judged on it: a start whose spend so far plus the
P50 crosses the budget is refused (an error), one whose P90 crosses it is warned about; a job already
running is warned about either way (watch parks it before the meter crosses the budget).
"""

from __future__ import annotations

from typing import Any

from gpujob.cost.forecast import Forecast
from gpujob.cost.history import History
from gpujob.cost.job_forecast import Now, job_forecast
from gpujob.cost.rates import usd
from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind, Finding, JobPlan

KEY = "budget.max_total_usd"
STARTS = {ActionKind.CREATE, ActionKind.START, ActionKind.REPLACE, ActionKind.LAUNCH, ActionKind.RELAUNCH,
          ActionKind.MOVE}  # fmt: skip


def plan_forecast(ctx: JobContext, running_usd_per_hour: float, history: History | None) -> Forecast | None:
    gpu = ctx.desired_gpu_alias or (ctx.spec.machine.gpu[0] if ctx.spec.machine.gpu else None)
    m = ctx.machine  # a machine kept keeps its pricing (spot: prefer never re-prices a pod)
    spot = ctx.spot if m is None or ctx.deadline_replan else m.spot
    now = Now(at=ctx.now, usd_per_hour=running_usd_per_hour, gpu=gpu, spot=spot)
    return job_forecast(ctx.spec, now, history)


def budget_findings(ctx: JobContext, f: Forecast | None) -> list[Finding]:
    cap = ctx.spec.budget.max_total_usd
    if f is None or cap is None:
        return []
    starts = any(a.kind in STARTS for a in ctx.actions)
    said = f"spend so far {usd(f.spent_usd)} + forecast"
    if f.p50_usd > cap:
        what = f"{said}: P50 {usd(f.p50_usd)} crosses {KEY} {usd(cap)}"
        if starts:
            return [ctx.finding("budget", "error", what + ": the start is refused",
                                fix="raise the budget, lower run.total_steps, or pick a cheaper GPU or spot",
                                key=KEY)]  # fmt: skip
        return [ctx.finding("budget", "warning", what + ": watch parks the job before the meter crosses it",
                            fix="raise the budget or lower run.total_steps", key=KEY)]  # fmt: skip
    if f.p90_usd > cap:
        return [ctx.finding("budget", "warning",
                            f"{said}: P90 {usd(f.p90_usd)} crosses {KEY} {usd(cap)} (P50 {usd(f.p50_usd)} is within it)"
                            ": watch parks the job if the meter gets there",
                            fix="raise the budget to the P90 to be sure the run finishes", key=KEY)]  # fmt: skip
    return []


def without_projection(findings: list[Finding]) -> list[Finding]:
    """The findings less the run.max_runtime projection against the budget (gpujob.plan.findings), which
    the forecast replaces."""
    return [f for f in findings if not (f.code == "budget" and f.source is not None and f.source.key == KEY)]


def with_monthly(jobs: list[JobPlan], monthly: Any) -> list[JobPlan]:
    """The project's budget.max_monthly_usd (gpujob.cost.monthly): a plan that starts jobs whose P50 still
    to come, added to the month's spend of every job in the project, crosses it is refused (an error on
    the first job it starts)."""
    cap = getattr(monthly, "cap", None)
    if cap is None:
        return jobs
    starting = [jp for jp in jobs if any(a.kind in STARTS for a in jp.actions)]
    if not starting:
        return jobs
    coming = sum(max(0.0, jp.forecast.p50_usd - jp.forecast.spent_usd) for jp in starting if jp.forecast)
    total = monthly.total + coming
    if total <= cap:
        return jobs
    first = starting[0]
    finding = Finding(
        code="budget", severity="error", job=first.job,
        summary=f"the month's spend {usd(monthly.total)} (every job in the project) plus the P50 still to come "
        f"{usd(coming)} of what this plan starts is {usd(total)}, over the project's {MONTHLY_KEY} {usd(cap)} "
        f"({monthly.source}): the start is refused",
        fix="gpujob budget shows each job's part; raise the budget or start less",
    )  # fmt: skip
    from gpujob.plan.findings import by_severity

    return [jp.model_copy(update={"findings": by_severity([*jp.findings, finding])}) if jp is first else jp
            for jp in jobs]  # fmt: skip


MONTHLY_KEY = "budget.max_monthly_usd"
