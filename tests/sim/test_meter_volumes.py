"""Network volume meters follow the profile's maths exactly: the high-performance tier, and the
marginal over-1 TB rate (only capacity past the first TB is cheaper)."""

from __future__ import annotations

import pytest

from gpujob.profile import HOURS_PER_MONTH, load_profile


@pytest.mark.parametrize(
    ("kind", "api_type", "size"),
    [("standard", "STANDARD", 1500), ("high-performance", "HIGH_PERFORMANCE", 200)],
)
def test_network_volume_month_matches_profile(sim, rp, kind: str, api_type: str, size: int) -> None:
    created = rp.post(
        "/network-volumes",
        json={"name": f"nv-{kind}", "size": size, "dataCenter": "EU-RO-1", "type": api_type},
    )
    assert created.status_code in (200, 201), created.text
    vol_id = created.json()["id"]
    sim.advance(HOURS_PER_MONTH * 3600)
    billed = sum(i["usd"] for i in sim.bill()["items"] if i["id"] == vol_id)
    expected = load_profile("runpod").network_volume_tier(kind).month_price(size)
    assert billed == pytest.approx(expected, rel=1e-9)
    # the marginal rate: a 1500 GB standard volume costs more than 1000 GB at the full rate
    if kind == "standard":
        assert expected > 1000 * load_profile("runpod").network_volume_tier(kind).price_gb_month_running
