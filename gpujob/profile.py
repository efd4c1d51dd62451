"""Platform profiles: the platform facts gpujob reasons with, kept as reviewed data in profiles/*.yaml.

Every fact carries its `source` and `as_of` date. Prices are USD. Monthly storage prices are per GB
per 30-day month (720 h), the convention both platforms bill by; `monthly_cap_usd` is the most a
non-GPU resource bills in one billing cycle (Paperspace).
"""

from __future__ import annotations

from datetime import date
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field

from gpujob.model import Model, Platform

HOURS_PER_MONTH = 720

Tier = str  # a StorageTier.id, e.g. "container_disk", "volume_disk", "network_volume", "block_storage"
Verb = Literal["stop", "terminate", "restart_new_host", "destroy"]


class Sourced(Model):
    source: str = Field(description="Where the fact comes from (doc page, issue, spec file).")
    as_of: date = Field(description="When the fact was last checked.")


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


class Survival(Sourced):
    """Whether a tier's data survives each lifecycle verb."""

    tier: Tier
    stop: bool
    terminate: bool = Field(description="terminate (RunPod) / destroy (Paperspace)")
    restart_new_host: bool = Field(description="relaunch on a fresh host / new pod")


class ActionBilling(Sourced):
    """What one lifecycle action does to the meters."""

    action: Literal["stop", "terminate", "destroy", "start", "create", "release_ip", "delete_snapshot", "delete_volume"]
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
    note: str = ""


class GpuOffer(Sourced):
    """One GPU alias on one platform, with indicative list prices per GPU-hour."""

    alias: str = Field(description="gpujob's name, e.g. H100-80GB")
    platform_id: str = Field(description="The platform's identifier (RunPod gpuTypeId / Paperspace machineType).")
    vram_gb: int
    price_hour: float = Field(description="On-demand (secure) USD per GPU-hour.")
    price_hour_community: float | None = None
    price_hour_spot: float | None = None
    regions: list[str] = Field(default_factory=list, description="Where offered; empty = everywhere.")
    multi_gpu_ids: dict[int, str] = Field(default_factory=dict, description="Paperspace: count -> machineType (A4000x2).")


class AutoShutdown(Sourced):
    kind: str = Field(description="core | notebook_free | notebook_paid")
    min_hours: float | None = None
    max_hours: float | None = None
    default_hours: float | None = None
    hard_cap_hours: float | None = None
    wall_clock: bool = True
    settable_via_api: bool = True
    note: str = ""


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


class Limits(Sourced):
    container_disk_gb: tuple[int, int] | None = None
    volume_gb: tuple[int, int] | None = None
    volume_sizes_gb: list[int] | None = Field(None, description="Fixed set of allowed sizes (Paperspace diskSize).")
    network_volume_gb: tuple[int, int] | None = None
    max_gpu_count: int = 8


class Profile(Model):
    """All that gpujob knows about one platform."""

    platform: Platform
    title: str
    meter_stop_verb: str
    meter_stop_irreversible: bool
    options: list[str] = Field(description="MachineSpec/StorageSpec option names that exist on this platform.")
    regions: list[str] = Field(description="Valid region / data center ids.")
    region_aliases: dict[str, str] = Field(default_factory=dict, description="Long or alternate spellings -> id.")
    tiers: list[StorageTier]
    survival: list[Survival]
    actions: list[ActionBilling]
    addons: list[AddonPrice] = Field(default_factory=list)
    gpus: list[GpuOffer]
    auto_shutdown: list[AutoShutdown] = Field(default_factory=list)
    spot: Spot
    ssh: list[SshFlavour]
    limits: Limits
    capacity: str = Field(description="How capacity shortages show up and what to do.")
    gotchas: list[Gotcha]

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
        for g in self.gpus:
            if g.alias.lower() == alias.lower() or g.platform_id == alias:
                return g
        return None

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


def profiles_dir() -> Path:
    """profiles/ beside the package in a checkout or editable install, else the copy inside the wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "profiles", here / "_data" / "profiles"):
        if (candidate / "runpod.yaml").exists():
            return candidate
    raise FileNotFoundError("gpujob's platform profiles are missing (profiles/runpod.yaml)")


@cache
def load_profile(platform: str) -> Profile:
    """Load and validate profiles/<platform>.yaml. Cached: profiles are read-only data."""
    from ruamel.yaml import YAML

    from gpujob.errors import ProfileError

    path = profiles_dir() / f"{platform}.yaml"
    try:
        data = YAML(typ="safe").load(path.read_text())
        return Profile.model_validate(data)
    except Exception as exc:  # a broken bundled profile is a packaging bug; say which file
        raise ProfileError(f"{path}: invalid platform profile: {exc}") from exc
