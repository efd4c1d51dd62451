"""Checkpoint cadence (Young/Daly): how often to checkpoint, and what a preemption costs.

W = sqrt(2 · mtbf · write_time) minimises rollback plus checkpoint overhead. With interval I, a
preemption loses on average half an interval of work plus the write that was in flight: I/2 + C.
"""

from __future__ import annotations

import math

from gpujob.jobfile.model import CheckpointSpec, JobSpec
from gpujob.plan.model import Cadence

QUIESCE_GRACE_S = 30.0  # at least; checkpoint.write_time stretches it (a big final save takes long)


def quiesce_grace_s(spec: JobSpec) -> float:
    """How long the teardown gate (and a stop) waits, after SIGTERM, for the run's final save before
    SIGKILL: the plan says it, gpujob.apply.quiesce waits it."""
    ck = spec.checkpoint
    write = ck.write_time.total_seconds() if ck is not None and ck.write_time is not None else 0.0
    return max(QUIESCE_GRACE_S, 2 * write + 5)


def young_daly(mtbf_s: float, write_time_s: float) -> float:
    """Optimal checkpoint interval in seconds."""
    if mtbf_s <= 0 or write_time_s < 0:
        raise ValueError("mtbf must be positive and write_time non-negative")
    return math.sqrt(2.0 * mtbf_s * write_time_s)


def expected_loss(interval_s: float, write_time_s: float) -> float:
    """Expected lost work (seconds) per preemption for a given interval."""
    return interval_s / 2.0 + write_time_s


def human(seconds: float) -> str:
    """12m 5s / 2h 30m / 45s: short and exact to the second."""
    total = round(seconds)
    h, rem = divmod(total, 3600)
    m, s = divmod(rem, 60)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "", f"{s}s" if s or total == 0 else ""]
    return " ".join(p for p in parts if p)


def cadence(ck: CheckpointSpec, *, interruptible: bool = False, gpu_count: int = 1) -> Cadence | None:
    """Advice for a checkpoint block. The expected loss is stated when interruptions are expected: a spot
    machine, or an mtbf given by the user. With several GPUs one interruption rolls every one of them back,
    so the loss is also said in GPU-time (the seed's spot-resilience reference, "distributed multiplier"):
    a note only, the interval is left as it is (changing it would relaunch the run)."""
    mtbf = ck.mtbf.total_seconds() if ck.mtbf else None
    write = ck.write_time.total_seconds() if ck.write_time else None
    optimal = young_daly(mtbf, write) if mtbf is not None and write is not None else None
    if ck.interval == "auto":
        if optimal is None:  # the spec model refuses this; stay total anyway
            return None
        interval = optimal
        head = (
            f"interval auto = √(2 · mtbf {human(mtbf or 0)} · write {human(write or 0)}) = {human(optimal)}"
        )
    else:
        interval = ck.interval.total_seconds()
        head = f"interval {human(interval)}"
        if optimal is not None:
            head += f" (Young/Daly optimum {human(optimal)})"
    loss = expected_loss(interval, write or 0.0)
    plus = "" if write is not None else " plus one checkpoint write"
    tail = f"; expected loss per interruption ≈ {human(loss)}{plus}" if interruptible or mtbf else ""
    if tail and gpu_count > 1:
        tail += (f", × {gpu_count} GPUs = {human(loss * gpu_count)} of GPU time (every GPU rolls back: a "
                 "multi-GPU job is worth checkpointing more often)")  # fmt: skip
    return Cadence(
        interval_s=round(interval, 3),
        optimal_s=round(optimal, 3) if optimal is not None else None,
        mtbf_s=mtbf,
        write_time_s=write,
        expected_loss_per_preemption_s=round(loss, 3),
        summary=head + tail,
    )
