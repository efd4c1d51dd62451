"""run.deadline: among the candidates the job file allows (each GPU type of machine.gpu; spot and
on-demand with machine.spot: prefer; and the same of every fallback entry's platform), the cheapest whose
P90 finish meets the deadline, with why each other one was not chosen; none meets it: an error naming
the best P90.

The job starts where its file places it (its platform, or the fallback entry it runs on after a move):
a deadline picks among that platform's candidates, and a fallback platform's are judged and shown
beside them. When only a fallback platform's candidate meets the deadline the plan is an error that
names it: gpujob moves a job to a fallback only when its platform cannot serve it, and with failback:
auto would move it home again once that platform can, so starting there for a deadline would be undone
by the next plan. Making that platform the job's own (its entry first) starts it there.

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
from gpujob.jobfile.fallback import chain, place_name
from gpujob.jobfile.model import JobSpec
from gpujob.plan.context import JobContext
from gpujob.plan.model import Finding
from gpujob.profile import Profile

KEY = "run.deadline"


@dataclass(frozen=True)
class Candidate:
    gpu: str
    spot: bool
    rate: GpuRate
    forecast: Forecast | None
    why_not: str = ""
    place: str = ""  # another platform of the job's chain ("paperspace (fallback[0])"); "": where it runs

    @property
    def name(self) -> str:
        kind = f"{self.gpu} {'spot' if self.spot else 'on-demand'}"
        return f"{kind} on {self.place}" if self.place else kind


def _spots(spec: JobSpec, spot_gone: object) -> list[bool]:
    want = spec.machine.spot
    if spec.platform != "runpod" or want is False:
        return [False]
    if want is True:
        return [True]
    return [True, False] if spot_gone is None else [False]


def candidates(ctx: JobContext, history: History | None) -> list[Candidate]:
    """Every candidate of the job's chain: where it runs first, then each other platform's entry."""
    from gpujob.profile import load_profile

    declared = getattr(ctx.loaded, "declared", None) or ctx.spec
    here = getattr(ctx.loaded, "entry", -1)
    out = _place_candidates(ctx, ctx.spec, ctx.profile, ctx.spot_gone, history, "")
    for entry, spec in chain(declared):
        if entry != here and spec.platform != ctx.spec.platform:
            gone = ctx.live.spot_unavailable.get(spec.platform)
            out += _place_candidates(ctx, spec, load_profile(spec.platform), gone, history,
                                     place_name(declared, entry))  # fmt: skip
    return out


def _place_candidates(
    ctx: JobContext, spec: JobSpec, profile: Profile, spot_gone: object, history: History | None, place: str
) -> list[Candidate]:
    m = spec.machine
    quotes = ctx.live.quotes
    out = []
    for alias in m.gpu:
        for spot in _spots(spec, spot_gone):
            r = gpu_rate(profile, quotes, alias, count=m.gpu_count, cloud=m.cloud, spot=spot)
            if r is None:
                continue
            why = ""
            if quote_available(profile, quotes, alias, spot, cloud=m.cloud, count=m.gpu_count) is False:
                why = "out of stock"
            elif m.max_price_per_hour is not None and r.usd_per_hour > m.max_price_per_hour:
                why = f"{usd(r.usd_per_hour)}/h is over machine.max_price_per_hour"
            f = job_forecast(
                spec, Now(at=ctx.now, usd_per_hour=r.usd_per_hour, gpu=alias, spot=spot), history
            )
            out.append(Candidate(alias, spot, r, f, why, place))
    return out


def _finish(f: Forecast | None) -> datetime | None:
    return f.p90_finish if f is not None else None


def choose(ctx: JobContext, history: History | None) -> list[Finding]:
    """Set the plan's GPU and spot choice for run.deadline; the findings that say why."""
    run = ctx.spec.run
    if run is None or run.deadline is None or ctx.spec.state != "running":
        return []
    if ctx.machine is not None:
        return _replan(ctx, history, run.deadline) if ctx.machine.status == "stopped" else []
    deadline = run.deadline
    cands = candidates(ctx, history)
    if not any(c.forecast is not None for c in cands):
        return [ctx.finding("deadline", "warning", "run.deadline is set but no forecast can be made",
                            fix="set run.total_steps and run.step_time (or run.max_runtime)", key=KEY)]  # fmt: skip
    fits = [
        c for c in cands if not c.why_not and c.forecast is not None and c.forecast.p90_finish <= deadline
    ]
    here_fits = [c for c in fits if not c.place]
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
    if not here_fits:
        only = min(fits, key=lambda c: present(c.forecast, "f").p50_usd)
        of = present(only.forecast, "a fitting candidate's forecast")
        return [ctx.finding(
            "deadline", "error",
            f"run.deadline {deadline:%Y-%m-%d %H:%M} UTC: only {only.place} meets it ({only.name}, P90 finish "
            f"{of.p90_finish:%Y-%m-%d %H:%M} UTC, P50 {usd(of.p50_usd)}); nothing on {ctx.spec.platform}, where "
            "the job starts, does: the start is refused",
            detail=_others(cands, only, deadline),
            fix=f"to start it on {only.place.split(' ')[0]}, make that platform the job's own (its fallback entry "
            "first; gpujob moves a job to a fallback only when its platform cannot serve it); or move the deadline",
            key=KEY,
        )]  # fmt: skip
    pick = min(here_fits, key=lambda c: present(c.forecast, "f").p50_usd)
    ctx.desired_gpu_alias, ctx.desired_gpu, ctx.spot_choice = pick.gpu, pick.rate, pick.spot
    pf = present(pick.forecast, "a fitting candidate's forecast")
    return [ctx.finding(
        "deadline", "info",
        f"run.deadline {deadline:%Y-%m-%d %H:%M} UTC: {pick.name} chosen, the cheapest whose P90 finish "
        f"({pf.p90_finish:%Y-%m-%d %H:%M} UTC) meets it",
        detail=_others(cands, pick, deadline), key=KEY,
    )]  # fmt: skip


