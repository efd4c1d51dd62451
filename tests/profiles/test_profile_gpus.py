"""GPU alias resolution and candidate ordering / filtering."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpujob.gpus import GpuNotOffered, alias_for, candidates, resolve_gpu
from gpujob.jobfile.model import MachineSpec
from gpujob.live import PriceQuote
from gpujob.profile import Profile, load_profile

NOW = datetime(2026, 8, 21, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def runpod() -> Profile:
    return load_profile("runpod")


@pytest.fixture(scope="module")
def paperspace() -> Profile:
    return load_profile("paperspace")


def test_resolve_gpu_runpod_keeps_type_id_for_any_count(runpod: Profile) -> None:
    assert resolve_gpu(runpod, "H100-80GB", 1) == "NVIDIA H100 80GB HBM3"
    assert resolve_gpu(runpod, "H100-80GB", 4) == "NVIDIA H100 80GB HBM3"
    with pytest.raises(GpuNotOffered):
        resolve_gpu(runpod, "H100-80GB", 9)
    with pytest.raises(GpuNotOffered, match="no GPU 'TPU-v5'"):
        resolve_gpu(runpod, "TPU-v5", 1)


def test_resolve_gpu_paperspace_multi_gpu_machine_types(paperspace: Profile) -> None:
    assert resolve_gpu(paperspace, "A100-80GB", 1) == "A100-80G"
    assert resolve_gpu(paperspace, "A100-80GB", 8) == "A100-80Gx8"
    assert resolve_gpu(paperspace, "A4000", 2) == "A4000x2"
    assert resolve_gpu(paperspace, "A4000", 4) == "A4000x4"
    with pytest.raises(GpuNotOffered, match="1, 2, 4"):
        resolve_gpu(paperspace, "A4000", 3)
    with pytest.raises(GpuNotOffered):
        resolve_gpu(paperspace, "A6000", 2)


def test_alias_for_reverses_machine_types(paperspace: Profile, runpod: Profile) -> None:
    assert alias_for(paperspace, "A4000x4") == ("A4000", 4)
    assert alias_for(paperspace, "H100") == ("H100-80GB", 1)
    assert alias_for(runpod, "NVIDIA A100 80GB PCIe") == ("A100-80GB", 1)
    assert alias_for(runpod, "NVIDIA B200") is None


def test_candidates_order_gpu_then_region(runpod: Profile) -> None:
    machine = MachineSpec(gpu=["H100-80GB", "A100-80GB"], regions=["EU-RO-1", "US-TX-3"])
    got = [(c.alias, c.region, c.cloud) for c in candidates(runpod, machine)]
    assert got == [
        ("H100-80GB", "EU-RO-1", "secure"),
        ("H100-80GB", "US-TX-3", "secure"),
        ("A100-80GB", "EU-RO-1", "secure"),
        ("A100-80GB", "US-TX-3", "secure"),
    ]


def test_candidates_price_is_for_the_whole_machine(runpod: Profile) -> None:
    machine = MachineSpec(gpu=["A100-80GB"], gpu_count=4)
    (only,) = candidates(runpod, machine)
    assert only.price_hour == pytest.approx(4 * runpod.gpu("A100-80GB").price_hour)
    assert only.region is None and only.gpu_count == 4
    assert "profile runpod" in only.price_source
    assert only.price_as_of.date() == runpod.gpu("A100-80GB").as_of


def test_max_price_drops_offers_above_it(runpod: Profile) -> None:
    machine = MachineSpec(gpu=["H100-80GB", "A100-80GB", "RTX4090"], max_price_per_hour=2.0)
    assert [c.alias for c in candidates(runpod, machine)] == ["A100-80GB", "RTX4090"]
    machine2 = MachineSpec(gpu=["A100-80GB", "RTX4090"], gpu_count=2, max_price_per_hour=2.0)
    assert [c.alias for c in candidates(runpod, machine2)] == ["RTX4090"]
    machine3 = MachineSpec(gpu=["H100-80GB"], max_price_per_hour=0.5)
    assert candidates(runpod, machine3) == []


def test_spot_and_community_prices(runpod: Profile) -> None:
    spot = candidates(runpod, MachineSpec(gpu=["H100-80GB"], spot=True))
    assert spot[0].spot and spot[0].price_hour == runpod.gpu("H100-80GB").price_hour_spot
    community = candidates(runpod, MachineSpec(gpu=["A100-80GB"], cloud="community"))
    assert community[0].cloud == "community" and community[0].price_hour == 1.19
    # Without a community list price the secure price stands in, and the source says so.
    fallback = candidates(runpod, MachineSpec(gpu=["L4"], cloud="community"))
    assert fallback[0].price_hour == runpod.gpu("L4").price_hour
    assert "no community list price" in fallback[0].price_source


def test_live_quotes_replace_list_prices_and_can_mark_unavailable(runpod: Profile) -> None:
    quotes = [
        PriceQuote(platform="runpod", gpu_id="NVIDIA H100 80GB HBM3", cloud="secure", price_hour=2.5,
                   available=True, source="graphql gpuTypes", as_of=NOW),
        PriceQuote(platform="runpod", gpu_id="NVIDIA A100 80GB PCIe", cloud="secure", price_hour=1.0,
                   available=False, source="graphql gpuTypes", as_of=NOW),
        PriceQuote(platform="paperspace", gpu_id="NVIDIA RTX A6000", price_hour=0.01,
                   source="elsewhere", as_of=NOW),
    ]  # fmt: skip
    machine = MachineSpec(gpu=["H100-80GB", "A100-80GB", "A6000"], gpu_count=2)
    got = candidates(runpod, machine, quotes)
    assert [c.alias for c in got] == ["H100-80GB", "A6000"]
    assert got[0].price_hour == pytest.approx(5.0)
    assert got[0].price_source == "graphql gpuTypes" and got[0].price_as_of == NOW
    assert got[1].price_hour == pytest.approx(2 * runpod.gpu("A6000").price_hour)


def test_live_quote_can_push_an_offer_over_the_limit(runpod: Profile) -> None:
    quote = PriceQuote(platform="runpod", gpu_id="NVIDIA RTX A6000", cloud="secure", price_hour=3.0,
                       source="v2 catalog", as_of=NOW)  # fmt: skip
    machine = MachineSpec(gpu=["A6000"], max_price_per_hour=1.0)
    assert candidates(runpod, machine) != []
    assert candidates(runpod, machine, [quote]) == []


def test_paperspace_regions_filter_and_default(paperspace: Profile) -> None:
    # H100 exists only in NY2: asking for AMS1 first still yields only NY2.
    machine = MachineSpec(gpu=["H100-80GB", "A4000"], regions=["AMS1", "East Coast (NY2)"])
    got = [(c.platform_id, c.region, c.cloud) for c in candidates(paperspace, machine)]
    assert got == [("H100", "ny2", None), ("A4000", "ams1", None), ("A4000", "ny2", None)]
    # No regions given: every region the GPU is offered in, in profile order.
    got2 = [c.region for c in candidates(paperspace, MachineSpec(gpu=["A6000"]))]
    assert got2 == ["ny2", "ca1"]


def test_paperspace_counts_without_machine_type_are_skipped(paperspace: Profile) -> None:
    machine = MachineSpec(gpu=["A6000", "A4000"], gpu_count=2, regions=["ny2"])
    (only,) = candidates(paperspace, machine)
    assert (only.platform_id, only.price_hour) == ("A4000x2", pytest.approx(1.52))


def test_unknown_alias_is_skipped_not_fatal(runpod: Profile) -> None:
    got = candidates(runpod, MachineSpec(gpu=["NOPE-1", "L4"]))
    assert [c.alias for c in got] == ["L4"]
