"""The on-box budget (gpujob.cost.onbox, used by the launch's guard): the seconds the pod may run before
budget.max_total_usd are counted at its whole running rate, its storage included, not its GPU's alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpujob.apply.runtime.launch import ONBOX_MARGIN_S, onbox_guard
from gpujob.apply.runtime.remote import Target
from gpujob.cost import rates
from gpujob.cost.onbox import running_lines, seconds_left
from gpujob.jobfile.model import JobSpec
from gpujob.live import LiveResource
from gpujob.plan.cadence import quiesce_grace_s
from gpujob.profile import load_profile
from gpujob.ssh.guard import GUARD_EVERY_S

RP = load_profile("runpod")


def pod(**kw: object) -> LiveResource:
    base: dict[str, object] = dict(
        platform="runpod", kind="pod", id="p1", name="p1", status="running", gpu_id="NVIDIA A100 80GB PCIe",
        gpu_count=1, cost_per_hour=2.0, container_disk_gb=50, volume_gb=200,
    )  # fmt: skip
    return LiveResource(**(base | kw))  # type: ignore[arg-type]


def test_the_running_rate_counts_the_disks_and_the_network_volume() -> None:
    lines = running_lines(RP, pod(), network_volume=("data", 1000, "standard"))
    what = {k.split(":")[0] for k in lines}
    assert {"gpu", "container_disk", "volume_disk", "network_volume"} <= what
    assert lines[next(k for k in lines if k.startswith("gpu:"))].usd_per_hour == 2.0  # the pod's own rate
    storage = rates.hourly_total(lines) - 2.0
    # 50 GB container + 200 GB volume + 1 TB network volume, by the profile's per-GB-month prices
    expected = sum(
        m.usd_per_hour
        for k, m in rates.meters(
            rates.Footprint(machine="running", container_disk_gb=50, volume_gb=200,
                            network_volume=("data", 1000, "standard")), RP,
        ).items()
    )  # fmt: skip
    assert storage == pytest.approx(expected) and storage > 0.05


def test_a_stopped_pod_is_counted_at_its_running_rate() -> None:
    stopped = running_lines(RP, pod(status="stopped"))
    assert any(k.startswith("gpu:") for k in stopped)
    assert rates.hourly_total(stopped) == pytest.approx(rates.hourly_total(running_lines(RP, pod())))


def test_seconds_left_subtract_what_storage_accrues() -> None:
    lines = running_lines(RP, pod(), network_volume=("data", 1000, "standard"))
    rate = rates.hourly_total(lines)
    left = seconds_left(100.0, 40.0, lines, reserve_s=90)
    assert left is not None
    assert left.seconds == int(60.0 / rate * 3600 - 90)
    assert left.seconds < int(60.0 / 2.0 * 3600 - 90)  # the GPU-only count would overspend
    assert left.usd_per_hour == rate
    assert (
        f"${rate:,.4f}/h" in left.text and "GPU $2.00/h" in left.text and "network volume data" in left.text
    )
    assert seconds_left(10.0, 20.0, lines, reserve_s=0).seconds == 0  # type: ignore[union-attr]
    assert seconds_left(10.0, 0.0, {}, reserve_s=0) is None


def test_the_launch_guard_gets_the_seconds_at_the_whole_rate(tmp_path: Path) -> None:
    spec = JobSpec.model_validate({
        "version": 1, "name": "guarded", "platform": "runpod", "machine": {"gpu": "A100-80GB"},
        "storage": {"volume_gb": 200, "network_volume": {"name": "data", "size_gb": 1000}},
        "run": {"command": "python train.py"}, "budget": {"max_total_usd": 50},
    })  # fmt: skip
    target = Target(spec, tmp_path / "job.yaml", None, pod(), tmp_path / "state")  # type: ignore[arg-type]
    guard = onbox_guard(target)
    lines = running_lines(RP, pod(), network_volume=("data", 1000, "standard"))
    rate = rates.hourly_total(lines)
    reserve = GUARD_EVERY_S + quiesce_grace_s(spec) + ONBOX_MARGIN_S
    assert guard.budget_s == int(50.0 / rate * 3600 - reserve)
    assert f"at the pod's ${rate:,.4f}/h" in guard.budget_text and "storage and IP" in guard.budget_text
