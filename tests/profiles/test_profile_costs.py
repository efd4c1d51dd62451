"""Properties of the storage / add-on cost maths in gpujob.profile."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpujob.profile import HOURS_PER_MONTH, load_profile
from tests.examples import examples

RP = load_profile("runpod")
PS = load_profile("paperspace")
ALL_TIERS = [(p.platform, t.id) for p in (RP, PS) for t in p.tiers]

gb = st.floats(min_value=0, max_value=4096, allow_nan=False)
hours = st.floats(min_value=0, max_value=31 * 24, allow_nan=False)
tier_ref = st.sampled_from(ALL_TIERS)
stopped = st.booleans()


def _tier(ref: tuple[str, str]):
    return (RP if ref[0] == "runpod" else PS).tier(ref[1])


@settings(max_examples=examples(200), deadline=None)
@given(tier_ref, gb, gb, stopped)
def test_month_price_is_monotone_in_size(ref, a, b, is_stopped) -> None:
    tier = _tier(ref)
    small, large = sorted((a, b))
    assert tier.month_price(small, stopped=is_stopped) <= tier.month_price(large, stopped=is_stopped) + 1e-9


@settings(max_examples=examples(200), deadline=None)
@given(tier_ref, gb, hours, hours, stopped)
def test_accrual_is_monotone_in_time_and_capped_by_the_month(ref, size, h1, h2, is_stopped) -> None:
    tier = _tier(ref)
    early, late = sorted((h1, h2))
    a, b = tier.accrued(size, early, stopped=is_stopped), tier.accrued(size, late, stopped=is_stopped)
    assert 0 <= a <= b + 1e-9
    assert b <= tier.month_price(size, stopped=is_stopped) + 1e-9
    if tier.monthly_cap_usd is not None:
        assert b <= tier.monthly_cap_usd + 1e-9


@settings(max_examples=examples(100), deadline=None)
@given(gb)
def test_runpod_stopped_volume_disk_is_twice_running(size) -> None:
    vd = RP.tier("volume_disk")
    assert vd.month_price(size, stopped=True) == pytest.approx(2 * vd.month_price(size))
    assert RP.tier("container_disk").month_price(size, stopped=True) == 0


@settings(max_examples=examples(100), deadline=None)
@given(st.floats(min_value=0, max_value=1000, allow_nan=False), st.floats(min_value=0, max_value=3096))
def test_network_volume_over_1tb_is_marginal(base, extra) -> None:
    nv = RP.network_volume_tier("standard")
    assert nv.month_price(base) == pytest.approx(0.07 * base)
    assert nv.month_price(1000 + extra) == pytest.approx(70 + 0.05 * extra)


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from([a.id for a in PS.addons]), gb, hours)
def test_addon_accrual_never_exceeds_its_monthly_maximum(addon_id, size, h) -> None:
    addon = PS.addon(addon_id)
    charged = addon.accrued(h, size)
    assert 0 <= charged <= addon.month_price(size) + 1e-9
    if addon.monthly_cap_usd is not None:
        assert charged <= addon.monthly_cap_usd + 1e-9


def test_static_ip_reaches_its_cap_within_a_month() -> None:
    ip = PS.addon("static_ip")
    assert ip.accrued(10) == pytest.approx(0.045)
    assert ip.accrued(HOURS_PER_MONTH) == pytest.approx(3.0)
    assert ip.accrued(31 * 24) == pytest.approx(3.0)  # a 744-hour month stops at the cap


def test_block_storage_examples() -> None:
    bs = PS.tier("block_storage")
    assert bs.month_price(2000) == pytest.approx(120.0)
    assert bs.month_price(2000, stopped=True) == pytest.approx(120.0)
    assert bs.hourly_price(2000) == pytest.approx(120.0 / HOURS_PER_MONTH)
    assert bs.accrued(2000, 31 * 24) == pytest.approx(120.0)
    assert bs.accrued(50, 0) == 0


def test_snapshot_bills_by_size() -> None:
    snap = PS.addon("snapshot")
    assert snap.month_price(100) == pytest.approx(29.0)
    assert snap.accrued(HOURS_PER_MONTH / 2, 100) == pytest.approx(14.5)
