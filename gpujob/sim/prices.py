"""Prices for the meters and catalogs, read from the bundled platform profiles (profiles/*.yaml).

The simulator bills exactly what the profile says so tests can compare gpujob's predicted cost with
the metered one. When a profile cannot be loaded (a broken checkout) a small built-in table keeps the
simulator usable; `source` says which one is in use."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpujob.profile import HOURS_PER_MONTH, GpuOffer, Profile, load_profile

SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600.0


# Serverless pools by GPU type (shared/api/REFERENCE.md lists the pool ids; the grouping is the simulator's).
POOLS = {
    "NVIDIA RTX A4000": "AMPERE_16", "NVIDIA RTX A5000": "AMPERE_24", "NVIDIA GeForce RTX 3090": "AMPERE_24",
    "NVIDIA GeForce RTX 4090": "ADA_24", "NVIDIA L4": "ADA_24", "NVIDIA RTX 4000 Ada Generation": "ADA_24",
    "NVIDIA RTX A6000": "AMPERE_48", "NVIDIA A40": "AMPERE_48", "NVIDIA L40S": "ADA_48_PRO",
    "NVIDIA A100 80GB PCIe": "AMPERE_80", "NVIDIA A100-SXM4-80GB": "AMPERE_80", "NVIDIA H100 PCIe": "ADA_80_PRO",
    "NVIDIA H100 80GB HBM3": "ADA_80_PRO",
}  # fmt: skip


@dataclass(frozen=True)
class TierPrice:
    running: float  # USD per GB-month
    stopped: float
    cap: float | None = None


@dataclass(frozen=True)
class AddonRate:
    hour: float = 0.0
    gb_month: float = 0.0
    cap: float | None = None


@dataclass(frozen=True)
class Gpu:
    id: str
    alias: str
    vram: int
    secure: float
    community: float | None
    spot: float | None
    regions: tuple[str, ...] = ()
    multi: dict[int, str] = field(default_factory=dict)


_FALLBACK_RP = [
    Gpu("NVIDIA GeForce RTX 4090", "RTX4090", 24, 0.69, 0.34, 0.34),
    Gpu("NVIDIA A40", "A40", 48, 0.44, 0.35, 0.25),
]
_FALLBACK_PS = [
    Gpu("A4000", "A4000", 16, 0.76, None, None, ("ny2", "ca1", "ams1"), {2: "A4000x2"}),
    Gpu("C5", "C5", 0, 0.08, None, None),
]


class Prices:
    def __init__(self, platform: str) -> None:
        self.platform = platform
        self.profile: Profile | None
        try:
            self.profile = load_profile(platform)
            self.source = f"profiles/{platform}.yaml"
        except Exception:  # a missing profile must not take the simulator down
            self.profile = None
            self.source = "built-in fallback table"

    # --- GPUs / machine types
    def gpus(self) -> list[Gpu]:
        if self.profile is None:
            return list(_FALLBACK_RP if self.platform == "runpod" else _FALLBACK_PS)
        return [_gpu(g) for g in self.profile.gpus]

    def gpu(self, platform_id: str) -> Gpu | None:
        for g in self.gpus():
            if platform_id in (g.id, g.alias) or platform_id in g.multi.values():
                return g
        return None

    def gpu_hour(self, platform_id: str, *, cloud: str = "SECURE", spot: bool = False) -> float:
        """Per-GPU hourly price (RunPod)."""
        g = self.gpu(platform_id)
        if g is None:
            return 0.0
        if spot and g.spot is not None:
            return g.spot
        if cloud.upper() == "COMMUNITY" and g.community is not None:
            return g.community
        return g.secure

    def pool(self, platform_id: str) -> str | None:
        """The serverless pool a GPU type belongs to (v2 catalog `pool`): by architecture and memory."""
        g = self.gpu(platform_id)
        return None if g is None else POOLS.get(g.id)

    def serverless_hour(self, pools: list[str]) -> float:
        """Per-GPU hourly price of a serverless worker in these pools: the cheapest type in them. The
        simulator's own figure (the pods' secure price); the profile has no serverless prices."""
        prices = [g.secure for g in self.gpus() if POOLS.get(g.id) in pools]
        return min(prices) if prices else 0.0

    def machine_hour(self, machine_type: str) -> float:
        """Hourly rate of a Paperspace machine type, multi-GPU types included (A4000x2 = 2 × A4000)."""
        g = self.gpu(machine_type)
        if g is None:
            return 0.0
        for count, mt in g.multi.items():
            if mt == machine_type:
                return g.secure * count
        return g.secure

    def machine_gpus(self, machine_type: str) -> int:
        g = self.gpu(machine_type)
        if g is None or g.vram == 0:
            return 0
        for count, mt in g.multi.items():
            if mt == machine_type:
                return count
        return 1

    def regions(self) -> list[str]:
        if self.profile is None:
            return ["US-KS-2", "EU-RO-1"] if self.platform == "runpod" else ["ny2", "ca1", "ams1"]
        return list(self.profile.regions)

    # --- storage and add-ons
    def tier(self, tier_id: str) -> TierPrice:
        if self.profile is not None:
            for t in self.profile.tiers:
                if t.id == tier_id:
                    return TierPrice(
                        t.price_gb_month_running,
                        t.price_gb_month_stopped,
                        t.monthly_cap_usd,
                    )
        fallback = {
            "container_disk": TierPrice(0.10, 0.0),
            "volume_disk": TierPrice(0.10, 0.20),
            "network_volume": TierPrice(0.07, 0.07),
            "block_storage": TierPrice(0.10, 0.10),
        }
        return fallback.get(tier_id, TierPrice(0.0, 0.0))

    def addon(self, word: str) -> AddonRate:
        """An add-on whose id contains `word` (static_ip, dynamic_ip, snapshot...)."""
        if self.profile is not None:
            for a in self.profile.addons:
                if word in a.id:
                    return AddonRate(a.price_hour or 0.0, a.price_gb_month or 0.0, a.monthly_cap_usd)
        fallback = {
            "static": AddonRate(hour=0.0045, cap=3.0),
            "dynamic": AddonRate(hour=0.0),
            "snapshot": AddonRate(gb_month=0.29),
        }
        return fallback.get(word, AddonRate())

    def granularity(self, item: str) -> str:
        """How a meter line is billed: "second", or "hour" (every started hour of a billing period in full).
        Items are the simulator's meter names: gpu / compute, a tier id, or an add-on word."""
        if self.profile is None:
            return "hour" if self.platform == "paperspace" or item == "network_volume" else "second"
        if item in ("gpu", "compute"):
            return self.profile.compute_billing_granularity
        for t in self.profile.tiers:
            if t.id == item:
                return t.billing_granularity
        for a in self.profile.addons:
            if item in a.id:
                return a.billing_granularity
        return "second"

    def spot_grace(self) -> float:
        if self.profile is not None and self.profile.spot.grace_seconds is not None:
            return float(self.profile.spot.grace_seconds)
        return 5.0


def _gpu(g: GpuOffer) -> Gpu:
    return Gpu(
        g.platform_id,
        g.alias,
        g.vram_gb,
        g.price_hour,
        g.price_hour_community,
        g.price_hour_spot,
        tuple(g.regions),
        dict(g.multi_gpu_ids),
    )
