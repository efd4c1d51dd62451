"""Money spent so far (gpujob.cost.spend), where the figure hangs on a fact that is easy to drop: the
granularity a profile gives a network volume tier or an add-on, what gpujob saw of a resource whose
creation the API does not report, and a snapshot's machine id (it is not an IP object)."""

from __future__ import annotations

import pytest

from gpujob.cost.live import Pricing
from gpujob.cost.spend import granularity, job_spend, more_until
from gpujob.live import LiveResource, Metering
from gpujob.profile import Profile
from tests.cost.test_spend import BS_50, CD_RP, GPU_RP, PS, RP, T0, VD_RUN, H, machine, pod, seen_of

IP_HOUR = 0.0045  # Paperspace static IP, by the started hour


def per_second(profile: Profile, *, tier: str | None = None, addon: str | None = None) -> Profile:
    tiers = [
        t.model_copy(update={"billing_granularity": "second"}) if t.id == tier else t for t in profile.tiers
    ]
    addons = [
        a.model_copy(update={"billing_granularity": "second"}) if a.id == addon else a for a in profile.addons
    ]
    return profile.model_copy(update={"tiers": tiers, "addons": addons})


def test_a_network_volume_bills_at_its_own_tiers_granularity() -> None:
    std = per_second(RP, tier=RP.network_volume_tiers["standard"])
    assert granularity(std, "network_volume:100") == "second"  # no tier named: the standard one
    assert granularity(std, "network_volume:v:100", "high-performance") == "hour"
    hp = per_second(RP, tier=RP.network_volume_tiers["high-performance"])
    assert granularity(hp, "network_volume:v:100", "high-performance") == "second"
    assert granularity(hp, "network_volume:100") == "hour"


def test_an_add_on_bills_at_its_own_granularity() -> None:
    assert granularity(PS, "dynamic_ip") == "hour"  # an add-on, not a storage tier (those default to seconds)
    assert granularity(per_second(PS, addon="snapshot"), "snapshot:s1") == "second"
    assert granularity(per_second(PS, addon="static_ip"), "static_ip") == "second"


def test_more_until_counts_from_when_gpujob_first_saw_an_undated_resource() -> None:
    undated = pod(created_at=None, started_at=T0)
    seen = {"p": seen_of(undated, first_seen=T0, last_seen=T0)}
    got = more_until(Pricing(profile=RP), [undated], seen, Metering(), T0 + H, T0 + 3 * H)
    assert got == pytest.approx(2 * (GPU_RP + CD_RP + VD_RUN), abs=1e-6)  # live: to `until`, not last seen


def test_a_snapshots_machine_id_does_not_make_the_machines_static_ip_listed() -> None:
    p = Pricing(profile=PS)
    m = machine(status="stopped", public_ip_kind="static")
    snap = LiveResource(platform="paperspace", kind="snapshot", id="s1", name="s1", machine_id="m",
                        status="available", created_at=T0, volume_gb=1)  # fmt: skip
    history = Metering(running={"m": []})
    alone = more_until(p, [m], {}, history, T0 + 0.5 * H, T0 + 1.5 * H)
    assert alone == pytest.approx(BS_50 + IP_HOUR, abs=1e-6)
    with_snap = more_until(p, [m, snap], {}, history, T0 + 0.5 * H, T0 + 1.5 * H)
    assert with_snap - alone == pytest.approx(0.29 / 720, abs=1e-6)  # the snapshot's own hour only
    rows = job_spend(p, [m, snap], {}, history, T0 + 2 * H, {})
    assert rows[0].usd == pytest.approx(2 * BS_50 + 2 * IP_HOUR, abs=1e-6)


def test_job_spend_dates_an_undated_live_resource_from_what_was_seen() -> None:
    undated = pod(created_at=None, started_at=T0)
    seen = {"p": seen_of(undated, first_seen=T0, last_seen=T0)}
    rows = job_spend(Pricing(profile=RP), [undated], seen, Metering(), T0 + 2 * H, {})
    assert rows[0].usd == pytest.approx(2 * (GPU_RP + CD_RP + VD_RUN), abs=1e-6)
    assert rows[0].basis.endswith("counted from when gpujob first saw it (2026-01-01 00:00 UTC)")


def test_a_gone_ip_object_still_keeps_its_live_machine_from_billing_the_ip_twice() -> None:
    p = Pricing(profile=PS)
    m = machine(status="stopped", public_ip_kind="static")
    ip = LiveResource(platform="paperspace", kind="public_ip", id="ip1", name="ip", machine_id="m",
                      status="available", created_at=T0)  # fmt: skip
    seen = {"ip1": seen_of(ip, last_seen=T0 + 2 * H, gone_at=T0 + 2 * H)}
    rows = job_spend(p, [m], seen, Metering(running={"m": []}), T0 + 2 * H, {})
    assert [r.id for r in rows] == ["m", "ip1"]
    assert rows[0].usd == pytest.approx(2 * BS_50, abs=1e-6)  # the IP is billed on its own line
    assert rows[1].usd == pytest.approx(2 * IP_HOUR, abs=1e-6)
