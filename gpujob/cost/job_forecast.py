"""A job's forecast inputs, each from the best source there is, and the forecast they give
(gpujob.cost.forecast). Shared by plan (before and between runs), status (the live rate and spend) and
watch (the budget and the deadline): one place decides where every figure comes from.

Order of sources (docs/forecast.md): the job's own history in gpujob's state (watch's ledger: its step
rate, its interruptions and their recovery times) first; then the job file (run.step_time,
checkpoint.mtbf, checkpoint.write_time); then profiles/throughput.yaml, marked estimate.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime

from gpujob.cost.forecast import Forecast, Input, Work, forecast
from gpujob.cost.history import History
from gpujob.cost.throughput import scale, table
from gpujob.jobfile.model import JobSpec, format_duration

MIN_HISTORY_GPU_H = 1.0  # less GPU time than this with no interruption says nothing of the rate yet


@dataclass(frozen=True)
class Now:
    """What is known at this moment beside the history (status and watch read it live)."""

    at: datetime
    usd_per_hour: float
    gpu: str | None  # the GPU type the job runs (or will run) on
    spot: bool
    spent_usd: float | None = None  # None: the history's
    steps_done: int | None = None  # None: the history's
    step_rate: float | None = None  # steps per second read live; None: the history's
    rate_source: str = "the plan's running rate"
    spent_source: str = "watch's ledger"


def job_forecast(spec: JobSpec, now: Now, history: History | None = None) -> Forecast | None:
    """The forecast of a running job with run.total_steps, or None (no total, no rate, not running)."""
    run = spec.run
    if run is None or run.total_steps is None or spec.state != "running":
        return None
    inputs: list[Input] = []
    h = history or History()
    done = now.steps_done if now.steps_done is not None else h.steps_done
    spent = now.spent_usd if now.spent_usd is not None else h.spent_usd
    left = max(0, run.total_steps - (done or 0))
    inputs.append(Input(name="steps left", value=f"{left:,} of {run.total_steps:,}",
                        source="run.total_steps" + (" less the newest step read" if done else "")))  # fmt: skip
    work_s = _work_s(spec, now, h, left, inputs)
    if work_s is None:
        return None
    interval, write = _checkpoints(spec, inputs)
    per_h = _interruptions(spec, now, h, inputs)
    recovery = _recovery(spec, h, inputs)
    inputs.append(Input(name="rate", value=f"${now.usd_per_hour:,.4f}/h", source=now.rate_source))
    spent_from = now.spent_source if history is not None or now.spent_usd is not None else "nothing yet"
    inputs.append(Input(name="spent so far", value=f"${spent:,.2f}", source=spent_from))
    w = Work(work_s=work_s, interval_s=interval, write_s=write, per_s=per_h / 3600, recovery_s=recovery)
    return forecast(w, now=now.at, usd_per_hour=now.usd_per_hour, spent_usd=spent, inputs=inputs,
                    steps_done=done, total_steps=run.total_steps)  # fmt: skip


def _work_s(spec: JobSpec, now: Now, h: History, left: int, inputs: list[Input]) -> float | None:
    run = spec.run
    if run is None:
        return None
    rate = now.step_rate or h.step_rate
    if rate:
        src = (
            "the run's progress read now"
            if now.step_rate
            else f"this job's runs ({len(h.rates)} samples, median)"
        )
        inputs.append(Input(name="step time", value=f"{1 / rate:.3g} s", source=src))
        return left / rate
    if run.step_time is not None and now.gpu:
        measured_on = spec.machine.gpu[0]
        scaled = scale(run.step_time.total_seconds(), measured_on, now.gpu)
        if scaled is not None:
            step_s, how = scaled
            src = f"run.step_time on {measured_on}" + (f", scaled by {table().where()}: {how}" if how else "")
            inputs.append(Input(name="step time", value=f"{step_s:.3g} s", source=src, estimate=bool(how)))
            return left * step_s
    if run.max_runtime is not None:
        inputs.append(Input(name="work", value=format_duration(run.max_runtime),
                            source="run.max_runtime as the bound (no step rate known yet)", estimate=True))  # fmt: skip
        return run.max_runtime.total_seconds()
    return None


def _checkpoints(spec: JobSpec, inputs: list[Input]) -> tuple[float | None, float]:
    from gpujob.layout.machine import checkpoint_interval_s

    ck = spec.checkpoint
    if ck is None:
        inputs.append(
            Input(name="checkpoints", value="none", source="no checkpoint block: a loss redoes everything")
        )
        return None, 0.0
    interval = float(checkpoint_interval_s(spec) or 0)
    write = ck.write_time.total_seconds() if ck.write_time is not None else 0.0
    inputs.append(Input(name="checkpoint interval", value=f"{interval:g} s", source="checkpoint.interval"))
    inputs.append(Input(name="checkpoint write", value=f"{write:g} s",
                        source="checkpoint.write_time" if ck.write_time is not None else "unset: taken as 0 s"))  # fmt: skip
    return interval, write


def _interruptions(spec: JobSpec, now: Now, h: History, inputs: list[Input]) -> float:
    lost = h.interruptions()
    gpu_h = h.gpu_seconds / 3600
    if lost and gpu_h > 0:
        per_h = len(lost) / max(gpu_h, MIN_HISTORY_GPU_H)
        src = f"this job: {len(lost)} in {gpu_h:.1f} GPU-h (watch's ledger)"
        inputs.append(Input(name="interruptions", value=f"{per_h:.3g}/h", source=src))
        return per_h
    ck = spec.checkpoint
    if now.spot and ck is not None and ck.mtbf is not None:
        per_h = 3600 / ck.mtbf.total_seconds()
        inputs.append(Input(name="interruptions", value=f"{per_h:.3g}/h", source="checkpoint.mtbf"))
        return per_h
    tiers = table().preemptions_per_hour.get(spec.platform)
    per_h = (tiers.spot if now.spot else tiers.on_demand) if tiers is not None else 0.0
    tier = "spot" if now.spot else "on-demand"
    src = f"{table().where()}, {spec.platform} {tier}" + (f": {tiers.source}" if tiers is not None else "")
    inputs.append(Input(name="interruptions", value=f"{per_h:.3g}/h", source=src, estimate=True))
    return per_h


def _recovery(spec: JobSpec, h: History, inputs: list[Input]) -> float:
    known = [s for s in h.interruptions() if s >= 0]
    if known:
        value = statistics.median(known)
        src = f"this job: median of {len(known)} measured recoveries (watch's ledger)"
        inputs.append(Input(name="recovery", value=f"{value:.0f} s", source=src))
        return value
    fig = table().recovery_s.get(spec.platform)
    value = fig.seconds if fig is not None else 0.0
    src = f"{table().where()}" + (f": {fig.source}" if fig is not None else "")
    inputs.append(Input(name="recovery", value=f"{value:.0f} s", source=src, estimate=True))
    return value
