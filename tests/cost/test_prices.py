"""The profile's price maths (gpujob.profile) with made-up tiers, so every figure is a hand sum: which rate
a state takes, the over-1 TB boundary, the monthly cap, hourly accrual and started hours."""

from __future__ import annotations

from datetime import date

import pytest

from gpujob.profile import AddonPrice, StorageTier, billed_hours, load_profile

ASOF = date(2026, 1, 1)


def tier(**kw: object) -> StorageTier:
    base: dict[str, object] = dict(
        id="t", title="t", price_gb_month_running=0.1, price_gb_month_stopped=0.3, source="s", as_of=ASOF
    )
    return StorageTier(**(base | kw))  # type: ignore[arg-type]


def addon(**kw: object) -> AddonPrice:
    return AddonPrice(**({"id": "a", "source": "s", "as_of": ASOF} | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "hours"),
    [(-5, 0), (0, 0), (0.01, 0), (1, 1), (3599, 1), (3600, 1), (3600.02, 1), (3601, 2), (7200, 2), (7201, 3)],
)
def test_every_started_hour_is_billed_and_a_whole_hour_is_one(seconds: float, hours: int) -> None:
    # within a few hundredths of a second of a whole hour (ISO milliseconds) it is that hour
    assert billed_hours(seconds) == hours


def test_a_tier_bills_its_rate_for_the_state_it_is_in() -> None:
    t = tier()
    assert t.month_price(100) == pytest.approx(10.0)
    assert t.month_price(100, stopped=True) == pytest.approx(30.0)
    assert t.month_price(100, stopped=False) == pytest.approx(10.0)
    assert t.month_price(0) == 0.0
    assert t.month_price(-10, stopped=True) == 0.0
    assert t.hourly_price(720) == pytest.approx(0.1)
    assert t.hourly_price(720, stopped=True) == pytest.approx(0.3)


def test_over_one_terabyte_the_marginal_rate_applies() -> None:
    t = tier(price_gb_month_over_1tb=0.05)
    assert t.month_price(1000) == pytest.approx(100.0)  # exactly 1 TB: all at the base rate
    assert t.month_price(1500) == pytest.approx(100.0 + 500 * 0.05)
    assert t.month_price(1500, stopped=True) == pytest.approx(300.0 + 500 * 0.05)
    free = tier(price_gb_month_running=0.0, price_gb_month_over_1tb=0.05)
    assert free.month_price(1500) == 0.0  # a free tier stays free past 1 TB
    assert tier().month_price(1500) == pytest.approx(150.0)  # no over-1 TB rate: one rate throughout


def test_the_monthly_cap_bounds_the_month() -> None:
    capped = tier(monthly_cap_usd=12.0)
    assert capped.month_price(100) == pytest.approx(10.0)
    assert capped.month_price(200) == pytest.approx(12.0)
    assert capped.hourly_price(200) == pytest.approx(12.0 / 720)


def test_a_tier_accrues_by_the_hour_up_to_the_month() -> None:
    t = tier()
    assert t.accrued(720, 10) == pytest.approx(1.0)
    assert t.accrued(720, 10, stopped=True) == pytest.approx(3.0)
    assert t.accrued(720, 0.5) == pytest.approx(0.05)
    assert t.accrued(720, 800, stopped=True) == pytest.approx(216.0)  # the month's price, no more
    assert t.accrued(720, 800) == pytest.approx(72.0)
    assert t.accrued(720, 0) == 0.0
    assert t.accrued(720, -3, stopped=True) == 0.0


def test_an_addon_bills_by_the_hour_and_by_size() -> None:
    ip = addon(price_hour=0.01)
    assert ip.hourly_price() == pytest.approx(0.01)
    assert ip.month_price() == pytest.approx(7.2)
    snap = addon(price_gb_month=0.36)
    assert snap.hourly_price(100) == pytest.approx(0.05)
    assert snap.hourly_price(-5) == 0.0
    assert snap.month_price(100) == pytest.approx(36.0)
    both = addon(price_hour=0.01, price_gb_month=0.36)
    assert both.hourly_price(100) == pytest.approx(0.06)
    assert addon().hourly_price(100) == 0.0


def test_an_addon_accrues_up_to_its_cap() -> None:
    ip = addon(price_hour=0.01, monthly_cap_usd=3.0)
    assert ip.month_price() == pytest.approx(3.0)
    assert ip.accrued(100) == pytest.approx(1.0)
    assert ip.accrued(0.5) == pytest.approx(0.005)
    assert ip.accrued(500) == pytest.approx(3.0)
    assert ip.accrued(0) == 0.0
    assert ip.accrued(-1) == 0.0
    snap = addon(price_gb_month=0.36)
    assert snap.accrued(10, 100) == pytest.approx(0.5)
    assert snap.accrued(1000, 100) == pytest.approx(36.0)


def test_profile_lookups_find_the_named_price_or_say_which_is_missing() -> None:
    rp, ps = load_profile("runpod"), load_profile("paperspace")
    assert rp.tier("volume_disk").id == "volume_disk"
    with pytest.raises(KeyError, match="runpod profile has no storage tier 'nope'"):
        rp.tier("nope")
    assert ps.addon("snapshot").id == "snapshot"
    with pytest.raises(KeyError):
        rp.addon("static_ip")
    assert rp.network_volume_tier().id == "network_volume"
    assert rp.network_volume_tier("high-performance").id == "network_volume_hp"
    with pytest.raises(KeyError, match="paperspace has no network volume tier 'standard'"):
        ps.network_volume_tier()
    assert rp.action("terminate").action == "terminate"
    with pytest.raises(KeyError):
        rp.action("explode")
