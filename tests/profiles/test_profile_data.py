"""The bundled platform profiles: they load, carry every seed fact with a source, and agree with the seeds."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import BaseModel

from gpujob.profile import Profile, Sourced, load_profile, profiles_dir

RUNPOD_GOTCHAS = [f"RP{n}" for n in range(1, 14)]
PAPERSPACE_GOTCHAS = [f"PS{n}" for n in range(1, 14)]


@pytest.fixture(scope="module")
def runpod() -> Profile:
    return load_profile("runpod")


@pytest.fixture(scope="module")
def paperspace() -> Profile:
    return load_profile("paperspace")


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_profile_loads_and_names_its_platform(platform: str) -> None:
    profile = load_profile(platform)
    assert profile.platform == platform
    assert (profiles_dir() / f"{platform}.yaml").is_file()


def test_gotcha_ids_are_exactly_the_seed_lists(runpod: Profile, paperspace: Profile) -> None:
    assert runpod.gotcha_ids == RUNPOD_GOTCHAS
    assert paperspace.gotcha_ids == PAPERSPACE_GOTCHAS


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_every_gotcha_is_complete(platform: str) -> None:
    for g in load_profile(platform).gotchas:
        for field in ("title", "symptom", "cause", "fix", "source"):
            assert len(getattr(g, field).strip()) >= 8, f"{g.id}.{field} is empty"


def _sourced(node: object, path: str = "") -> list[tuple[str, Sourced]]:
    """Every Sourced object reachable from `node`, with where it sits."""
    found: list[tuple[str, Sourced]] = []
    if isinstance(node, Sourced):
        found.append((path, node))
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            found += _sourced(getattr(node, name), f"{path}.{name}")
    elif isinstance(node, list | tuple):
        for i, item in enumerate(node):
            found += _sourced(item, f"{path}[{i}]")
    elif isinstance(node, dict):
        for key, item in node.items():
            found += _sourced(item, f"{path}[{key}]")
    return found


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_every_fact_has_a_source_and_a_plausible_date(platform: str) -> None:
    profile = load_profile(platform)
    facts = _sourced(profile)
    assert len(facts) > 40
    for where, fact in facts:
        assert fact.source.strip(), f"{where} has no source"
        assert date(2024, 1, 1) <= fact.as_of <= date(2026, 12, 31), f"{where} as_of {fact.as_of}"


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_top_level_facts_are_sourced(platform: str) -> None:
    profile = load_profile(platform)
    for key in ("meter_stop_verb", "options", "regions", "capacity"):
        assert key in profile.sources, f"{platform}: no source for {key}"


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_every_tier_has_exactly_one_survival_row(platform: str) -> None:
    profile = load_profile(platform)
    rows = [s.tier for s in profile.survival]
    assert len(rows) == len(set(rows))
    for tier in profile.tiers:
        assert tier.id in rows, f"{platform}: tier {tier.id} has no survival row"


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_actions_name_only_known_tiers(platform: str) -> None:
    profile = load_profile(platform)
    known = {t.id for t in profile.tiers} | {a.id for a in profile.addons} | {"gpu"}
    for action in profile.actions:
        assert set(action.destroys) <= known, action.action
        assert set(action.keeps_billing) <= known, action.action


def test_runpod_stopped_volume_disk_costs_double(runpod: Profile) -> None:
    vd = runpod.tier("volume_disk")
    assert vd.price_gb_month_running == pytest.approx(0.10)
    assert vd.price_gb_month_stopped == pytest.approx(2 * vd.price_gb_month_running)
    assert vd.grow_only


def test_runpod_storage_prices(runpod: Profile) -> None:
    cd = runpod.tier("container_disk")
    assert (cd.price_gb_month_running, cd.price_gb_month_stopped) == (0.10, 0.0)
    assert cd.default_gb == 5
    nv = runpod.network_volume_tier("standard")
    assert (nv.price_gb_month_running, nv.price_gb_month_over_1tb) == (0.07, 0.05)
    assert (nv.min_gb, nv.max_gb, nv.billing_granularity) == (10, 4096, "hour")
    assert runpod.network_volume_tier("high-performance").price_gb_month_running == 0.14


def test_runpod_survival_matrix(runpod: Profile) -> None:
    assert not runpod.survives("container_disk", "stop")
    assert runpod.survives("volume_disk", "stop")
    assert not runpod.survives("volume_disk", "terminate")
    assert not runpod.survives("volume_disk", "restart_new_host")
    for tier in ("network_volume", "network_volume_hp"):
        assert all(runpod.survives(tier, verb) for verb in ("stop", "terminate", "restart_new_host"))


def test_runpod_actions(runpod: Profile) -> None:
    stop, terminate = runpod.action("stop"), runpod.action("terminate")
    assert stop.stops_compute and not stop.irreversible
    assert "volume_disk" in stop.keeps_billing and stop.destroys == ["container_disk"]
    assert terminate.irreversible and set(terminate.destroys) == {"container_disk", "volume_disk"}
    assert "volume_disk" not in terminate.keeps_billing
    assert runpod.meter_stop_verb == "terminate" and runpod.meter_stop_irreversible


def test_runpod_spot_ssh_and_options(runpod: Profile) -> None:
    assert runpod.spot.available and runpod.spot.grace_seconds == 5
    flavours = {s.id: s for s in runpod.ssh}
    assert not flavours["basic"].supports_file_transfer
    assert flavours["full"].supports_file_transfer
    assert "reset" in flavours["full"].endpoint_stable
    assert runpod.options == [
        "gpu", "gpu_count", "spot", "cloud", "regions", "image", "container_disk_gb",
        "max_price_per_hour", "volume_gb", "mount", "network_volume",
    ]  # fmt: skip
    assert "EU-RO-1" in runpod.regions and "AP-IN-1" in runpod.regions
    assert len(runpod.regions) == len(set(runpod.regions))


def test_paperspace_survival_matrix(paperspace: Profile) -> None:
    assert paperspace.survives("block_storage", "stop")
    assert not paperspace.survives("block_storage", "terminate")
    assert paperspace.survives("snapshot", "terminate")
    assert not paperspace.survives("notebook_workspace", "stop")
    assert paperspace.survives("notebook_storage", "terminate")


def test_paperspace_billing_after_stop_and_destroy(paperspace: Profile) -> None:
    stop, destroy = paperspace.action("stop"), paperspace.action("destroy")
    assert set(stop.keeps_billing) >= {"block_storage", "static_ip", "snapshot"}
    assert destroy.irreversible and destroy.destroys == ["block_storage"]
    assert set(destroy.keeps_billing) == {"static_ip", "snapshot"}
    assert paperspace.action("release_ip").irreversible
    assert paperspace.action("delete_snapshot").destroys == ["snapshot"]
    ip = paperspace.addon("static_ip")
    assert (ip.price_hour, ip.monthly_cap_usd, ip.bills_while_stopped) == (0.0045, 3.0, True)
    assert not paperspace.addon("dynamic_ip").bills_while_stopped
    assert paperspace.addon("snapshot").price_gb_month == 0.29


def test_paperspace_block_storage(paperspace: Profile) -> None:
    bs = paperspace.tier("block_storage")
    assert (bs.min_gb, bs.max_gb, bs.grow_only) == (50, 2000, True)
    assert bs.price_gb_month_stopped == bs.price_gb_month_running > 0
    assert bs.monthly_cap_usd is not None
    assert paperspace.limits.volume_sizes_gb == [50, 100, 250, 500, 1000, 2000]


def test_paperspace_auto_shutdown_clocks(paperspace: Profile) -> None:
    free = paperspace.auto_shutdown_clock("notebook_free")
    paid = paperspace.auto_shutdown_clock("notebook_paid")
    core = paperspace.auto_shutdown_clock("core")
    assert free.hard_cap_hours == 6
    assert (paid.default_hours, paid.min_hours, paid.max_hours) == (12, 1, 168)
    assert (core.min_hours, core.max_hours, core.wall_clock) == (1, 168, True)
    # The seed and the API reference disagree about changing it via the API: both are kept, sourced.
    values = {claim.value for claim in core.disputes}
    assert values == {True, False}
    assert all(claim.source and claim.as_of for claim in core.disputes)


def test_paperspace_regions_spot_ssh(paperspace: Profile) -> None:
    assert paperspace.regions == ["ny2", "ca1", "ams1"]
    assert paperspace.normalise_region("East Coast (NY2)") == "ny2"
    assert paperspace.normalise_region("WEST COAST (CA1)") == "ca1"
    assert paperspace.normalise_region("europe (ams1)") == "ams1"
    assert paperspace.normalise_region("AMS1") == "ams1"
    assert paperspace.normalise_region("mars1") is None
    assert not paperspace.spot.available and paperspace.spot.grace_seconds is None
    assert "spot" not in paperspace.options and "cloud" not in paperspace.options
    core = next(s for s in paperspace.ssh if s.id == "core")
    assert core.default_user == "paperspace" and core.supports_file_transfer
    assert paperspace.meter_stop_verb == "stop" and not paperspace.meter_stop_irreversible


def test_gpu_alias_table(runpod: Profile, paperspace: Profile) -> None:
    assert runpod.gpu("H100-80GB").platform_id == "NVIDIA H100 80GB HBM3"
    assert runpod.gpu("A100-80GB").platform_id == "NVIDIA A100 80GB PCIe"
    assert runpod.gpu("h100-80gb") is runpod.gpu("H100-80GB")
    assert paperspace.gpu("H100-80GB").platform_id == "H100"
    assert paperspace.gpu("A100-80GB").multi_gpu_ids == {8: "A100-80Gx8"}
    assert paperspace.gpu("A100-40GB").platform_id == "A100"
    assert paperspace.gpu("A4000").multi_gpu_ids == {2: "A4000x2", 4: "A4000x4"}
    for alias in ("H100-80GB", "A100-80GB", "A100-40GB", "V100-32GB"):
        assert paperspace.gpu(alias).regions == ["ny2"]
    for alias in ("H100-PCIE", "A100-SXM", "A6000", "A40", "L40S", "L4", "RTX4090", "RTX3090", "RTX4000-ADA"):
        assert runpod.gpu(alias) is not None, alias
    for alias in ("A6000", "A5000", "A4000"):
        assert paperspace.gpu(alias) is not None, alias
        assert runpod.gpu(alias) is not None, alias


@pytest.mark.parametrize("platform", ["runpod", "paperspace"])
def test_gpu_prices_are_sane(platform: str) -> None:
    profile = load_profile(platform)
    aliases = [g.alias for g in profile.gpus]
    assert len(aliases) == len(set(aliases))
    for g in profile.gpus:
        assert 0 < g.price_hour < 20
        if g.price_hour_spot is not None:
            assert g.price_hour_spot <= g.price_hour, g.alias
        assert set(g.regions) <= set(profile.regions), g.alias
