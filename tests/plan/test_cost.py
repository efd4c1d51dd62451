"""Money maths: every number equals the profile price times the size, exactly; each line names its source."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from gpujob.cost.rates import (
    Footprint,
    GpuRate,
    billing,
    gpu_rate,
    hourly_total,
    meters,
    monthly_total,
    rate,
    usd,
)
from gpujob.live import PriceQuote
from gpujob.profile import HOURS_PER_MONTH, load_profile

RP = load_profile("runpod")
PS = load_profile("paperspace")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def one(lines: dict, prefix: str):  # type: ignore[no-untyped-def]
    found = [m for k, m in lines.items() if k.startswith(prefix)]
    assert len(found) == 1, lines
    return found[0]


def test_stopped_runpod_volume_disk_is_twice_the_running_price() -> None:
    stopped = one(meters(Footprint(machine="stopped", volume_gb=100), RP), "volume_disk")
    running = one(meters(Footprint(machine="running", volume_gb=100), RP), "volume_disk")
    assert stopped.usd_per_month == 100 * RP.tier("volume_disk").price_gb_month_stopped == 20.00
    assert running.usd_per_month == 100 * RP.tier("volume_disk").price_gb_month_running == 10.00
    assert "2×" in stopped.what
    assert stopped.usd_per_hour == pytest.approx(20.0 / HOURS_PER_MONTH, abs=1e-9)


def test_container_disk_bills_only_while_running() -> None:
    running = meters(Footprint(machine="running", container_disk_gb=20), RP)
    assert (
        one(running, "container_disk").usd_per_month == 20 * RP.tier("container_disk").price_gb_month_running
    )
    assert not any(
        k.startswith("container_disk") for k in meters(Footprint(machine="stopped", container_disk_gb=20), RP)
    )


def test_unset_container_disk_uses_the_profile_default() -> None:
    line = one(meters(Footprint(machine="running"), RP), "container_disk")
    assert line.what == f"container disk {RP.tier('container_disk').default_gb} GB"


@pytest.mark.parametrize(
    ("tier", "tier_id"), [("standard", "network_volume"), ("high-performance", "network_volume_hp")]
)
def test_network_volume_bills_the_same_with_or_without_a_pod(tier: str, tier_id: str) -> None:
    alone = one(meters(Footprint(network_volume=("ckpts", 200, tier)), RP), "network_volume")
    parked = one(
        meters(Footprint(machine="stopped", network_volume=("ckpts", 200, tier)), RP), "network_volume"
    )
    assert (
        alone.usd_per_month == parked.usd_per_month == round(200 * RP.tier(tier_id).price_gb_month_running, 6)
    )


def test_paperspace_static_ip_is_capped_per_month() -> None:
    ip = meters(Footprint(static_ip=True), PS)["static_ip"]
    addon = PS.addon("static_ip")
    assert ip.usd_per_hour == addon.price_hour
    assert ip.usd_per_month == min(addon.price_hour * HOURS_PER_MONTH, addon.monthly_cap_usd) == 3.00  # type: ignore[operator]
    assert rate(ip) == "$3.00/mo (monthly cap)"


def test_paperspace_snapshots_and_block_storage() -> None:
    lines = meters(Footprint(machine="stopped", volume_gb=100, snapshots=(("snap-1", 50),)), PS)
    assert (
        lines["snapshot:snap-1"].usd_per_month == round(50 * PS.addon("snapshot").price_gb_month, 6) == 14.50
    )  # type: ignore[arg-type,operator]
    assert one(lines, "block_storage").usd_per_month == 100 * PS.tier("block_storage").price_gb_month_stopped
    big = one(meters(Footprint(machine="stopped", volume_gb=2000), PS), "block_storage")
    assert big.usd_per_month == PS.tier("block_storage").monthly_cap_usd  # capped


def test_gpu_rate_prefers_a_live_quote_and_names_it() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    q = PriceQuote(
        platform="runpod",
        gpu_id="NVIDIA A100 80GB PCIe",
        cloud="secure",
        spot=True,
        price_hour=1.05,
        source="graphql gpuTypes",
        as_of=now,
    )
    live = gpu_rate(RP, [q], "A100-80GB", count=2, spot=True)
    assert live is not None and live.usd_per_hour == 2.10 and live.source == "graphql gpuTypes 2026-11-29"
    listed = gpu_rate(RP, [q], "A100-80GB", count=1, spot=False)
    offer = RP.gpu("A100-80GB")
    assert listed is not None and offer is not None
    assert listed.usd_per_hour == offer.price_hour and listed.source == f"profile runpod {offer.as_of}"
    community = gpu_rate(RP, [], "A100-80GB", cloud="community")
    assert community is not None and community.usd_per_hour == offer.price_hour_community


def test_gpu_rate_for_paperspace_multi_gpu_machine_type() -> None:
    r = gpu_rate(PS, [], "A4000x2")
    offer = PS.gpu("A4000")
    assert r is not None and offer is not None
    assert r.usd_per_hour == pytest.approx(2 * offer.price_hour) and r.label == "GPU 2× A4000"
    assert gpu_rate(PS, [], "NO-SUCH-GPU") is None


def test_every_meter_names_a_dated_source() -> None:
    gpu = gpu_rate(RP, [], "H100-80GB")
    fp = Footprint(machine="running", gpu=gpu, volume_gb=10, network_volume=("x", 10, "standard"))
    for line in list(meters(fp, RP).values()) + list(
        meters(Footprint(machine="stopped", static_ip=True, snapshots=(("s", 1),)), PS).values()
    ):
        assert DATE.search(line.source), line


def test_stop_billing_reads_like_the_issue() -> None:
    gpu = GpuRate("GPU 1× A100-80GB (secure, on-demand)", 2.49, "profile runpod 2026-06-01")
    before = Footprint(machine="running", gpu=gpu, container_disk_gb=20, volume_gb=100)
    b = billing(before, before.with_(machine="stopped"), RP)
    assert [m.what for m in b.stops] == ["GPU 1× A100-80GB (secure, on-demand)", "container disk 20 GB"]
    assert [(m.what, m.usd_per_month) for m in b.keeps] == [("volume disk 100 GB (stopped, 2×)", 20.0)]
    assert b.hourly_after == pytest.approx(20.0 / 720, abs=1e-6)
    assert b.hourly_before == pytest.approx(2.49 + (2.0 + 10.0) / 720, abs=1e-6)
    assert "stops ($2.49/h)" in b.summary and "$20.00/mo" in b.summary


def test_totals() -> None:
    fp = Footprint(machine="stopped", volume_gb=100, network_volume=("c", 200, "standard"))
    assert monthly_total(meters(fp, RP)) == 34.0
    assert hourly_total(meters(Footprint(), RP)) == 0.0


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (2.49, "$2.49"),
        (20.0, "$20.00"),
        (0.0278, "$0.0278"),
        (0.0, "$0.00"),
        (-1.63, "-$1.63"),
        (1234.5, "$1,234.50"),
        (None, "$?"),
    ],
)
def test_usd(amount: float | None, text: str) -> None:
    assert usd(amount) == text


def test_network_volume_capacity_past_one_terabyte_uses_the_lower_rate() -> None:
    tier = RP.tier("network_volume")
    assert tier.price_gb_month_over_1tb is not None
    big = one(meters(Footprint(network_volume=("d", 2000, "standard")), RP), "network_volume")
    # The profile's rule (StorageTier.month_price) is the one place for it: the first 1000 GB at the full
    # rate, only capacity past them at the lower one; the simulator meters the same.
    expected = 1000 * tier.price_gb_month_running + (2000 - 1000) * tier.price_gb_month_over_1tb
    assert big.usd_per_month == pytest.approx(expected, abs=1e-6)
    assert big.usd_per_month == pytest.approx(tier.month_price(2000), abs=1e-9)
