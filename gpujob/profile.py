"""Platform profiles: the platform facts gpujob reasons with, kept as reviewed data in profiles/*.yaml.

Every fact carries its `source` and `as_of` date. Prices are USD. Monthly storage prices are per GB
per 30-day month (720 h), the convention both platforms bill by; `monthly_cap_usd` is the most a
non-GPU resource bills in one billing cycle (Paperspace).
"""

from __future__ import annotations

import math
from datetime import date
from functools import cache
from typing import Literal

from pydantic import ConfigDict, Field

from gpujob.model import Model, Platform
from gpujob.profile_files import find_gpu, profiles_dir

HOURS_PER_MONTH = 720
# Timestamps travel as ISO strings with milliseconds: a period this close to a whole hour is that hour.
_HOUR_SLACK = 1e-5


def billed_hours(seconds: float) -> int:
    """Hours charged for a billing period of `seconds` when every started hour is billed in full
    (Paperspace compute and storage, RunPod network volumes). The simulator and the cost engine share it."""
    if seconds <= 0:
        return 0
    return max(0, math.ceil(seconds / 3600 - _HOUR_SLACK))


Tier = str  # a StorageTier.id, e.g. "container_disk", "volume_disk", "network_volume", "block_storage"
Verb = Literal["stop", "terminate", "restart_new_host", "destroy"]


class Sourced(Model):
    # Built on first validation only: a profile read from the cache is unpickled, never validated, so a
    # command that only reads profiles never pays for building these schemas.
    model_config = ConfigDict(defer_build=True)

    source: str = Field(description="Where the fact comes from (doc page, issue, spec file).")
    as_of: date = Field(description="When the fact was last checked.")


class Claim(Sourced):
    """One sourced statement; used where sources disagree, so both sides stay on record."""

    statement: str
    value: bool | float | str | None = Field(
        None, description="The claimed value, when it is a single value."
    )


class StorageTier(Sourced):
    id: Tier
    title: str
    path: str | None = Field(None, description="Default mount path, if any.")
    price_gb_month_running: float
    price_gb_month_stopped: float
    price_gb_month_over_1tb: float | None = None
    min_gb: int | None = None
    max_gb: int | None = None
    default_gb: int | None = None
    grow_only: bool = False
    monthly_cap_usd: float | None = None
    billing_granularity: Literal["second", "hour"] = "second"
    note: str = ""

    def month_price(self, gb: float, *, stopped: bool = False) -> float:
        """USD for a full month of `gb` GB. Capacity above 1 TB is billed at the over-1 TB rate (marginal,
        so the price never falls as the size grows), and `monthly_cap_usd` bounds the total."""
        if gb <= 0:
            return 0.0
        rate = self.price_gb_month_stopped if stopped else self.price_gb_month_running
        if self.price_gb_month_over_1tb is not None and gb > 1000 and rate > 0:
            total = 1000 * rate + (gb - 1000) * self.price_gb_month_over_1tb
        else:
            total = gb * rate
        return min(total, self.monthly_cap_usd) if self.monthly_cap_usd is not None else total

    def hourly_price(self, gb: float, *, stopped: bool = False) -> float:
        """USD per hour for `gb` GB (a month is HOURS_PER_MONTH hours)."""
        return self.month_price(gb, stopped=stopped) / HOURS_PER_MONTH

    def accrued(self, gb: float, hours: float, *, stopped: bool = False) -> float:
        """USD billed for `hours` within one billing month: hourly accrual that stops at the month's maximum."""
        if hours <= 0:
            return 0.0
        return min(self.hourly_price(gb, stopped=stopped) * hours, self.month_price(gb, stopped=stopped))


class Survival(Sourced):
    """Whether a tier's data survives each lifecycle verb."""

    tier: Tier
    stop: bool
    terminate: bool = Field(description="terminate (RunPod) / destroy (Paperspace)")
    restart_new_host: bool = Field(description="relaunch on a fresh host / new pod")


class ActionBilling(Sourced):
    """What one lifecycle action does to the meters."""

    action: Literal[
        "stop", "terminate", "destroy", "start", "create", "release_ip", "delete_snapshot", "delete_volume"
    ]
    stops_compute: bool
    keeps_billing: list[str] = Field(default_factory=list, description="Resources that still bill after it.")
    irreversible: bool = False
    destroys: list[Tier] = Field(default_factory=list)
    note: str = ""


