"""What one live resource bills right now, meter by meter, priced by the planner's cost maths.

A pod or machine is mapped to a plan `Footprint` and priced by `gpujob.plan.cost.meters`, so the audit
and the plan cannot disagree on a rate; resources that stand alone (network volume, static IP,
snapshot) use the single-meter helpers of the same module. What stays here is presentation: the
audit's meter labels, and rounding to 6 places per hour / 4 per month.
"""

from __future__ import annotations

from dataclasses import replace

from gpujob.live import LiveResource
from gpujob.plan import cost
from gpujob.plan.model import MeterLine
from gpujob.profile import Profile


def _rounded(m: MeterLine, what: str | None = None) -> MeterLine:
    return m.model_copy(
        update={
            "what": what or m.what,
            "usd_per_hour": round(m.usd_per_hour, 6),
            "usd_per_month": round(m.usd_per_month, 4),
        }
    )


def _gpu(profile: Profile, r: LiveResource) -> cost.GpuRate | None:
    """The profile's list price for the machine's GPUs, labelled with the price it bills at."""
    found = cost.offer_for(profile, r.gpu_id) if r.gpu_id else None
    if found is None:
        return None
    offer, id_count = found
    count = id_count or max(r.gpu_count, 1)
    rate = cost.gpu_rate(profile, [], r.gpu_id or "", count=count, cloud=r.cloud, spot=r.spot)
    spot = rate is not None and r.spot
    if rate is None and r.spot:
        # no spot list price: the on-demand one is the closest guess (the API rate replaces it anyway)
        rate = cost.gpu_rate(profile, [], r.gpu_id or "", count=count, cloud=r.cloud)
    if rate is None:
        return None
    if spot:
        flavour = "spot"
    elif r.cloud == "community" and offer.price_hour_community is not None:
        flavour = "community"
    else:
        flavour = r.cloud or "on-demand"
    return replace(rate, label=f"GPU {count}× {offer.alias} ({flavour})")


def _machine_meters(profile: Profile, r: LiveResource, *, static_ip_listed: bool) -> list[MeterLine]:
    """A pod's or machine's own meters: GPU while up, its disks, and an IP it holds."""
    running = r.status in ("running", "pending")
    fp = cost.Footprint(
        machine="running" if running else "stopped",
        gpu=_gpu(profile, r),
        container_disk_gb=r.container_disk_gb,
        volume_gb=r.volume_gb,
        static_ip=r.public_ip_kind == "static"
        and not static_ip_listed
        and any(a.id == "static_ip" for a in profile.addons),
    )
    state = "running" if running else "stopped"
    out: list[MeterLine] = []
    for key, m in cost.meters(fp, profile).items():
        kind = key.split(":")[0]
        what: str | None = m.what
        if kind == "container_disk":
            # an unreported size is left unpriced rather than guessed from the tier default
            what = f"container disk {r.container_disk_gb} GB ({state})" if r.container_disk_gb else None
        elif kind == "volume_disk":
            tier = profile.tier("volume_disk")
            ratio = ""
            if (
                not running
                and tier.price_gb_month_running
                and tier.price_gb_month_stopped != tier.price_gb_month_running
            ):
                ratio = f", {tier.price_gb_month_stopped / tier.price_gb_month_running:g}×"
            what = f"volume disk {r.volume_gb} GB ({state}{ratio})"
        elif kind == "block_storage":
            off = "running" if running else "off"
            what = f"block storage {r.volume_gb} GB ({off})" if r.volume_gb else None
        if what is not None:
            out.append(_rounded(m, what))
    if running and r.public_ip_kind == "dynamic":
        out += _addon(profile, "dynamic_ip", "dynamic public IP (while running)") or []
    return [m for m in out if m.usd_per_hour > 0]


def _addon(profile: Profile, addon_id: str, what: str, gb: float = 0) -> list[MeterLine] | None:
    try:
        return [_rounded(cost.addon_line(profile, addon_id, what=what, gb=gb))]
    except KeyError:
        return None  # the profile has no price for it


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
    if r.kind in ("pod", "machine"):
        return _machine_meters(profile, r, static_ip_listed=static_ip_listed)
    if r.kind == "network_volume":
        kind = r.volume_tier or "standard"
        if not r.volume_gb:
            return None
        try:
            line = cost.network_volume_line(
                profile, r.volume_gb, kind, what=f"network volume {r.volume_gb} GB ({kind})"
            )
        except KeyError:
            return None
        return [] if line is None else [_rounded(line)]
    if r.kind == "public_ip":
        return _addon(profile, "static_ip", "static public IP")
    if r.kind in ("snapshot", "shared_drive"):
        gb = size_gb(r)
        if gb is None:
            return None
        label = "snapshot" if r.kind == "snapshot" else "shared drive"
        return _addon(profile, r.kind, f"{label} {gb:g} GB", gb)
    if r.kind in ("template", "registry_auth"):
        return []  # free on both platforms as far as the profiles know
    return None
