"""The forecast engine against a seeded, event-driven simulation of the process it models: work in
checkpointed stretches, interruptions at exponential gaps of running time, the work since the last
completed checkpoint lost and a recovery paid at each. Tolerance: the analytic P50 and P90 of the wall
time are within TOLERANCE (relative) of the simulated ones (docs/forecast.md says the same)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from gpujob.cost.forecast import Input, Work, forecast, quantiles

TOLERANCE = 0.03
RUNS = 4000
NOW = datetime(2026, 12, 7, tzinfo=UTC)


def simulate(w: Work, rng: random.Random) -> float:
    """One run's wall time, event by event."""
    tau = w.interval_s if w.interval_s else w.work_s
    done = 0.0  # work safely in a checkpoint
    t = 0.0
    next_hit = rng.expovariate(w.per_s) if w.per_s > 0 else float("inf")
    while done < w.work_s - 1e-9:
        chunk = min(tau, w.work_s - done)
        need = chunk + (w.write_s if chunk == tau and done + chunk < w.work_s else 0.0)
        if next_hit >= need:
            next_hit -= need
            t += need
            done += chunk
        else:
            t += next_hit + w.recovery_s
            next_hit = rng.expovariate(w.per_s)
    return t


def sim_quantiles(w: Work, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    times = sorted(simulate(w, rng) for _ in range(RUNS))
    return times[int(0.5 * RUNS)], times[int(0.9 * RUNS)]


CASES = [
    # 10 h of work, 30 min checkpoints of 1 min, an interruption every 10 h, 5 min to recover
    Work(work_s=36_000, interval_s=1800, write_s=60, per_s=0.1 / 3600, recovery_s=300),
    # 48 h, hourly checkpoints, one interruption every 4 h: many interruptions
    Work(work_s=172_800, interval_s=3600, write_s=120, per_s=0.25 / 3600, recovery_s=600),
    # 2 h, 10 min checkpoints, one every 2 h: few, so the mixture is far from normal
    Work(work_s=7200, interval_s=600, write_s=10, per_s=0.5 / 3600, recovery_s=240),
]


@pytest.mark.parametrize("w", CASES)
def test_p50_p90_within_tolerance_of_a_seeded_simulation(w: Work) -> None:
    (p50, p90), _ = quantiles(w)
    s50, s90 = sim_quantiles(w, seed=39)
    assert p50 <= p90
    assert abs(p50 - s50) / s50 <= TOLERANCE, (p50, s50)
    assert abs(p90 - s90) / s90 <= TOLERANCE, (p90, s90)


def test_no_interruptions_is_the_work_plus_the_checkpoint_writes() -> None:
    w = Work(work_s=3600, interval_s=600, write_s=60, per_s=0.0, recovery_s=300)
    (p50, p90), mu = quantiles(w)
    assert p50 == p90 == pytest.approx(3600 * 1.1)
    assert mu == 0


def test_interruptions_faster_than_checkpoints_have_no_finish() -> None:
    w = Work(work_s=3600, interval_s=3600, write_s=0, per_s=1 / 1000, recovery_s=0)
    assert forecast(w, now=NOW, usd_per_hour=1.0, spent_usd=0.0, inputs=[]) is None


def test_cost_is_spend_so_far_plus_the_rate_over_the_wall_time() -> None:
    w = CASES[0]
    inputs = [Input(name="step rate", value="2/s", source="run.step_time", estimate=True)]
    f = forecast(w, now=NOW, usd_per_hour=2.0, spent_usd=10.0, inputs=inputs)
    assert f is not None
    assert f.p50_usd == pytest.approx(10.0 + 2.0 * f.p50_hours, abs=1e-3)
    assert f.p50_usd <= f.p90_usd and f.p50_finish <= f.p90_finish
    assert f.estimate
    assert "(estimate)" in f.line()
