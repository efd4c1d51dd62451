"""The rate maths (gpujob.cost.rates) the plan, status, cost and audit share: which price a GPU takes and
how it is labelled, every meter a footprint runs, how an action's billing reads, and how money prints."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpujob.cost.model import MeterLine
from gpujob.cost.rates import (
    Footprint,
    GpuRate,
    addon_line,
    billing,
    billing_summary,
    gpu_rate,
    hourly_total,
    meters,
    monthly_total,
    network_volume_line,
    quote_available,
    rate,
    tier_line,
    usd,
)
from gpujob.live import PriceQuote
from gpujob.profile import load_profile

RP = load_profile("runpod")
PS = load_profile("paperspace")
AT = datetime(2026, 11, 2, 10, tzinfo=UTC)


def src(profile, as_of) -> str:  # type: ignore[no-untyped-def]
    return f"profile {profile.platform} {as_of}"


def quote(**kw: object) -> PriceQuote:
    base: dict[str, object] = dict(platform="runpod", gpu_id="NVIDIA A100 80GB PCIe", cloud="secure",
                                   price_hour=1.5, source="runpod API", as_of=AT)  # fmt: skip
    return PriceQuote(**(base | kw))  # type: ignore[arg-type]


def ml(what: str, hour: float = 0.0, month: float = 0.0, cap: float | None = None) -> MeterLine:
    return MeterLine(what=what, usd_per_hour=hour, usd_per_month=month, monthly_cap_usd=cap, source="t")


# --- money as printed ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (None, "$?"),
        (0, "$0.00"),
        (1234.5, "$1,234.50"),
        (-2.5, "-$2.50"),
        (0.05, "$0.05"),  # whole cents stay cents
        (0.0045, "$0.0045"),
        (-0.0045, "-$0.0045"),
        (0.1, "$0.10"),
        (0.105, "$0.10"),  # from a dime up, cents
        (0.099, "$0.0990"),
        (0.012, "$0.0120"),
    ],
)
def test_usd_prints_cents_and_keeps_four_places_under_a_dime(amount: float | None, shown: str) -> None:
    assert usd(amount) == shown


def test_a_rate_reads_by_the_hour_for_compute_and_by_the_month_for_storage() -> None:
    assert rate(ml("GPU 1× A6000", hour=1.89, month=1360.8)) == "$1.89/h"
    assert rate(ml("dynamic public IP (while running)", hour=0.0045, month=3.0, cap=3.0)) == "$0.0045/h"
    assert rate(ml("volume disk 100 GB", hour=0.0139, month=10.0)) == "$10.00/mo"
    assert rate(ml("static public IP", hour=0.0045, month=3.0, cap=3.0)) == "$3.00/mo (monthly cap)"
    assert rate(ml("block storage 50 GB", hour=0.0042, month=3.0, cap=120.0)) == "$3.00/mo"


# --- GPU prices ------------------------------------------------------------------------------------


def test_a_gpu_takes_the_profile_price_of_its_cloud_and_kind() -> None:
    a100 = RP.gpu("A100-80GB")
    assert a100 is not None
    at = src(RP, a100.as_of)
    assert gpu_rate(RP, [], "A100-80GB") == GpuRate("GPU 1× A100-80GB (secure, on-demand)", 1.64, at)
    assert gpu_rate(RP, [], "A100-80GB", count=2) == GpuRate("GPU 2× A100-80GB (secure, on-demand)", 3.28, at)
    assert gpu_rate(RP, [], "A100-80GB", spot=True) == GpuRate("GPU 1× A100-80GB (secure, spot)", 1.19, at)
    assert gpu_rate(RP, [], "A100-80GB", cloud="community") == GpuRate(
        "GPU 1× A100-80GB (community, on-demand)", a100.price_hour_community, at
    )
    assert gpu_rate(RP, [], "A100-80GB", cloud="community", spot=True) == GpuRate(
        "GPU 1× A100-80GB (community, spot)",
        1.19,
        at + " (secure spot price: no community spot price is listed)",
    )
    # no community price listed: the secure one
    h100 = RP.gpu("H100-80GB")
    assert h100 is not None and h100.price_hour_community is None
    assert gpu_rate(RP, [], "H100-80GB", cloud="community").usd_per_hour == h100.price_hour  # type: ignore[union-attr]
    assert gpu_rate(RP, [], "H100-PCIE", spot=True) is None  # no spot price listed
    assert gpu_rate(RP, [], "no-such-gpu") is None


def test_a_paperspace_gpu_has_no_cloud_and_a_multi_gpu_id_counts_its_gpus() -> None:
    a6000 = PS.gpu("A6000")
    assert a6000 is not None
    assert gpu_rate(PS, [], "A6000") == GpuRate("GPU 1× A6000", 1.89, src(PS, a6000.as_of))
    eight = gpu_rate(PS, [], "A100-80Gx8", count=1)
    assert (
        eight is not None and eight.label == "GPU 8× A100-80GB" and eight.usd_per_hour == pytest.approx(25.44)
    )


def test_a_live_quote_wins_over_the_list_price() -> None:
    q = quote(price_hour=1.5)
    assert gpu_rate(RP, [q], "A100-80GB") == GpuRate(
        "GPU 1× A100-80GB (secure, on-demand)", 1.5, "runpod API 2026-11-02"
    )
    two = quote(price_hour=1.5, gpu_count=2)
    assert gpu_rate(RP, [two], "A100-80GB", count=2).usd_per_hour == 3.0  # type: ignore[union-attr]
    spot = quote(price_hour=0.9, spot=True)
    assert gpu_rate(RP, [spot], "A100-80GB").usd_per_hour == 1.64  # type: ignore[union-attr]  # a spot quote is not on-demand
    assert gpu_rate(RP, [spot], "A100-80GB", spot=True).usd_per_hour == 0.9  # type: ignore[union-attr]
    community = quote(price_hour=1.1, cloud="community")
    assert gpu_rate(RP, [community], "A100-80GB").usd_per_hour == 1.64  # type: ignore[union-attr]
    assert gpu_rate(RP, [community], "A100-80GB", cloud="community").usd_per_hour == 1.1  # type: ignore[union-attr]


def test_quote_available_reads_the_matching_quote_only() -> None:
    assert quote_available(RP, [quote(available=True)], "A100-80GB", False) is True
    assert quote_available(RP, [quote(available=False)], "A100-80GB", False) is False
    assert quote_available(RP, [quote(available=True)], "A100-80GB", True) is None  # no spot quote
    assert quote_available(RP, [quote(available=True, cloud="community")], "A100-80GB", False) is None
    assert quote_available(
        RP, [quote(available=True, cloud="community")], "A100-80GB", False, cloud="community"
    )
    assert quote_available(RP, [quote(available=True, gpu_count=2)], "A100-80GB", False, count=2)
    assert quote_available(RP, [quote(available=True)], "no-such-gpu", False) is None
    ps = quote(platform="paperspace", gpu_id="A6000", cloud=None, available=True)
    assert quote_available(PS, [ps], "A6000", False) is True


# --- meters ----------------------------------------------------------------------------------------


def test_every_meter_of_a_runpod_footprint() -> None:
    fp = Footprint(
        machine="stopped", container_disk_gb=20, volume_gb=100, network_volume=("ckpts", 200, "standard"),
        extra_volumes=(("old", 50, "high-performance"),),
    )  # fmt: skip
    got = meters(fp, RP)
    assert sorted(got) == [
        "network_volume:200",
        "network_volume:old:50",
        "volume_disk:100",
    ]  # no container disk
    assert got["volume_disk:100"].what == "volume disk 100 GB (stopped, 2×)"
    assert got["volume_disk:100"].usd_per_month == 20.0
    assert got["network_volume:200"].what == "network volume ckpts 200 GB (standard)"
    assert got["network_volume:200"].usd_per_month == pytest.approx(14.0)
    old = got["network_volume:old:50"]
    assert old.what == "network volume old 50 GB (high-performance)" and old.usd_per_month == pytest.approx(
        7.0
    )
    running = meters(fp.with_(machine="running"), RP)
    assert running["volume_disk:100"].what == "volume disk 100 GB"
    assert running["container_disk:20"].usd_per_month == pytest.approx(2.0)
    default = meters(Footprint(machine="running"), RP)
    assert list(default) == ["container_disk:5"]  # the profile's default size; no volume disk
    assert meters(Footprint(), RP) == {}


def test_a_stopped_volume_disk_at_the_running_rate_says_only_stopped() -> None:
    same = RP.model_copy(update={"tiers": [t.model_copy(update={"price_gb_month_stopped": t.price_gb_month_running})
                                           if t.id == "volume_disk" else t for t in RP.tiers]})  # fmt: skip
    got = meters(Footprint(machine="stopped", volume_gb=100), same)
    assert got["volume_disk:100"].what == "volume disk 100 GB (stopped)"
    free = RP.model_copy(update={"tiers": [t.model_copy(update={"price_gb_month_running": 0.0})
                                           if t.id == "volume_disk" else t for t in RP.tiers]})  # fmt: skip
    assert (
        meters(Footprint(machine="stopped", volume_gb=100), free)["volume_disk:100"].what
        == "volume disk 100 GB"
    )


def test_every_meter_of_a_paperspace_footprint() -> None:
    gpu = GpuRate("GPU 1× A6000", 1.89, "p")
    fp = Footprint(machine="running", gpu=gpu, volume_gb=100, static_ip=True, dynamic_ip=True,
                   snapshots=(("s1", 100), ("s2", 4000)))  # fmt: skip
    got = meters(fp, PS)
    assert sorted(got) == [
        "block_storage:100",
        "dynamic_ip",
        "gpu:GPU 1× A6000",
        "snapshot:s1",
        "snapshot:s2",
        "static_ip",
    ]
    assert got["gpu:GPU 1× A6000"].usd_per_month == pytest.approx(1.89 * 720)
    assert got["block_storage:100"].what == "block storage 100 GB"
    assert got["block_storage:100"].usd_per_month == pytest.approx(6.0)
    assert got["dynamic_ip"].what == "dynamic public IP (while running)"
    ip = got["static_ip"]
    assert (ip.what, ip.usd_per_hour, ip.usd_per_month, ip.monthly_cap_usd) == (
        "static public IP",
        0.0045,
        3.0,
        3.0,
    )
    s1 = got["snapshot:s1"]
    assert (s1.what, s1.usd_per_month, s1.monthly_cap_usd) == (
        "snapshot s1 100 GB",
        pytest.approx(29.0),
        None,
    )
    assert s1.usd_per_hour == pytest.approx(29.0 / 720)
    assert got["snapshot:s2"].usd_per_month == pytest.approx(1160.0)
    stopped = meters(fp.with_(machine="stopped", gpu=None), PS)
    assert "dynamic_ip" not in stopped and "static_ip" in stopped  # a dynamic IP bills only while running
    assert list(meters(Footprint(machine="stopped"), PS)) == ["block_storage:50"]  # the default disk


def test_capped_meters_accrue_hourly_up_to_the_cap() -> None:
    bs = PS.tier("block_storage")
    line = tier_line(PS, bs, 4000, what="block storage 4000 GB")
    assert line is not None
    assert line.usd_per_month == 120.0 and line.monthly_cap_usd == 120.0
    assert line.usd_per_hour == pytest.approx(240.0 / 720)  # the accrual rate before the cap
    assert line.source == src(PS, bs.as_of)
    assert tier_line(RP, RP.tier("container_disk"), 20, what="x", stopped=True) is None  # bills nothing
    vd = tier_line(RP, RP.tier("volume_disk"), 100, what="x", stopped=True)
    assert vd is not None and vd.usd_per_month == 20.0
    nv = network_volume_line(RP, 100, what="nv")
    assert nv is not None and nv.usd_per_month == pytest.approx(7.0)
    with pytest.raises(KeyError):
        network_volume_line(PS, 100, what="nv")


def test_an_addon_line_prices_by_size_and_names_its_source() -> None:
    snap = PS.addon("snapshot")
    line = addon_line(PS, "snapshot", what="snap", gb=100)
    assert (line.usd_per_month, line.monthly_cap_usd, line.source) == (
        pytest.approx(29.0),
        None,
        src(PS, snap.as_of),
    )
    assert addon_line(PS, "snapshot", what="snap").usd_per_month == 0.0
    ip = addon_line(PS, "static_ip", what="ip")
    assert (ip.usd_per_hour, ip.usd_per_month, ip.monthly_cap_usd) == (0.0045, 3.0, 3.0)


def test_totals_are_exact_to_nine_places() -> None:
    lines = {"a": ml("a", hour=1 / 3, month=0.1), "b": ml("b", hour=1 / 3, month=0.2)}
    assert hourly_total(lines) == 0.666666667
    assert monthly_total(lines) == 0.3  # not 0.30000000000000004
    assert hourly_total({}) == 0.0 and monthly_total({}) == 0.0


# --- an action's billing ---------------------------------------------------------------------------


def test_billing_reads_starts_stops_and_what_keeps_billing() -> None:
    gpu = GpuRate("GPU 1× A100-80GB (secure, on-demand)", 1.64, "p")
    running = Footprint(machine="running", gpu=gpu, container_disk_gb=20, volume_gb=100,
                        network_volume=("ckpts", 100, "standard"))  # fmt: skip
    stop = billing(running, running.with_(machine="stopped"), RP)
    assert [m.what for m in stop.stops] == ["GPU 1× A100-80GB (secure, on-demand)", "container disk 20 GB"]
    assert stop.starts == []
    assert [m.what for m in stop.keeps] == [
        "volume disk 100 GB (stopped, 2×)",
        "network volume ckpts 100 GB (standard)",
    ]
    assert stop.hourly_before == pytest.approx(1.64 + 2 / 720 + 10 / 720 + 7 / 720, abs=1e-9)
    assert stop.hourly_after == pytest.approx(20 / 720 + 7 / 720, abs=1e-9)
    assert stop.summary == (
        "GPU 1× A100-80GB (secure, on-demand) stops ($1.64/h); container disk 20 GB stops ($2.00/mo); "
        "volume disk 100 GB (stopped, 2×) now bills $20.00/mo; still billing: network volume ckpts 100 GB "
        "(standard) $7.00/mo"
    )
    start = billing(running.with_(machine="stopped"), running, RP)
    assert [m.what for m in start.starts] == ["GPU 1× A100-80GB (secure, on-demand)", "container disk 20 GB"]
    assert start.summary.startswith("GPU 1× A100-80GB (secure, on-demand) starts ($1.64/h); container disk")
    assert billing(running, running, RP).summary == "no change to billing"
    grow = billing(running, running.with_(network_volume=("ckpts", 200, "standard")), RP)
    assert grow.summary.startswith(
        "network volume ckpts 200 GB (standard) starts ($14.00/mo); network volume ckpts 100 GB (standard) "
        "stops ($7.00/mo); still billing: GPU 1× A100-80GB (secure, on-demand) $1.64/h, "
    )


def test_billing_summary_without_changes_or_after() -> None:
    a, b = ml("GPU x", hour=1.0), ml("disk", month=2.0)
    assert billing_summary([a], [], [b]) == "GPU x starts ($1.00/h); still billing: disk $2.00/mo"
    assert billing_summary([], [a], []) == "GPU x stops ($1.00/h)"
    assert billing_summary([], [], [b]) == "no change to billing"  # only what keeps billing: nothing to say
    assert billing_summary([], [], [b], changed={"d"}) == "no change to billing"  # no after: no changes read
    assert billing_summary([], [], [b], changed={"d"}, after={"d": b}) == "disk now bills $2.00/mo"
