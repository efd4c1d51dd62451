"""What live resources bill right now, meter by meter: the one place plan, status, cost and audit price them.

A job's live objects (its pod or machine, volumes, IPs, snapshots) map onto a `Footprint` priced by
`rates.meters`, and one resource alone maps onto the footprint of just that resource, so the audit's
per-resource lines add up to the plan's "billing now" by construction. The facts that decide a rate:

- the GPU actually running: the platform's own rate for it (RunPod `pod.cost`, documented as the current
  USD per hour) while it runs, else a live catalog quote, else the profile's list price;
- the state it is in: a stopped RunPod pod's volume disk bills at the stopped (2×) rate, a stopped
  Paperspace machine's storage and static IP go on billing, a dynamic IP bills only while running;
- sizes the API does not report: a Paperspace snapshot copies its machine's disk (PS9), so it is priced at
  that disk's size, or at a size recorded earlier, or at the smallest disk with a note saying so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from gpujob.cost import rates as cost
from gpujob.cost.model import MeterLine
from gpujob.live import LiveResource, PriceQuote
from gpujob.profile import HOURS_PER_MONTH, Profile

MACHINE_KINDS = ("pod", "machine")
GROUP_KINDS = ("cluster", "private_network")  # a multi-node job's one resource (gpujob.naming.GROUP_KINDS)


@dataclass(frozen=True)
class Pricing:
    """What pricing a live resource needs beyond the resource itself."""

    profile: Profile
    quotes: Sequence[PriceQuote] = ()
    # Every pod / machine of the account by id: a snapshot is sized by the machine it was taken from.
    machines: Mapping[str, LiveResource] = field(default_factory=dict)
    # Sizes recorded earlier (gpujob.cost.seen) for snapshots whose machine is gone: id -> GB.
    known_sizes: Mapping[str, int] = field(default_factory=dict)
    read_at: datetime | None = None


def gpu_rate(p: Pricing, r: LiveResource) -> cost.GpuRate | None:
    """The compute meter of a live pod / machine, labelled with the GPU it really has."""
    profile = p.profile
    found = cost.offer_for(profile, r.gpu_id) if r.gpu_id else None
    if found is None:
        return None
    offer, id_count = found
    count = id_count or max(r.gpu_count, 1)
    rate = cost.gpu_rate(profile, p.quotes, r.gpu_id or "", count=count, cloud=r.cloud, spot=r.spot)
    if rate is None and r.spot:
        # no spot list price: the on-demand one is the closest guess (the API rate replaces it when running)
        rate = cost.gpu_rate(profile, p.quotes, r.gpu_id or "", count=count, cloud=r.cloud)
    api = api_rate(r)
    if api is not None:
        when = f" {p.read_at.date().isoformat()}" if p.read_at else ""
        label = rate.label if rate else f"GPU {count}× {offer.alias}"
        return cost.GpuRate(label, api, f"{r.platform} API pod.cost{when}")
    return rate


def api_rate(r: LiveResource) -> float | None:
    """The platform's own current compute rate, where it is documented as USD per hour: RunPod's v2
    `pod.cost` ("current cost in USD per hour", 0 once EXITED). Paperspace's `usageRate` has no documented
    unit, so it is not used as a price."""
    if r.platform != "runpod" or r.kind != "pod" or r.status not in ("running", "pending"):
        return None
    if r.cost_per_hour is None or r.cost_per_hour <= 0:
        return None
    return r.cost_per_hour


def snapshot_gb(p: Pricing, r: LiveResource) -> tuple[int, str]:
    """(GB, note): Paperspace lists snapshots without a size; one copies its machine's disk (PS9)."""
    if r.volume_gb:
        return r.volume_gb, ""
    machine = p.machines.get(r.machine_id or "")
    if machine is not None and machine.volume_gb:
        return machine.volume_gb, f"size of {machine.name}'s {machine.volume_gb} GB disk"
    if r.id in p.known_sizes:
        return p.known_sizes[r.id], f"size of its machine's disk when last seen ({p.known_sizes[r.id]} GB)"
    smallest = p.profile.tier("block_storage").min_gb if p.profile.platform == "paperspace" else None
    gb = smallest or 0
    return gb, f"machine gone and size never seen: priced at the smallest disk ({gb} GB), it may be larger"


def footprint(
    p: Pricing, resources: Sequence[LiveResource], *, volume: str | None = None, label: str | None = None
) -> cost.Footprint:
    """The footprint of a set of live resources (a job's, or one alone). `volume` names the network
    volume the spec wants (its meter is the one the plan grows or deletes, shown as `label`, the spec's
    own name for it); the others are extras."""
    fp = cost.Footprint()
    machines = [r for r in resources if r.kind in MACHINE_KINDS + GROUP_KINDS and r.status != "terminating"]
    if machines:
        m = machines[0]
        fp = fp.with_(
            nodes=max(len(m.nodes), 1) if m.kind in GROUP_KINDS else 1,
            machine="stopped" if m.status == "stopped" else "running",
            gpu=gpu_rate(p, m),
            container_disk_gb=m.container_disk_gb,
            volume_gb=m.volume_gb,
            static_ip=m.public_ip_kind == "static",
            dynamic_ip=m.public_ip_kind == "dynamic",
        )
    volumes = [r for r in resources if r.kind == "network_volume" and r.status != "terminating"]
    main = next((v for v in volumes if v.name == volume), None) if volume else None
    if main is None and volume is None and len(volumes) == 1:
        main = volumes[0]
    if main is not None:
        name, size, tier = _volume(main)
        fp = fp.with_(network_volume=(label or name, size, tier))
    extras = tuple(_volume(v) for v in volumes if v is not main)
    if extras:
        fp = fp.with_(extra_volumes=extras)
    if any(r.kind == "public_ip" for r in resources):
        fp = fp.with_(static_ip=True)
    snaps = [r for r in resources if r.kind == "snapshot"]
    if snaps:
        fp = fp.with_(snapshots=tuple((s.id, snapshot_gb(p, s)[0]) for s in snaps))
    return fp


