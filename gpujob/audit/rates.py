"""What one live resource bills right now, meter by meter, from the platform profile.

Storage prices in the profile are per GB per 30-day month (HOURS_PER_MONTH hours); a meter's monthly
figure is hourly × 720, clipped to the resource's monthly cap when the platform has one (Paperspace).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpujob.live import LiveResource
from gpujob.plan.model import MeterLine
from gpujob.profile import HOURS_PER_MONTH, AddonPrice, GpuOffer, Profile, StorageTier

ONE_TB_GB = 1000

# Addon ids differ between profile revisions; each entry lists the accepted ids, first match wins.
ADDON_IDS: dict[str, tuple[str, ...]] = {
    "static_ip": ("static_ip", "public_ip_static", "static_public_ip", "public_ip"),
    "dynamic_ip": ("dynamic_ip", "public_ip_dynamic", "dynamic_public_ip"),
    "snapshot": ("snapshot", "snapshots"),
    "shared_drive": ("shared_drive", "shared_drives"),
    "template": ("custom_template", "template"),
}
NETWORK_VOLUME_TIERS: dict[str, tuple[str, ...]] = {
    "standard": ("network_volume", "network_volume_standard"),
    "high-performance": (
        "network_volume_hp",
        "network_volume_high_performance",
        "network_volume_high-performance",
    ),
}


def _src(profile: Profile, as_of: object) -> str:
    return f"profile {profile.platform} {as_of}"


def meter(what: str, usd_per_hour: float, cap: float | None, source: str) -> MeterLine:
    monthly = usd_per_hour * HOURS_PER_MONTH
    if cap is not None:
        monthly = min(monthly, cap)
    return MeterLine(
        what=what,
        usd_per_hour=round(usd_per_hour, 6),
        usd_per_month=round(monthly, 4),
        monthly_cap_usd=cap,
        source=source,
    )


def find_addon(profile: Profile, key: str) -> AddonPrice | None:
    ids = ADDON_IDS.get(key, (key,))
    by_id = {a.id: a for a in profile.addons}
    for candidate in ids:
        if candidate in by_id:
            return by_id[candidate]
    return None


def find_tier(profile: Profile, ids: Iterable[str]) -> StorageTier | None:
    for candidate in ids:
        for t in profile.tiers:
            if t.id == candidate:
                return t
    return None


def gpu_offer(profile: Profile, gpu_id: str | None) -> tuple[GpuOffer, int] | None:
    """The offer for a platform GPU id / machineType, and how many GPUs that id stands for."""
    if not gpu_id:
        return None
    for g in profile.gpus:
        if g.platform_id == gpu_id or g.alias.lower() == gpu_id.lower():
            return g, 1
        for count, machine_type in g.multi_gpu_ids.items():
            if machine_type == gpu_id:
                return g, int(count)
    return None


def gpu_price(offer: GpuOffer, *, cloud: str | None, spot: bool) -> tuple[float, str]:
    if spot and offer.price_hour_spot is not None:
        return offer.price_hour_spot, "spot"
    if cloud == "community" and offer.price_hour_community is not None:
        return offer.price_hour_community, "community"
    return offer.price_hour, cloud or "on-demand"


def storage_meter(profile: Profile, tier: StorageTier, gb: float, *, running: bool, label: str) -> MeterLine:
    price = tier.price_gb_month_running if running else tier.price_gb_month_stopped
    over = tier.price_gb_month_over_1tb
    if over is not None and gb > ONE_TB_GB:
        monthly = ONE_TB_GB * price + (gb - ONE_TB_GB) * over
    else:
        monthly = gb * price
    return meter(label, monthly / HOURS_PER_MONTH, tier.monthly_cap_usd, _src(profile, tier.as_of))


def gpu_meter(profile: Profile, r: LiveResource) -> MeterLine | None:
    found = gpu_offer(profile, r.gpu_id)
    if found is None:
        return None
    offer, per_id = found
    count = per_id if per_id > 1 else max(r.gpu_count, 1)
    price, flavour = gpu_price(offer, cloud=r.cloud, spot=r.spot)
    return meter(f"GPU {count}× {offer.alias} ({flavour})", price * count, None, _src(profile, offer.as_of))


def pod_meters(profile: Profile, r: LiveResource) -> list[MeterLine]:
    running = r.status in ("running", "pending")
    out: list[MeterLine] = []
    if running:
        g = gpu_meter(profile, r)
        if g is not None:
            out.append(g)
    state = "running" if running else "stopped"
    cd = find_tier(profile, ["container_disk"])
    if cd is not None and r.container_disk_gb:
        out.append(
            storage_meter(
                profile,
                cd,
                r.container_disk_gb,
                running=running,
                label=f"container disk {r.container_disk_gb} GB ({state})",
            )
        )
    vd = find_tier(profile, ["volume_disk"])
    if vd is not None and r.volume_gb:
        ratio = ""
        if (
            not running
            and vd.price_gb_month_running
            and vd.price_gb_month_stopped != vd.price_gb_month_running
        ):
            ratio = f", {vd.price_gb_month_stopped / vd.price_gb_month_running:g}×"
        out.append(
            storage_meter(
                profile,
                vd,
                r.volume_gb,
                running=running,
                label=f"volume disk {r.volume_gb} GB ({state}{ratio})",
            )
        )
    return [m for m in out if m.usd_per_hour > 0]


def machine_meters(profile: Profile, r: LiveResource, *, static_ip_listed: bool) -> list[MeterLine]:
    running = r.status in ("running", "pending")
    out: list[MeterLine] = []
    if running:
        g = gpu_meter(profile, r)
        if g is not None:
            out.append(g)
    bs = find_tier(profile, ["block_storage"])
    if bs is not None and r.volume_gb:
        state = "running" if running else "off"
        out.append(
            storage_meter(
                profile, bs, r.volume_gb, running=running, label=f"block storage {r.volume_gb} GB ({state})"
            )
        )
    if r.public_ip_kind == "dynamic" and running:
        dyn = find_addon(profile, "dynamic_ip")
        if dyn is not None and dyn.price_hour:
            out.append(
                meter(
                    "dynamic public IP (while running)",
                    dyn.price_hour,
                    dyn.monthly_cap_usd,
                    _src(profile, dyn.as_of),
                )
            )
    if r.public_ip_kind == "static" and not static_ip_listed:
        m = static_ip_meter(profile)
        if m is not None:
            out.append(m)
    return [m for m in out if m.usd_per_hour > 0]


def static_ip_meter(profile: Profile) -> MeterLine | None:
    ip = find_addon(profile, "static_ip")
    if ip is None or not ip.price_hour:
        return None
    return meter("static public IP", ip.price_hour, ip.monthly_cap_usd, _src(profile, ip.as_of))


def per_gb_addon_meter(profile: Profile, key: str, gb: float | None, label: str) -> MeterLine | None:
    addon = find_addon(profile, key)
    if addon is None or gb is None:
        return None
    hourly = (addon.price_gb_month or 0.0) * gb / HOURS_PER_MONTH + (addon.price_hour or 0.0)
    return meter(f"{label} {gb:g} GB", hourly, addon.monthly_cap_usd, _src(profile, addon.as_of))


def network_volume_meter(profile: Profile, r: LiveResource) -> MeterLine | None:
    tier_name = r.volume_tier or "standard"
    tier = find_tier(profile, NETWORK_VOLUME_TIERS.get(tier_name, ("network_volume",)))
    if tier is None or not r.volume_gb:
        return None
    return storage_meter(
        profile, tier, r.volume_gb, running=True, label=f"network volume {r.volume_gb} GB ({tier_name})"
    )


def size_gb(r: LiveResource) -> float | None:
    if r.volume_gb is not None:
        return float(r.volume_gb)
    for key in ("size_gb", "sizeGb", "size"):
        value = r.attributes.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def resource_meters(
    profile: Profile, r: LiveResource, *, static_ip_listed: bool = False
) -> list[MeterLine] | None:
    """Meters billing now for one resource; None when the profile cannot price it (shape unknown)."""
    if r.status == "terminating":
        return []
    if r.kind == "pod":
        return pod_meters(profile, r)
    if r.kind == "machine":
        return machine_meters(profile, r, static_ip_listed=static_ip_listed)
    if r.kind == "network_volume":
        m = network_volume_meter(profile, r)
        return None if m is None else [m]
    if r.kind == "public_ip":
        m = static_ip_meter(profile)
        return None if m is None else [m]
    if r.kind in ("snapshot", "shared_drive"):
        gb = size_gb(r)
        label = "snapshot" if r.kind == "snapshot" else "shared drive"
        m = per_gb_addon_meter(profile, r.kind, gb, label)
        return None if m is None else [m]
    if r.kind in ("template", "registry_auth"):
        addon = find_addon(profile, "template") if r.kind == "template" else None
        gb = size_gb(r)
        if addon is not None and gb is not None:
            m = per_gb_addon_meter(profile, "template", gb, "custom template")
            return [] if m is None else [m]
        return []  # free on both platforms as far as the profiles know
    return None
