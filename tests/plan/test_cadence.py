from __future__ import annotations

import math
from datetime import timedelta

import pytest

from gpujob.jobfile.model import CheckpointSpec
from gpujob.plan.cadence import cadence, expected_loss, human, young_daly


def test_young_daly_worked_example() -> None:
    # mtbf 3 h, 30 s writes: sqrt(2 * 10800 * 30) = sqrt(648000) ≈ 805 s
    assert young_daly(10800, 30) == pytest.approx(math.sqrt(648000))
    assert round(young_daly(10800, 30)) == 805


def test_expected_loss_is_half_an_interval_plus_a_write() -> None:
    assert expected_loss(900, 30) == 480
    assert expected_loss(0, 0) == 0


def test_young_daly_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        young_daly(0, 30)


def test_auto_resolves_to_the_optimum() -> None:
    ck = CheckpointSpec(dir="/w", interval="auto", mtbf=timedelta(hours=3), write_time=timedelta(seconds=30))
    c = cadence(ck, interruptible=True)
    assert c is not None
    assert c.interval_s == c.optimal_s == pytest.approx(804.984, abs=1e-3)
    assert c.expected_loss_per_preemption_s == pytest.approx(804.984 / 2 + 30, abs=1e-3)
    assert "13m 25s" in c.summary and "expected loss" in c.summary


def test_explicit_interval_is_compared_with_the_optimum() -> None:
    ck = CheckpointSpec(
        dir="/w", interval=timedelta(hours=2), mtbf=timedelta(hours=1), write_time=timedelta(minutes=1)
    )
    c = cadence(ck)
    assert c is not None
    assert c.interval_s == 7200 and c.optimal_s == pytest.approx(math.sqrt(2 * 3600 * 60))
    assert c.expected_loss_per_preemption_s == 3660
    assert "optimum 10m 57s" in c.summary


def test_no_loss_claim_without_interruptions() -> None:
    c = cadence(CheckpointSpec(dir="/w", interval=timedelta(minutes=30)))
    assert c is not None and c.summary == "interval 30m"


@pytest.mark.parametrize(
    ("s", "text"), [(0, "0s"), (45, "45s"), (805, "13m 25s"), (7200, "2h"), (3661, "1h 1m 1s")]
)
def test_human(s: float, text: str) -> None:
    assert human(s) == text


def test_several_gpus_multiply_the_loss_in_gpu_time_and_change_no_interval() -> None:
    ck = CheckpointSpec(dir="/w", interval="auto", mtbf=timedelta(hours=3), write_time=timedelta(seconds=30))
    one, eight = cadence(ck, interruptible=True), cadence(ck, interruptible=True, gpu_count=8)
    assert one is not None and eight is not None
    assert eight.interval_s == one.interval_s  # a note only: nothing relaunches
    assert "GPU time" not in one.summary
    assert f"× 8 GPUs = {human(one.expected_loss_per_preemption_s * 8)} of GPU time" in eight.summary
