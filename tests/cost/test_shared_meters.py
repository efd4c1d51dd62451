"""What a multi-node job bills once, whatever its node count (gpujob.cost.rates): the private network,
network volumes, a static IP, snapshots. Each node bills its own GPU, disks and dynamic IP; these do
not multiply. Both profiles list the private network at $0/h (profiles/*.yaml multinode.network_hour),
so a priced copy shows the line a platform that bills it would print."""

from __future__ import annotations

import pytest

from gpujob.cost.rates import Footprint, GpuRate, billing, meters
from gpujob.profile import Profile, load_profile

RP = load_profile("runpod")
PS = load_profile("paperspace")


def src(profile: Profile, as_of: object) -> str:
    return f"profile {profile.platform} {as_of}"


def priced_network(profile: Profile, per_hour: float) -> Profile:
    assert profile.multinode is not None
    return profile.model_copy(
        update={"multinode": profile.multinode.model_copy(update={"network_hour": per_hour})}
    )


def with_addon(profile: Profile, addon_id: str, **changes: object) -> Profile:
    addons = [a.model_copy(update=changes) if a.id == addon_id else a for a in profile.addons]
    return profile.model_copy(update={"addons": addons})


H100 = GpuRate("GPU 8× H100-80GB (secure, on-demand)", 21.52, "runpod API 2026-12-07")
A6000 = GpuRate("GPU 1× A6000", 1.89, "p")


def test_a_runpod_cluster_bills_its_network_volume_once_and_its_free_network_not_at_all() -> None:
    fp = Footprint(machine="running", gpu=H100, nodes=3, container_disk_gb=20,
                   network_volume=("ckpts", 200, "standard"))  # fmt: skip
    got = meters(fp, RP)
    assert sorted(got) == [
        "container_disk:20:node0",
        "container_disk:20:node1",
        "container_disk:20:node2",
        "gpu:GPU 8× H100-80GB (secure, on-demand):node0",
        "gpu:GPU 8× H100-80GB (secure, on-demand):node1",
        "gpu:GPU 8× H100-80GB (secure, on-demand):node2",
        "network_volume:200",
    ]  # multinode.network_hour is 0.0: no private network line
    nv = got["network_volume:200"]
    assert (nv.what, nv.usd_per_month, nv.source) == (
        "network volume ckpts 200 GB (standard)",
        pytest.approx(14.0),
        src(RP, RP.tier("network_volume").as_of),
    )
    assert got["gpu:GPU 8× H100-80GB (secure, on-demand):node2"].what == (
        "GPU 8× H100-80GB (secure, on-demand) (node 2)"
    )


def test_a_priced_private_network_is_one_line_at_its_hourly_rate() -> None:
    priced = priced_network(RP, 0.25)
    assert priced.multinode is not None
    fp = Footprint(machine="running", gpu=H100, nodes=2, container_disk_gb=20)
    net = meters(fp, priced)["private_network"]
    assert (net.what, net.usd_per_hour, net.usd_per_month, net.monthly_cap_usd, net.source) == (
        "private network",
        0.25,
        180.0,
        None,
        src(priced, priced.multinode.as_of),
    )
    assert [k for k in meters(fp, priced) if k.startswith("private_network")] == ["private_network"]
    # a stopped Paperspace job keeps its private network (machines are stoppable there)
    ps = priced_network(PS, 0.1)
    assert ps.multinode is not None
    stopped = meters(Footprint(machine="stopped", nodes=2), ps)["private_network"]
    assert (stopped.usd_per_hour, stopped.source) == (0.1, src(ps, ps.multinode.as_of))
    assert billing(fp, fp.with_(machine="stopped"), priced).keeps[-1].what == "private network"


@pytest.mark.parametrize(
    "fp",
    [
        Footprint(machine="running", gpu=H100, nodes=1),  # one machine: no network between machines
        Footprint(machine=None, nodes=2, network_volume=("ckpts", 100, "standard")),  # no machines left
    ],
)
def test_no_private_network_without_several_machines(fp: Footprint) -> None:
    assert "private_network" not in meters(fp, priced_network(RP, 0.25))


def test_no_private_network_on_a_profile_without_multinode() -> None:
    bare = RP.model_copy(update={"multinode": None})
    assert "private_network" not in meters(Footprint(machine="running", gpu=H100, nodes=2), bare)


def test_a_paperspace_group_bills_its_static_ip_and_snapshots_once() -> None:
    fp = Footprint(machine="running", gpu=A6000, nodes=2, volume_gb=100, static_ip=True, dynamic_ip=True,
                   snapshots=(("s1", 100),))  # fmt: skip
    got = meters(fp, PS)
    assert sorted(got) == [
        "block_storage:100:node0",
        "block_storage:100:node1",
        "dynamic_ip:node0",
        "dynamic_ip:node1",
        "gpu:GPU 1× A6000:node0",
        "gpu:GPU 1× A6000:node1",
        "snapshot:s1",
        "static_ip",
    ]  # Paperspace's private network is free too
    ip, ip_addon = got["static_ip"], PS.addon("static_ip")
    assert (ip.what, ip.usd_per_hour, ip.usd_per_month, ip.monthly_cap_usd, ip.source) == (
        "static public IP",
        0.0045,
        3.0,
        3.0,
        src(PS, ip_addon.as_of),
    )
    snap = got["snapshot:s1"]
    assert (snap.what, snap.usd_per_month, snap.monthly_cap_usd, snap.source) == (
        "snapshot s1 100 GB",
        pytest.approx(29.0),
        None,
        src(PS, PS.addon("snapshot").as_of),
    )


def test_an_addon_without_a_listed_price_bills_nothing_and_a_snapshot_cap_holds() -> None:
    fp = Footprint(machine="stopped", static_ip=True, snapshots=(("s1", 100),))
    free_ip = meters(fp, with_addon(PS, "static_ip", price_hour=None))["static_ip"]
    assert (free_ip.usd_per_hour, free_ip.usd_per_month) == (0.0, 0.0)
    free_snap = meters(fp, with_addon(PS, "snapshot", price_gb_month=None))["snapshot:s1"]
    assert (free_snap.usd_per_hour, free_snap.usd_per_month) == (0.0, 0.0)
    capped = meters(fp, with_addon(PS, "snapshot", monthly_cap_usd=10.0))["snapshot:s1"]
    assert (capped.usd_per_month, capped.monthly_cap_usd) == (10.0, 10.0)
    assert capped.usd_per_hour == pytest.approx(29.0 / 720)  # accrues at the full rate up to the cap
    uncapped_ip = meters(fp, with_addon(PS, "static_ip", monthly_cap_usd=None))["static_ip"]
    assert uncapped_ip.usd_per_month == pytest.approx(0.0045 * 720)