class AddonPrice(Sourced):
    """Non-GPU resources billed by the hour or month (static IP, snapshots, ...)."""

    id: str
    price_hour: float | None = None
    price_gb_month: float | None = None
    monthly_cap_usd: float | None = None
    bills_while_stopped: bool = True
    billing_granularity: Literal["second", "hour"] = Field(
        "hour", description="hour: every started hour is billed in full; second: billed to the second."
    )
    note: str = ""

    def hourly_price(self, gb: float = 0) -> float:
        """USD per hour: the hourly rate, or the per-GB monthly rate spread over HOURS_PER_MONTH."""
        rate = self.price_hour or 0.0
        if self.price_gb_month is not None:
            rate += self.price_gb_month * max(gb, 0) / HOURS_PER_MONTH
        return rate

    def month_price(self, gb: float = 0) -> float:
        """The most this add-on bills in one billing month."""
        full = self.hourly_price(gb) * HOURS_PER_MONTH
        return min(full, self.monthly_cap_usd) if self.monthly_cap_usd is not None else full

    def accrued(self, hours: float, gb: float = 0) -> float:
        """USD billed for `hours` within one billing month, never above the monthly maximum."""
        if hours <= 0:
            return 0.0
        return min(self.hourly_price(gb) * hours, self.month_price(gb))


class GpuOffer(Sourced):
    """One GPU alias on one platform, with indicative list prices per GPU-hour."""

    alias: str = Field(description="gpujob's name, e.g. H100-80GB")
    platform_id: str = Field(
        description="The platform's identifier (RunPod gpuTypeId / Paperspace machineType)."
    )
    vram_gb: int
    price_hour: float = Field(description="On-demand (secure) USD per GPU-hour.")
    price_hour_community: float | None = None
    price_hour_spot: float | None = None
    regions: list[str] = Field(default_factory=list, description="Where offered; empty = everywhere.")
    multi_gpu_ids: dict[int, str] = Field(
        default_factory=dict, description="Paperspace: count -> machineType (A4000x2)."
    )
    min_cuda: str | None = Field(
        None,
        description="The oldest CUDA (major.minor) with kernels for this GPU's architecture; an image built "
        "for an older one fails with 'no kernel image is available'.",
    )


class AutoShutdown(Sourced):
    kind: str = Field(description="core | notebook_free | notebook_paid")
    min_hours: float | None = None
    max_hours: float | None = None
    default_hours: float | None = None
    hard_cap_hours: float | None = None
    wall_clock: bool = True
    settable_via_api: bool = True
    note: str = ""
    disputes: list[Claim] = Field(
        default_factory=list,
        description="Sources that disagree about this clock, each kept with its own source.",
    )


class Spot(Sourced):
    available: bool
    grace_seconds: float | None = None
    discount_note: str = ""


class SshFlavour(Sourced):
    id: str
    supports_file_transfer: bool
    endpoint_stable: str = Field(description="When the address/port changes.")
    default_user: str = "root"
    note: str = ""


class Gotcha(Sourced):
    id: str = Field(pattern=r"^(RP|PS)\d+$")
    title: str
    symptom: str
    cause: str
    fix: str
    severity: Literal["error", "warning", "info"] = "warning"


class HostCuda(Sourced):
    """The CUDA versions hosts report (a host runs an image whose CUDA is at or below its own)."""

    versions: list[str] = Field(
        description="Every CUDA version (major.minor) a host can report, newest first."
    )
    note: str = ""


class TemplateFit(Sourced):
    """A template's OS release that a GPU needs (Paperspace: Ubuntu 22.04 for H100)."""

    gpus: list[str] = Field(description="GPU aliases the rule is about.")
    ubuntu: str = Field(description="The Ubuntu release the GPU needs, e.g. 22.04.")
    severity: Literal["error", "warning", "info"]
    note: str = ""


class Limits(Sourced):
    container_disk_gb: tuple[int, int] | None = None
    volume_gb: tuple[int, int] | None = None
    volume_sizes_gb: list[int] | None = Field(
        None, description="Fixed set of allowed sizes (Paperspace diskSize)."
    )
    network_volume_gb: tuple[int, int] | None = None
    max_gpu_count: int = 8


class Multinode(Sourced):
    """How the platform runs one job on several machines (machine.nodes, docs/multinode.md)."""

    kind: Literal["cluster", "private_network"] = Field(
        description="cluster: one platform object holds every node (RunPod Instant Cluster); "
        "private_network: N ordinary machines joined to one private network (Paperspace)."
    )
    min_nodes: int = Field(2, ge=2)
    max_nodes: int = Field(ge=2)
    gpus: list[str] | None = Field(
        None, description="GPU aliases that can cluster; None: every GPU the platform offers."
    )
    stoppable: bool = Field(
        description="Whether the nodes can be stopped and started again (an Instant Cluster can only be deleted)."
    )
    network_hour: float = Field(0.0, ge=0, description="USD per hour the private network itself bills.")
    interface: str | None = Field(
        None,
        description="The private interface's name on each node (NCCL_SOCKET_IFNAME); None: found on the node "
        "from its private address.",
    )