def _volume(v: LiveResource) -> tuple[str, int, str]:
    return (v.name, v.volume_gb or 0, v.volume_tier or "standard")


def job_meters(
    p: Pricing, resources: Sequence[LiveResource], *, volume: str | None = None, label: str | None = None
) -> dict[str, MeterLine]:
    return cost.meters(footprint(p, resources, volume=volume, label=label), p.profile)


# --- one resource at a time, with the audit's labels ----------------------------------------------


def _rounded(m: MeterLine, what: str | None = None) -> MeterLine:
    return m.model_copy(
        update={
            "what": what or m.what,
            "usd_per_hour": round(m.usd_per_hour, 6),
            "usd_per_month": round(m.usd_per_month, 4),
        }
    )


def _flavour(p: Pricing, r: LiveResource) -> str:
    offer = cost.offer_for(p.profile, r.gpu_id or "")
    if r.spot and (api_rate(r) is not None or (offer and offer[0].price_hour_spot is not None)):
        return "spot"  # priced as spot (without a spot price the on-demand one stands in, labelled so)
    if r.cloud == "community" and offer and offer[0].price_hour_community is not None:
        return "community"
    return r.cloud or "on-demand"


def _machine_meters(p: Pricing, r: LiveResource, *, static_ip_listed: bool) -> list[MeterLine]:
    """A pod's or machine's own meters: GPU while up, its disks, and an IP it holds."""
    profile = p.profile
    running = r.status in ("running", "pending")
    fp = footprint(p, [r])
    if static_ip_listed or not any(a.id == "static_ip" for a in profile.addons):
        fp = fp.with_(static_ip=False)  # the listed IP object carries its own meter
    if fp.gpu is not None:
        offer = cost.offer_for(profile, r.gpu_id or "")
        alias = offer[0].alias if offer else r.gpu_id
        count = (offer[1] if offer else None) or max(r.gpu_count, 1)
        fp = fp.with_(gpu=replace(fp.gpu, label=f"GPU {count}× {alias} ({_flavour(p, r)})"))
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
    p: Pricing | Profile, r: LiveResource, *, static_ip_listed: bool = False
) -> list[MeterLine] | None:
    """Meters billing now for one resource; None when the profile cannot price it (shape unknown)."""
    if not isinstance(p, Pricing):
        p = Pricing(profile=p)
    profile = p.profile
    if r.status == "terminating":
        return []
    if r.kind in MACHINE_KINDS:
        return _machine_meters(p, r, static_ip_listed=static_ip_listed)
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
        return _addon(profile, "static_ip", f"static public IP {r.public_ip or r.id}")
    if r.kind == "snapshot":
        gb, _ = snapshot_gb(p, r)
        if not gb:
            return None
        return _addon(profile, "snapshot", f"snapshot {gb:g} GB", gb)
    if r.kind == "shared_drive":
        gb2 = size_gb(r)
        if gb2 is None:
            return None
        return _addon(profile, "shared_drive", f"shared drive {gb2:g} GB", gb2)
    if r.kind in ("template", "registry_auth", "startup_script"):
        return []  # free on both platforms as far as the profiles know
    if r.kind == "cluster":
        return []  # a group: its member pods bill, each listed and priced as a pod
    if r.kind == "endpoint":
        return _endpoint_meters(r)
    return None


def _endpoint_meters(r: LiveResource) -> list[MeterLine] | None:
    """A serverless endpoint's always-on workers (workers.min), at the rate its provider read."""
    workers = r.attributes.get("workers_min")
    if not workers:
        return []
    if r.cost_per_hour is None:
        return None  # no serverless price for its pools: unknown, and the audit says so
    what = f"{workers} always-on worker(s) × {max(r.gpu_count, 1)} GPU ({r.attributes.get('pools') or 'pools unknown'})"
    source = str(r.attributes.get("rate_source") or "API")
    return [
        MeterLine(
            what=what,
            usd_per_hour=round(r.cost_per_hour, 6),
            usd_per_month=round(r.cost_per_hour * HOURS_PER_MONTH, 4),
            source=f"RunPod API {source}",
        )
    ]


def resource_note(p: Pricing, r: LiveResource) -> str:
    """Why a figure is what it is, when that is not obvious from the meter (sizes taken from elsewhere)."""
    if r.kind == "snapshot":
        return snapshot_gb(p, r)[1]
    api = api_rate(r)
    if api is not None:
        listed = gpu_rate(
            Pricing(profile=p.profile, quotes=p.quotes), r.model_copy(update={"cost_per_hour": None})
        )
        if listed is not None and abs(listed.usd_per_hour - api) > 0.0005:
            return f"API compute rate; the {listed.source.split()[0]} lists ${listed.usd_per_hour:.4f}/h"
    return ""
