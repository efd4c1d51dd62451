"""The audit prices live resources with the planner's cost maths: same figures, audit labels."""

from __future__ import annotations

import pytest

from gpujob.cost import rates as cost
from gpujob.cost.live import Pricing, resource_meters, resource_note
from gpujob.live import LiveResource
from gpujob.profile import load_profile

RP = load_profile("runpod")
PS = load_profile("paperspace")


def pod(**kw: object) -> LiveResource:
    base: dict[str, object] = dict(platform="runpod", kind="pod", id="p", name="p", status="running")
    return LiveResource(**(base | kw))  # type: ignore[arg-type]


def test_running_pod_costs_what_the_plan_says() -> None:
    r = pod(
        gpu_id="NVIDIA A100 80GB PCIe", gpu_count=2, cloud="community", container_disk_gb=40, volume_gb=100
    )
    got = resource_meters(RP, r)
    assert got is not None
    gpu = cost.gpu_rate(RP, [], "A100-80GB", count=2, cloud="community")
    fp = cost.Footprint(machine="running", gpu=gpu, container_disk_gb=40, volume_gb=100)
    want = cost.meters(fp, RP)
    assert sum(m.usd_per_hour for m in got) == pytest.approx(cost.hourly_total(want), abs=1e-5)
    assert [m.what for m in got] == [
        "GPU 2× A100-80GB (community)",
        "container disk 40 GB (running)",
        "volume disk 100 GB (running)",
    ]


def test_spot_without_a_spot_list_price_falls_back_to_on_demand() -> None:
    offer = RP.gpu("H100-PCIE")
    assert offer is not None and offer.price_hour_spot is None
    got = resource_meters(
        RP, pod(gpu_id=offer.platform_id, gpu_count=1, cloud="secure", spot=True, container_disk_gb=10)
    )
    assert got is not None
    assert (got[0].what, got[0].usd_per_hour) == ("GPU 1× H100-PCIE (secure)", offer.price_hour)


def test_unreported_container_disk_is_not_guessed() -> None:
    got = resource_meters(RP, pod(gpu_id="NVIDIA A40", gpu_count=1))
    assert got is not None and [m.what.split()[0] for m in got] == ["GPU"]


def test_network_volume_over_1tb_uses_the_profile_tier_maths() -> None:
    r = LiveResource(
        platform="runpod", kind="network_volume", id="v", name="v", status="available", volume_gb=1500
    )
    (line,) = resource_meters(RP, r) or []
    assert line.usd_per_month == pytest.approx(RP.network_volume_tier().month_price(1500), abs=1e-4)
    assert line.usd_per_month == pytest.approx(1000 * 0.07 + 500 * 0.05, abs=1e-4)  # marginal, as simulated


def test_resources_the_profile_cannot_price() -> None:
    ps_vol = LiveResource(
        platform="paperspace", kind="network_volume", id="v", name="v", status="available", volume_gb=10
    )
    drive = LiveResource(
        platform="paperspace", kind="shared_drive", id="d", name="d", status="available", volume_gb=100
    )
    unsized = LiveResource(platform="paperspace", kind="snapshot", id="s", name="s", status="available")
    assert resource_meters(PS, ps_vol) is None  # Paperspace has no network volume tiers
    assert resource_meters(PS, drive) is None  # no shared-drive price in the profile
    # PS9: a snapshot's size is never 0: unknown and machine gone -> the smallest disk, and the note says so
    (line,) = resource_meters(PS, unsized) or []
    smallest = PS.tier("block_storage").min_gb
    assert line.what == f"snapshot {smallest} GB"
    assert line.usd_per_month == pytest.approx(smallest * PS.addon("snapshot").price_gb_month, abs=1e-4)
    assert "smallest disk" in resource_note(Pricing(profile=PS), unsized)


def test_snapshot_is_priced_by_its_machine_disk_size() -> None:
    """PS9: Paperspace never reports a snapshot's size; it copies the machine's disk."""
    m = LiveResource(platform="paperspace", kind="machine", id="m", name="gpujob-x", status="stopped",
                     gpu_id="A4000", volume_gb=500)  # fmt: skip
    snap = LiveResource(
        platform="paperspace", kind="snapshot", id="s", name="s", status="available", machine_id="m"
    )
    (line,) = resource_meters(Pricing(profile=PS, machines={"m": m}), snap) or []
    assert line.usd_per_month == pytest.approx(500 * 0.29, abs=1e-4)
    recorded = Pricing(profile=PS, known_sizes={"s": 250})  # machine gone, size seen before
    (line,) = resource_meters(recorded, snap) or []
    assert line.usd_per_month == pytest.approx(250 * 0.29, abs=1e-4)


def test_dynamic_ip_bills_only_while_the_machine_runs() -> None:
    up = LiveResource(platform="paperspace", kind="machine", id="m", name="m", status="running", gpu_id="A4000",
                      volume_gb=50, public_ip_kind="dynamic")  # fmt: skip
    ip = [m for m in resource_meters(PS, up) or [] if "dynamic" in m.what]
    assert [m.usd_per_hour for m in ip] == [PS.addon("dynamic_ip").price_hour]
    off = up.model_copy(update={"status": "stopped"})
    assert not [m for m in resource_meters(PS, off) or [] if "dynamic" in m.what]


def test_machine_static_ip_billed_on_the_machine_only_when_not_listed() -> None:
    m = LiveResource(platform="paperspace", kind="machine", id="m", name="m", status="stopped", gpu_id="A4000",
                     volume_gb=50, public_ip_kind="static")  # fmt: skip
    alone = resource_meters(PS, m) or []
    listed = resource_meters(PS, m, static_ip_listed=True) or []
    assert [x.what for x in alone] == ["block storage 50 GB (off)", "static public IP"]
    assert [x.what for x in listed] == ["block storage 50 GB (off)"]
    assert alone[1].usd_per_month == PS.addon("static_ip").month_price()