class Profile(Model):
    """All that gpujob knows about one platform."""

    model_config = ConfigDict(defer_build=True)

    platform: Platform
    title: str
    meter_stop_verb: str
    meter_stop_irreversible: bool
    options: list[str] = Field(
        description="MachineSpec/StorageSpec option names that exist on this platform."
    )
    regions: list[str] = Field(description="Valid region / data center ids.")
    region_aliases: dict[str, str] = Field(
        default_factory=dict, description="Long or alternate spellings -> id."
    )
    tiers: list[StorageTier]
    survival: list[Survival]
    actions: list[ActionBilling]
    addons: list[AddonPrice] = Field(default_factory=list)
    gpus: list[GpuOffer]
    auto_shutdown: list[AutoShutdown] = Field(default_factory=list)
    spot: Spot
    ssh: list[SshFlavour]
    limits: Limits
    multinode: Multinode | None = Field(None, description="Multi-node jobs; None: the platform has none.")
    capacity: str = Field(description="How capacity shortages show up and what to do.")
    gotchas: list[Gotcha]
    host_cuda: HostCuda | None = Field(
        None, description="CUDA versions the platform's hosts report (RunPod's CUDA filter values)."
    )
    template_fit: list[TemplateFit] = Field(
        default_factory=list, description="Which template OS releases suit which GPUs."
    )
    compute_billing_granularity: Literal["second", "hour"] = Field(
        "second",
        description="How GPU/compute time is billed: per second, or per hour (every started hour in full).",
    )
    gpu_count_in_machine_type: bool = Field(
        False, description="True when a multi-GPU machine is a distinct machine type (Paperspace A4000x2)."
    )
    network_volume_tiers: dict[str, str] = Field(
        default_factory=dict, description="Spec network_volume.tier value -> StorageTier id."
    )
    sources: dict[str, Sourced] = Field(
        default_factory=dict,
        description="Source and date of the top-level facts (meter_stop_verb, options, regions, capacity, ...).",
    )

    def tier(self, tier_id: str) -> StorageTier:
        for t in self.tiers:
            if t.id == tier_id:
                return t
        raise KeyError(f"{self.platform} profile has no storage tier '{tier_id}'")

    def survives(self, tier_id: str, verb: str) -> bool:
        for s in self.survival:
            if s.tier == tier_id:
                return bool(getattr(s, verb))
        raise KeyError(f"{self.platform} profile has no survival row for '{tier_id}'")

    def gpu(self, alias: str) -> GpuOffer | None:
        return find_gpu(self.gpus, alias)

    def gotcha(self, gotcha_id: str) -> Gotcha:
        for g in self.gotchas:
            if g.id == gotcha_id:
                return g
        raise KeyError(gotcha_id)

    def addon(self, addon_id: str) -> AddonPrice:
        for a in self.addons:
            if a.id == addon_id:
                return a
        raise KeyError(addon_id)

    def action(self, name: str) -> ActionBilling:
        for a in self.actions:
            if a.action == name:
                return a
        raise KeyError(name)

    def network_volume_tier(self, kind: str = "standard") -> StorageTier:
        """The StorageTier of a spec network volume tier name (standard | high-performance)."""
        tier_id = self.network_volume_tiers.get(kind)
        if tier_id is None:
            raise KeyError(f"{self.platform} has no network volume tier '{kind}'")
        return self.tier(tier_id)

    def normalise_region(self, name: str) -> str | None:
        """A region id from any accepted spelling ('East Coast (NY2)', 'NY2', 'ny2'); None when unknown."""
        if name in self.regions:
            return name
        if name in self.region_aliases:
            return self.region_aliases[name]
        folded = name.strip().casefold()
        for region in self.regions:
            if region.casefold() == folded:
                return region
        for alias, region in self.region_aliases.items():
            if alias.casefold() == folded:
                return region
        return None

    def auto_shutdown_clock(self, kind: str) -> AutoShutdown:
        for a in self.auto_shutdown:
            if a.kind == kind:
                return a
        raise KeyError(f"{self.platform} profile has no auto-shutdown clock '{kind}'")

    @property
    def gotcha_ids(self) -> list[str]:
        return [g.id for g in self.gotchas]


@cache
def load_profile(platform: str) -> Profile:
    """Load and validate profiles/<platform>.yaml. Cached: profiles are read-only data, validated once per
    content (see profile_cache) and then read back without parsing YAML or building schemas."""
    return profile_from_bytes(platform, (profiles_dir() / f"{platform}.yaml").read_bytes())


def profile_from_bytes(platform: str, raw: bytes) -> Profile:
    """The Profile that profiles/<platform>.yaml holding `raw` describes (through the cache)."""
    from gpujob import profile_cache
    from gpujob.errors import ProfileError

    cached = profile_cache.read(platform, raw)
    if isinstance(cached, Profile):
        return cached
    try:
        from ruamel.yaml import YAML

        profile = Profile.model_validate(YAML(typ="safe").load(raw))
    except Exception as exc:  # a broken bundled profile is a packaging bug; say which file
        raise ProfileError(f"{profiles_dir() / f'{platform}.yaml'}: invalid platform profile: {exc}") from exc
    profile_cache.write(platform, raw, profile)
    return profile
