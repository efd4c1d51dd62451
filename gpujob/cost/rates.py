"""Rates: what bills, at which rate, from the profile, the live quotes and the platform's own figures.

Pure functions. A job's billable footprint is described by a `Footprint` (machine state and storage
sizes); `meters()` turns it into MeterLines keyed by meter id ("gpu", "volume_disk", ...). The planner
walks a job's actions over footprints and reads each action's billing off the before/after meters;
`gpujob.cost.live` maps live resources onto footprints, so plan, status, cost and audit share one rate.
Amounts are computed in Decimal and stored as floats rounded to 9 places; renderers round to cents.
A month is 720 hours, the convention both platforms bill storage by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Literal

from gpujob.cost.model import Billing, MeterLine
from gpujob.gpus import matching_quote
from gpujob.live import PriceQuote
from gpujob.profile import HOURS_PER_MONTH, GpuOffer, Profile, StorageTier

MachineStatus = Literal["running", "stopped"]


@dataclass(frozen=True)
class GpuRate:
    """The compute meter of one machine: label, USD/h for the whole machine, and where the price came from."""

    label: str
    usd_per_hour: float
    source: str


@dataclass(frozen=True)
class Footprint:
    """Everything of one job that can bill, in one state. None / empty = does not exist."""

    machine: MachineStatus | None = None
    gpu: GpuRate | None = None
    container_disk_gb: int | None = None
    volume_gb: int | None = None
    network_volume: tuple[str, int, str] | None = None  # (name, size_gb, tier)
    # Volumes the job still owns but the spec no longer names (orphans): they bill like any other.
    extra_volumes: tuple[tuple[str, int, str], ...] = field(default_factory=tuple)
    static_ip: bool = False
    dynamic_ip: bool = False  # Paperspace: an address handed out at power-on, billed only while running
    snapshots: tuple[tuple[str, int], ...] = field(default_factory=tuple)  # (id, size_gb)
    # machine.nodes: each node is one machine with the meters above (GPU, disks, dynamic IP), N× in all
    nodes: int = 1

    def with_(self, **changes: object) -> Footprint:
        return replace(self, **changes)  # type: ignore[arg-type]


def _d(value: float | int) -> Decimal:
    return Decimal(str(value))


def _f(value: Decimal) -> float:
    return float(round(value, 9))


def profile_source(profile: Profile, as_of: object) -> str:
    return f"profile {profile.platform} {as_of}"


def _storage_line(what: str, gb: int, price_gb_month: float, cap: float | None, source: str) -> MeterLine:
    monthly = _d(gb) * _d(price_gb_month)
    capped = min(monthly, _d(cap)) if cap is not None else monthly
    return MeterLine(
        what=what,
        usd_per_hour=_f(monthly / HOURS_PER_MONTH),
        usd_per_month=_f(capped),
        monthly_cap_usd=cap,
        source=source,
    )


def _tier_line(profile: Profile, tier_id: str, what: str, gb: int, stopped: bool) -> MeterLine | None:
    return tier_line(profile, profile.tier(tier_id), gb, what=what, stopped=stopped)


def meters(fp: Footprint, profile: Profile) -> dict[str, MeterLine]:
    """Every meter running for this footprint, keyed by a stable meter id.

    Sizes are part of the key, so growing a volume reads as the old size's meter stopping and the new
    one starting, while a stop keeps the same key at the stopped rate ("keeps billing at 2×")."""
    out: dict[str, MeterLine | None] = {}
    stopped = fp.machine == "stopped"
    shared = _shared_meters(fp, profile)
    for key, line in _machine_meters(fp, profile, stopped).items():
        if fp.nodes <= 1 or line is None:
            out[key] = line
            continue
        for rank in range(fp.nodes):  # one line per node, so the plan shows every node and the N× sum
            out[f"{key}:node{rank}"] = line.model_copy(update={"what": f"{line.what} (node {rank})"})
    out |= shared
    return {k: v for k, v in out.items() if v is not None}


def _machine_meters(fp: Footprint, profile: Profile, stopped: bool) -> dict[str, MeterLine | None]:
    """What one machine of the footprint bills: its GPU, its disks, its dynamic IP."""
    out: dict[str, MeterLine | None] = {}
    if fp.machine == "running" and fp.gpu is not None:
        # keyed by label so a replace onto another GPU reads as one meter stopping and another starting
        out[f"gpu:{fp.gpu.label}"] = MeterLine(
            what=fp.gpu.label,
            usd_per_hour=_f(_d(fp.gpu.usd_per_hour)),
            usd_per_month=_f(_d(fp.gpu.usd_per_hour) * HOURS_PER_MONTH),
            source=fp.gpu.source,
        )
    if fp.machine is not None and profile.platform == "runpod":
        cd = fp.container_disk_gb or profile.tier("container_disk").default_gb or 0
        out[f"container_disk:{cd}"] = _tier_line(
            profile, "container_disk", f"container disk {cd} GB", cd, stopped
        )
        if fp.volume_gb:
            tier = profile.tier("volume_disk")
            label = f"volume disk {fp.volume_gb} GB"
            if stopped and tier.price_gb_month_running > 0:
                ratio = _d(tier.price_gb_month_stopped) / _d(tier.price_gb_month_running)
                label += f" (stopped, {ratio.normalize():f}×)" if ratio != 1 else " (stopped)"
            out[f"volume_disk:{fp.volume_gb}"] = _tier_line(
                profile, "volume_disk", label, fp.volume_gb, stopped
            )
    if fp.machine is not None and profile.platform == "paperspace":
        gb = fp.volume_gb or profile.tier("block_storage").default_gb or 0
        out[f"block_storage:{gb}"] = _tier_line(
            profile, "block_storage", f"block storage {gb} GB", gb, stopped
        )
    if fp.machine == "running" and fp.dynamic_ip and any(a.id == "dynamic_ip" for a in profile.addons):
        line = addon_line(profile, "dynamic_ip", what="dynamic public IP (while running)")
        if line.usd_per_hour > 0:
            out["dynamic_ip"] = line
    return out


def _shared_meters(fp: Footprint, profile: Profile) -> dict[str, MeterLine | None]:
    """What the job bills once, whatever its node count: network volumes, the private network, a static
    IP, snapshots."""
    out: dict[str, MeterLine | None] = {}
    mn = profile.multinode
    if fp.nodes > 1 and fp.machine is not None and mn is not None and mn.network_hour > 0:
        out["private_network"] = MeterLine(
            what="private network",
            usd_per_hour=_f(_d(mn.network_hour)),
            usd_per_month=_f(_d(mn.network_hour) * HOURS_PER_MONTH),
            source=profile_source(profile, mn.as_of),
        )
    if fp.network_volume is not None:
        name, size, tier_name = fp.network_volume
        out[f"network_volume:{size}"] = network_volume_line(
            profile, size, tier_name, what=f"network volume {name} {size} GB ({tier_name})"
        )
    for name, size, tier_name in fp.extra_volumes:
        out[f"network_volume:{name}:{size}"] = network_volume_line(
            profile, size, tier_name, what=f"network volume {name} {size} GB ({tier_name})"
        )
    if fp.static_ip:
        addon = profile.addon("static_ip")
        hourly = _d(addon.price_hour or 0)
        monthly = hourly * HOURS_PER_MONTH
        if addon.monthly_cap_usd is not None:
            monthly = min(monthly, _d(addon.monthly_cap_usd))
        out["static_ip"] = MeterLine(
            what="static public IP",
            usd_per_hour=_f(hourly),
            usd_per_month=_f(monthly),
            monthly_cap_usd=addon.monthly_cap_usd,
            source=profile_source(profile, addon.as_of),
        )
    if fp.snapshots:
        addon = profile.addon("snapshot")
        for snap_id, size in fp.snapshots:
            out[f"snapshot:{snap_id}"] = _storage_line(
                f"snapshot {snap_id} {size} GB",
                size,
                addon.price_gb_month or 0,
                addon.monthly_cap_usd,
                profile_source(profile, addon.as_of),
            )
    return out


def tier_line(
    profile: Profile, tier: StorageTier, gb: float, *, what: str, stopped: bool = False
) -> MeterLine | None:
    """One storage meter priced by the profile's own tier maths (StorageTier.month_price: marginal
    over-1 TB rate); None when it bills nothing. The hourly figure is the accrual rate before any cap."""
    uncapped = tier.model_copy(update={"monthly_cap_usd": None}).month_price(gb, stopped=stopped)
    if uncapped <= 0:
        return None
    return MeterLine(
        what=what,
        usd_per_hour=_f(_d(uncapped) / HOURS_PER_MONTH),
        usd_per_month=_f(_d(tier.month_price(gb, stopped=stopped))),
        monthly_cap_usd=tier.monthly_cap_usd,
        source=profile_source(profile, tier.as_of),
    )


def network_volume_line(
    profile: Profile, gb: float, kind: str = "standard", *, what: str
) -> MeterLine | None:
    """A network volume on its own (standard | high-performance); KeyError when the platform has none."""
    return tier_line(profile, profile.network_volume_tier(kind), gb, what=what)


def addon_line(profile: Profile, addon_id: str, *, what: str, gb: float = 0) -> MeterLine:
    """One add-on meter (static IP, snapshot, ...) from AddonPrice; KeyError when the profile has no such add-on."""
    addon = profile.addon(addon_id)
    return MeterLine(
        what=what,
        usd_per_hour=_f(_d(addon.hourly_price(gb))),
        usd_per_month=_f(_d(addon.month_price(gb))),
        monthly_cap_usd=addon.monthly_cap_usd,
        source=profile_source(profile, addon.as_of),
    )


def hourly_total(lines: dict[str, MeterLine]) -> float:
    return _f(sum((_d(m.usd_per_hour) for m in lines.values()), Decimal(0)))


def monthly_total(lines: dict[str, MeterLine]) -> float:
    return _f(sum((_d(m.usd_per_month) for m in lines.values()), Decimal(0)))


def billing(before: Footprint, after: Footprint, profile: Profile) -> Billing:
    """What an action that turns `before` into `after` does to the meters."""
    b, a = meters(before, profile), meters(after, profile)
    starts = [a[k] for k in a if k not in b]
    stops = [b[k] for k in b if k not in a]
    keeps = [a[k] for k in a if k in b]
    return Billing(
        starts=starts,
        stops=stops,
        keeps=keeps,
        hourly_before=hourly_total(b),
        hourly_after=hourly_total(a),
        summary=billing_summary(
            starts, stops, keeps, changed={k for k in a if k in b and a[k] != b[k]}, after=a
        ),
    )


def billing_summary(
    starts: list[MeterLine],
    stops: list[MeterLine],
    keeps: list[MeterLine],
    *,
    changed: set[str] | None = None,
    after: dict[str, MeterLine] | None = None,
) -> str:
    parts: list[str] = []
    parts += [f"{m.what} starts ({rate(m)})" for m in starts]
    parts += [f"{m.what} stops ({rate(m)})" for m in stops]
    changed_lines = [after[k] for k in sorted(changed or set())] if after else []
    parts += [f"{m.what} now bills {rate(m)}" for m in changed_lines]
    kept = [m for m in keeps if m not in changed_lines]
    if kept and (starts or stops or changed_lines):
        parts.append("still billing: " + ", ".join(f"{m.what} {rate(m)}" for m in kept))
    return "; ".join(parts) if parts else "no change to billing"


def rate(m: MeterLine) -> str:
    """A meter's natural rate: compute (and what bills only while running) by the hour, storage and
    add-ons by the month."""
    if m.what.startswith("GPU") or "while running" in m.what:
        return f"{usd(m.usd_per_hour)}/h"
    capped = m.monthly_cap_usd is not None and m.usd_per_month >= m.monthly_cap_usd
    return f"{usd(m.usd_per_month)}/mo" + (" (monthly cap)" if capped else "")


def usd(amount: float | None) -> str:
    """Cents normally; sub-dollar-cent rates keep four places so they never print as $0.00."""
    if amount is None:
        return "$?"
    sign = "-" if amount < 0 else ""
    value = abs(amount)
    if value and value < 0.1 and round(value, 2) != value:
        return f"{sign}${value:.4f}"
    return f"{sign}${value:,.2f}"


# --- GPU prices --------------------------------------------------------------------------------


def offer_for(profile: Profile, gpu: str) -> tuple[GpuOffer, int | None] | None:
    """The profile offer for an alias or platform id; the int is the machine's GPU count when the id
    names a multi-GPU machine type (Paperspace A4000x2)."""
    offer = profile.gpu(gpu)
    if offer is not None:
        return offer, None
    for o in profile.gpus:
        for count, mid in o.multi_gpu_ids.items():
            if mid == gpu:
                return o, count
    return None


def gpu_rate(
    profile: Profile,
    quotes: Sequence[PriceQuote],
    gpu: str,
    *,
    count: int = 1,
    cloud: str | None = None,
    spot: bool = False,
) -> GpuRate | None:
    """Price of one machine with `count` GPUs: a live quote when there is one, else the profile's list price."""
    found = offer_for(profile, gpu)
    if found is None:
        return None
    offer, id_count = found
    count = id_count or count
    cloud_name = cloud or ("secure" if profile.platform == "runpod" else None)
    kind = "spot" if spot else "on-demand"
    label = f"GPU {count}× {offer.alias}" + (
        f" ({cloud_name}, {kind})" if profile.platform == "runpod" else ""
    )
    q = matching_quote(
        quotes, profile.platform, (offer.platform_id,), spot=spot, cloud=cloud_name, count=count
    )
    if q is not None:
        return GpuRate(label, _f(_d(q.price_hour) * count), f"{q.source} {q.as_of.date().isoformat()}")
    price: float | None = offer.price_hour
    source = profile_source(profile, offer.as_of)
    if spot:
        price = offer.price_hour_spot
        if cloud_name == "community":  # the profile's spot prices are the secure cloud's: say so
            source += " (secure spot price: no community spot price is listed)"
    elif cloud_name == "community" and offer.price_hour_community is not None:
        price = offer.price_hour_community
    if price is None:
        return None
    return GpuRate(label, _f(_d(price) * count), source)


def quote_available(
    profile: Profile,
    quotes: Sequence[PriceQuote],
    gpu: str,
    spot: bool,
    *,
    cloud: str | None = None,
    count: int = 1,
) -> bool | None:
    found = offer_for(profile, gpu)
    if found is None:
        return None
    cloud = cloud or ("secure" if profile.platform == "runpod" else None)
    q = matching_quote(quotes, profile.platform, (found[0].platform_id,), spot=spot, cloud=cloud, count=count)
    return q.available if q is not None else None