def _replan(ctx: JobContext, history: History | None, deadline: datetime) -> list[Finding]:
    """A stopped machine (preempted, or stopped by its budget or a person) about to be started again:
    when resuming it as it was no longer finishes by the deadline at P90, the cheapest candidate of its
    platform that does replaces it (on the same storage, through the replace's pull and gate); none
    does: it resumes as it was, with a warning. Said before a cent more is spent (watch: an event)."""
    m = present(ctx.machine, "the stopped machine")
    cands = candidates(ctx, history)
    alias = ctx.live_gpu_alias(m)
    was = next((c for c in cands if not c.place and c.gpu == alias and c.spot == m.spot), None)
    if was is None or was.forecast is None or was.forecast.p90_finish <= deadline:
        return []
    head = (
        f"re-planned for run.deadline {deadline:%Y-%m-%d %H:%M} UTC: resumed as it was, {m.name} ({was.name}) "
        f"finishes at P90 {was.forecast.p90_finish:%Y-%m-%d %H:%M} UTC, past it"
    )
    fits = [
        c
        for c in cands
        if not c.place and not c.why_not and c.forecast is not None and c.forecast.p90_finish <= deadline
    ]
    if not fits:
        return [ctx.finding("deadline", "warning", head + f"; nothing on {ctx.spec.platform} meets it: it resumes as it was",
                            detail=_others(cands, was, deadline), key=KEY,
                            fix="move the deadline, or allow a faster GPU type or on-demand")]  # fmt: skip
    pick = min(fits, key=lambda c: present(c.forecast, "f").p50_usd)
    pf = present(pick.forecast, "a fitting candidate's forecast")
    ctx.desired_gpu_alias, ctx.desired_gpu, ctx.spot_choice = pick.gpu, pick.rate, pick.spot
    ctx.deadline_replan = (
        f"run.deadline: {pick.name} finishes by it at P90 ({pf.p90_finish:%Y-%m-%d %H:%M} UTC), {m.name} resumed "
        f"as it was ({was.name}) does not: a new {ctx.machine_kind} on the same storage"
    )
    return [ctx.finding(
        "deadline", "warning",
        head + f"; {pick.name} chosen instead (P90 finish {pf.p90_finish:%Y-%m-%d %H:%M} UTC, P50 {usd(pf.p50_usd)})",
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
        elif (
            c.place
            and pick is not None
            and not pick.place
            and f.p50_usd < present(pick.forecast, "f").p50_usd
        ):
            why = (
                f"P50 {usd(f.p50_usd)} costs less, but the job starts where its file places it (gpujob "
                "moves it to a fallback only when that platform cannot serve)"
            )
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
