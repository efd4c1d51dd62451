"""What live resources bill now (gpujob.cost.live): which objects make a job's footprint, the platform's
own compute rate, snapshot sizes the API does not report, and the audit's one-resource meters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpujob.cost import rates as cost
from gpujob.cost.live import (
    Pricing,
    api_rate,
    footprint,
    gpu_rate,
    job_meters,
    resource_meters,
    resource_note,
    size_gb,
    snapshot_gb,
)
from gpujob.live import LiveNode, LiveResource
from gpujob.profile import load_profile

RP = load_profile("runpod")
PS = load_profile("paperspace")
READ = datetime(2026, 11, 2, 10, tzinfo=UTC)


def res(**kw: object) -> LiveResource:
    base: dict[str, object] = dict(platform="runpod", kind="pod", id="p", name="p", status="running")
    return LiveResource(**(base | kw))  # type: ignore[arg-type]


def vol(name: str, gb: int | None = 100, **kw: object) -> LiveResource:
    return res(
        **(
            {
                "kind": "network_volume",
                "id": f"v-{name}",
                "name": name,
                "status": "available",
                "volume_gb": gb,
            }
            | kw
        )
    )


def test_api_rate_is_runpods_pod_cost_while_the_pod_is_up() -> None:
    assert api_rate(res(cost_per_hour=1.2)) == 1.2
    assert api_rate(res(cost_per_hour=1.2, status="pending")) == 1.2
    assert api_rate(res(cost_per_hour=0.5)) == 0.5
    assert api_rate(res(cost_per_hour=1.2, status="stopped")) is None
    assert api_rate(res(cost_per_hour=0.0)) is None
    assert api_rate(res(cost_per_hour=None)) is None
    assert api_rate(res(cost_per_hour=1.2, platform="paperspace", kind="machine")) is None
    assert api_rate(res(cost_per_hour=1.2, kind="endpoint")) is None
    assert api_rate(res(cost_per_hour=1.2, platform="paperspace")) is None


def test_a_live_gpu_takes_the_api_rate_with_the_listed_label() -> None:
    pod = res(gpu_id="NVIDIA A100 80GB PCIe", gpu_count=2, cloud="community", cost_per_hour=2.5)
    got = gpu_rate(Pricing(profile=RP, read_at=READ), pod)
    assert got == cost.GpuRate(
        "GPU 2× A100-80GB (community, on-demand)", 2.5, "runpod API pod.cost 2026-11-02"
    )
    assert gpu_rate(Pricing(profile=RP), pod).source == "runpod API pod.cost"  # type: ignore[union-attr]
    # spot without a spot list price: labelled from the on-demand one, priced by the API
    h100 = res(gpu_id="NVIDIA H100 PCIe", gpu_count=1, spot=True, cloud="community", cost_per_hour=1.0)
    assert gpu_rate(Pricing(profile=RP), h100).label == "GPU 1× H100-PCIE (community, on-demand)"  # type: ignore[union-attr]
    listed = gpu_rate(Pricing(profile=RP), h100.model_copy(update={"cost_per_hour": None}))
    assert listed is not None and listed.usd_per_hour == RP.gpu("H100-PCIE").price_hour  # type: ignore[union-attr]
    assert gpu_rate(Pricing(profile=RP), res(gpu_id=None)) is None
    assert gpu_rate(Pricing(profile=RP), res(gpu_id="no such gpu")) is None
    zero = gpu_rate(Pricing(profile=RP), res(gpu_id="NVIDIA A100 80GB PCIe", gpu_count=0))
    assert zero is not None and zero.label.startswith("GPU 1× ")  # an unreported count is one GPU


def test_a_job_footprint_keeps_the_spec_volume_apart_from_the_others() -> None:
    p = Pricing(profile=RP)
    pod = res(
        gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, container_disk_gb=20, volume_gb=50, status="stopped"
    )
    ckpts, old = vol("ckpts", 200), vol("old", 30, volume_tier="high-performance")
    fp = footprint(p, [pod, ckpts, old], volume="ckpts", label="ckpts (spec)")
    assert fp.machine == "stopped" and fp.container_disk_gb == 20 and fp.volume_gb == 50
    assert fp.network_volume == ("ckpts (spec)", 200, "standard")
    assert fp.extra_volumes == (("old", 30, "high-performance"),)
    no_label = footprint(p, [ckpts, old], volume="ckpts")
    assert no_label.network_volume == ("ckpts", 200, "standard") and no_label.machine is None
    # without a spec volume, a lone volume is the job's; two are both extras
    assert footprint(p, [ckpts]).network_volume == ("ckpts", 200, "standard")
    two = footprint(p, [ckpts, old])
    assert two.network_volume is None and len(two.extra_volumes) == 2
    other = footprint(p, [ckpts], volume="other")
    assert other.network_volume is None and other.extra_volumes == (("ckpts", 200, "standard"),)
    assert footprint(p, [vol("x", None)]).network_volume == ("x", 0, "standard")
    # what is being terminated bills no more
    gone = footprint(
        p, [pod.model_copy(update={"status": "terminating"}), vol("t", 10, status="terminating")]
    )
    assert gone == cost.Footprint()
    assert footprint(p, [pod]).machine == "stopped" and footprint(p, [res()]).machine == "running"


def test_a_job_footprint_counts_ips_and_snapshots() -> None:
    p = Pricing(profile=PS)
    m = res(
        platform="paperspace", kind="machine", id="m", gpu_id="A6000", volume_gb=100, public_ip_kind="dynamic"
    )
    assert footprint(p, [m]).dynamic_ip and not footprint(p, [m]).static_ip
    static = m.model_copy(update={"public_ip_kind": "static"})
    assert footprint(p, [static]).static_ip and not footprint(p, [static]).dynamic_ip
    ip = res(platform="paperspace", kind="public_ip", id="ip", name="ip", status="available")
    assert footprint(p, [ip]).static_ip
    snap = res(platform="paperspace", kind="snapshot", id="s1", name="s", status="available", machine_id="m")
    assert footprint(Pricing(profile=PS, machines={"m": m}), [snap]).snapshots == (("s1", 100),)
    lines = job_meters(Pricing(profile=PS, machines={"m": m}), [m, snap])
    assert sorted(lines) == ["block_storage:100", "dynamic_ip", "gpu:GPU 1× A6000", "snapshot:s1"]
    labelled = job_meters(Pricing(profile=RP), [vol("ckpts", 100)], volume="ckpts", label="vol ckpts")
    assert labelled["network_volume:100"].what == "network volume vol ckpts 100 GB (standard)"


def test_a_snapshot_is_sized_by_its_machine_then_by_memory_then_at_the_smallest_disk() -> None:
    snap = res(platform="paperspace", kind="snapshot", id="s1", name="s", status="available", machine_id="m")
    machine = res(platform="paperspace", kind="machine", id="m", name="trainer", volume_gb=250)
    assert snapshot_gb(Pricing(profile=PS), snap.model_copy(update={"volume_gb": 80})) == (80, "")
    assert snapshot_gb(Pricing(profile=PS, machines={"m": machine}), snap) == (
        250,
        "size of trainer's 250 GB disk",
    )
    remembered = Pricing(profile=PS, known_sizes={"s1": 120})
    assert snapshot_gb(remembered, snap) == (120, "size of its machine's disk when last seen (120 GB)")
    assert snapshot_gb(Pricing(profile=PS, machines={"m": machine.model_copy(update={"volume_gb": None})},
                               known_sizes={"s1": 120}), snap)[0] == 120  # fmt: skip
    gb, note = snapshot_gb(Pricing(profile=PS), snap)
    assert gb == PS.tier("block_storage").min_gb == 50
    assert note == "machine gone and size never seen: priced at the smallest disk (50 GB), it may be larger"
    assert snapshot_gb(Pricing(profile=RP), snap.model_copy(update={"machine_id": None}))[0] == 0


def test_size_gb_reads_the_size_wherever_the_platform_put_it() -> None:
    drive = res(kind="shared_drive", status="available")
    assert size_gb(drive.model_copy(update={"volume_gb": 7})) == 7.0
    assert size_gb(drive.model_copy(update={"attributes": {"size_gb": 5}})) == 5.0
    assert size_gb(drive.model_copy(update={"attributes": {"sizeGb": 6.5}})) == 6.5
    assert size_gb(drive.model_copy(update={"attributes": {"size": 9}})) == 9.0
    assert size_gb(drive.model_copy(update={"attributes": {"size_gb": "big", "size": 3}})) == 3.0
    assert size_gb(drive.model_copy(update={"attributes": {"size_gb": True}})) is None
    assert size_gb(drive) is None


def test_one_resource_at_a_time_with_the_audits_labels() -> None:
    nv = resource_meters(RP, vol("ckpts", 100, volume_tier="high-performance"))
    assert nv is not None and [(m.what, m.usd_per_month) for m in nv] == [
        ("network volume 100 GB (high-performance)", 14.0)
    ]
    assert resource_meters(RP, vol("ckpts", None)) is None  # size unknown
    assert resource_meters(RP, vol("ckpts", 100, volume_tier="weird")) is None
    assert resource_meters(PS, vol("ckpts", 100)) is None  # Paperspace has no network volumes
    ip = resource_meters(PS, res(platform="paperspace", kind="public_ip", id="ip1", name="", status="available",
                                 public_ip="203.0.113.9"))  # fmt: skip
    assert ip is not None and [m.what for m in ip] == ["static public IP 203.0.113.9"]
    bare_ip = resource_meters(
        PS, res(platform="paperspace", kind="public_ip", id="ip1", name="", status="available")
    )
    assert bare_ip is not None and bare_ip[0].what == "static public IP ip1"
    assert resource_meters(RP, res(kind="public_ip", id="ip1", status="available")) is None  # no price for it
    snap = resource_meters(PS, res(platform="paperspace", kind="snapshot", id="s", name="s", status="available",
                                   volume_gb=100))  # fmt: skip
    assert snap is not None and [(m.what, m.usd_per_month) for m in snap] == [("snapshot 100 GB", 29.0)]
    assert resource_meters(RP, res(kind="snapshot", id="s", status="available")) is None  # no size at all
    drive = res(platform="paperspace", kind="shared_drive", status="available", attributes={"size_gb": 10})
    assert resource_meters(PS, drive) is None  # the profile prices no shared drive
    priced = PS.model_copy(
        update={"addons": [*PS.addons, PS.addon("snapshot").model_copy(update={"id": "shared_drive"})]}
    )
    shared = resource_meters(priced, drive)
    assert shared is not None and [(m.what, m.usd_per_month) for m in shared] == [("shared drive 10 GB", 2.9)]
    assert resource_meters(priced, drive.model_copy(update={"attributes": {}})) is None
    for free in ("template", "registry_auth", "startup_script", "cluster"):
        assert resource_meters(RP, res(kind=free, status="available")) == []
    assert resource_meters(RP, res(status="terminating")) == []
    assert resource_meters(RP, res(status="available").model_copy(update={"kind": "mystery"})) is None


def test_a_machine_alone_lists_its_own_meters_rounded() -> None:
    pod = res(
        gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, container_disk_gb=20, volume_gb=100, status="stopped"
    )
    got = resource_meters(Pricing(profile=RP), pod)
    assert got is not None
    assert [(m.what, m.usd_per_hour, m.usd_per_month) for m in got] == [
        ("volume disk 100 GB (stopped, 2×)", round(20 / 720, 6), 20.0)
    ]
    up = resource_meters(Pricing(profile=RP), pod.model_copy(update={"status": "running", "spot": True}))
    assert up is not None and [m.what for m in up] == [
        "GPU 1× A100-80GB (spot)", "container disk 20 GB (running)", "volume disk 100 GB (running)",
    ]  # fmt: skip
    assert up[1].usd_per_hour == round(2 / 720, 6) and up[1].usd_per_month == 2.0
    # an unreported container disk is left unpriced, never guessed
    unsized = resource_meters(
        Pricing(profile=RP), pod.model_copy(update={"status": "running", "container_disk_gb": None})
    )
    assert unsized is not None and not any(m.what.startswith("container disk") for m in unsized)
    m = res(platform="paperspace", kind="machine", id="m", gpu_id="A6000", volume_gb=100, status="stopped",
            public_ip_kind="static")  # fmt: skip
    off = resource_meters(Pricing(profile=PS), m)
    assert off is not None and [m.what for m in off] == ["block storage 100 GB (off)", "static public IP"]
    listed = resource_meters(Pricing(profile=PS), m, static_ip_listed=True)
    assert listed is not None and [m.what for m in listed] == ["block storage 100 GB (off)"]
    on = resource_meters(
        Pricing(profile=PS), m.model_copy(update={"status": "running", "public_ip_kind": None})
    )
    assert on is not None and [m.what for m in on] == [
        "GPU 1× A6000 (on-demand)",
        "block storage 100 GB (running)",
    ]
    no_disk = resource_meters(
        Pricing(profile=PS), m.model_copy(update={"volume_gb": None, "public_ip_kind": None})
    )
    assert no_disk == []


def test_the_gpu_flavour_says_how_it_is_priced() -> None:
    def label(**kw: object) -> str:
        got = resource_meters(Pricing(profile=RP), res(gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, **kw))
        assert got is not None
        return got[0].what

    assert label(cloud="community") == "GPU 1× A100-80GB (community)"
    assert label(cloud="secure") == "GPU 1× A100-80GB (secure)"
    assert label() == "GPU 1× A100-80GB (on-demand)"
    assert label(spot=True) == "GPU 1× A100-80GB (spot)"
    h100 = resource_meters(
        Pricing(profile=RP), res(gpu_id="NVIDIA H100 PCIe", gpu_count=1, spot=True, cloud="secure")
    )
    assert h100 is not None and h100[0].what == "GPU 1× H100-PCIE (secure)"  # no spot price: not called spot
    api = resource_meters(
        Pricing(profile=RP), res(gpu_id="NVIDIA H100 PCIe", gpu_count=1, spot=True, cost_per_hour=1.0)
    )
    assert api is not None and api[0].what == "GPU 1× H100-PCIE (spot)"  # the API's own spot rate


def test_an_endpoint_bills_its_always_on_workers() -> None:
    ep = res(kind="endpoint", status="available", gpu_count=2, cost_per_hour=1.234567891,
             attributes={"workers_min": 3, "pools": "AMPERE_80", "rate_source": "serverless"})  # fmt: skip
    got = resource_meters(RP, ep)
    assert got is not None and len(got) == 1
    line = got[0]
    assert line.what == "3 always-on worker(s) × 2 GPU (AMPERE_80)"
    assert (line.usd_per_hour, line.usd_per_month) == (1.234568, round(1.234567891 * 720, 4))
    assert line.source == "RunPod API serverless"
    plain = ep.model_copy(update={"gpu_count": 0, "attributes": {"workers_min": 1}})
    line = resource_meters(RP, plain)[0]  # type: ignore[index]
    assert line.what == "1 always-on worker(s) × 1 GPU (pools unknown)" and line.source == "RunPod API API"
    assert resource_meters(RP, ep.model_copy(update={"attributes": {"workers_min": 0}})) == []
    assert resource_meters(RP, ep.model_copy(update={"attributes": {}})) == []
    assert resource_meters(RP, ep.model_copy(update={"cost_per_hour": None})) is None


def test_the_note_says_when_the_api_rate_differs_from_the_list() -> None:
    pod = res(gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, cost_per_hour=1.5)
    assert resource_note(Pricing(profile=RP), pod) == "API compute rate; the profile lists $1.6400/h"
    assert resource_note(Pricing(profile=RP), pod.model_copy(update={"cost_per_hour": 1.6402})) == ""
    assert resource_note(Pricing(profile=RP), pod.model_copy(update={"cost_per_hour": None})) == ""
    snap = res(platform="paperspace", kind="snapshot", id="s", name="s", status="available")
    assert resource_note(Pricing(profile=PS, known_sizes={"s": 70}), snap).endswith("(70 GB)")


@pytest.mark.parametrize("status", ["running", "pending"])
def test_a_pending_pod_bills_like_a_running_one(status: str) -> None:
    got = resource_meters(RP, res(gpu_id="NVIDIA A100 80GB PCIe", gpu_count=1, status=status, volume_gb=10))
    assert got is not None and got[-1].what == "volume disk 10 GB (running)"


def test_a_group_footprint_counts_its_nodes() -> None:
    def nodes(n: int) -> list[LiveNode]:
        return [LiveNode(rank=i, machine_id=f"p{i}", status="running") for i in range(n)]

    gpu = {"gpu_id": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "container_disk_gb": 20}
    cluster = res(kind="cluster", id="c", name="c", nodes=nodes(3), **gpu)
    assert footprint(Pricing(profile=RP), [cluster]).nodes == 3
    gpus = [k for k in job_meters(Pricing(profile=RP), [cluster]) if k.startswith("gpu:")]
    assert gpus == [f"gpu:GPU 8× H100-80GB (secure, on-demand):node{i}" for i in range(3)]
    # a group that lists no member yet is one machine's worth, never none
    assert footprint(Pricing(profile=RP), [cluster.model_copy(update={"nodes": []})]).nodes == 1
    # a pod is one machine, whatever it says of nodes
    assert footprint(Pricing(profile=RP), [res(nodes=nodes(2), **gpu)]).nodes == 1


def test_a_multi_gpu_machine_type_is_labelled_with_its_gpu_count() -> None:
    m = res(platform="paperspace", kind="machine", id="m", gpu_id="A100-80Gx8", gpu_count=0, volume_gb=None)
    got = resource_meters(Pricing(profile=PS), m)
    assert got is not None and got[0].what == "GPU 8× A100-80GB (on-demand)"


def test_a_static_ip_is_priced_when_it_is_the_only_add_on_listed() -> None:
    only_ip = PS.model_copy(update={"addons": [PS.addon("static_ip")]})
    m = res(platform="paperspace", kind="machine", id="m", gpu_id="A6000", volume_gb=100, status="stopped",
            public_ip_kind="static")  # fmt: skip
    got = resource_meters(Pricing(profile=only_ip), m)
    assert got is not None and [x.what for x in got] == ["block storage 100 GB (off)", "static public IP"]
