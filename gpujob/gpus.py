"""GPU aliases -> platform offers: which (GPU, region, cloud) to try, in what order, at what price.

The job file names GPUs by gpujob alias (H100-80GB, A4000, ...) in preference order; the platform
profile maps each alias to the platform's identifier and an indicative list price. Live quotes read at
plan time replace the list price when one matches. Pure functions: no I/O beyond the given profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Literal

from pydantic import Field

from gpujob.jobfile.model import MachineSpec
from gpujob.live import PriceQuote
from gpujob.model import Model
from gpujob.profile import GpuOffer, Profile

Cloud = Literal["secure", "community"]


class GpuNotOffered(LookupError):
    """The alias, or this GPU count of it, does not exist on the platform."""


class Candidate(Model):
    """One concrete offer worth trying at create time."""

    alias: str = Field(description="gpujob GPU alias, e.g. A100-80GB.")
    platform_id: str = Field(description="What to send: RunPod gpuTypeId / Paperspace machineType (A4000x2).")
    gpu_count: int
    region: str | None = Field(description="Data center / region id; None = let the platform choose.")
    cloud: Cloud | None = Field(description="RunPod cloud; None on Paperspace.")
    spot: bool = False
    price_hour: float = Field(description="USD per hour for the whole machine (all its GPUs).")
    price_source: str
    price_as_of: datetime

    def describe(self) -> str:
        where = self.region or "any region"
        kind = "" if self.cloud is None else f" {self.cloud}{' spot' if self.spot else ''}"
        return f"{self.gpu_count}× {self.alias} in {where}{kind} at ${self.price_hour:.2f}/h"


def resolve_gpu(profile: Profile, alias: str, count: int = 1) -> str:
    """The platform identifier for `count` GPUs of `alias`.

    RunPod takes the GPU type id plus a separate count; Paperspace encodes the count in the machine
    type (A4000x2), so only the counts the profile lists exist there.
    """
    offer = profile.gpu(alias)
    if offer is None:
        known = ", ".join(g.alias for g in profile.gpus)
        raise GpuNotOffered(f"{profile.platform} has no GPU '{alias}' (known: {known})")
    if count < 1 or count > profile.limits.max_gpu_count:
        raise GpuNotOffered(f"{profile.platform} takes 1-{profile.limits.max_gpu_count} GPUs, not {count}")
    if not profile.gpu_count_in_machine_type or count == 1:
        return offer.platform_id
    if count in offer.multi_gpu_ids:
        return offer.multi_gpu_ids[count]
    counts = ", ".join(str(n) for n in [1, *sorted(offer.multi_gpu_ids)])
    raise GpuNotOffered(
        f"{profile.platform} offers {offer.alias} only as {counts} GPU(s) per machine, not {count}"
    )


def alias_for(profile: Profile, platform_id: str) -> tuple[str, int] | None:
    """Reverse lookup for live resources: 'A4000x2' -> ('A4000', 2); unknown ids -> None."""
    for offer in profile.gpus:
        if offer.platform_id == platform_id:
            return offer.alias, 1
        for count, machine_type in offer.multi_gpu_ids.items():
            if machine_type == platform_id:
                return offer.alias, count
    return None


def candidates(
    profile: Profile, machine: MachineSpec, quotes: list[PriceQuote] | None = None
) -> list[Candidate]:
    """Every offer matching `machine`, best first: GPU list order, then region order, then cloud.

    Unknown aliases, unsupported counts, GPUs not offered in a region, offers a live quote marks
    unavailable and offers above machine.max_price_per_hour are left out.
    """
    out: list[Candidate] = []
    for alias in machine.gpu:
        offer = profile.gpu(alias)
        if offer is None:
            continue
        try:
            platform_id = resolve_gpu(profile, alias, machine.gpu_count)
        except GpuNotOffered:
            continue
        for region in _regions(profile, offer, machine.regions):
            for cloud in _clouds(profile, machine):
                found = _price(profile, offer, platform_id, cloud, machine, quotes or [])
                if found is None:
                    continue
                per_gpu, source, as_of = found
                total = round(per_gpu * machine.gpu_count, 6)
                if machine.max_price_per_hour is not None and total > machine.max_price_per_hour:
                    continue
                out.append(
                    Candidate(
                        alias=offer.alias,
                        platform_id=platform_id,
                        gpu_count=machine.gpu_count,
                        region=region,
                        cloud=cloud,
                        spot=_spot(profile, machine),
                        price_hour=total,
                        price_source=source,
                        price_as_of=as_of,
                    )
                )
    return out


def _spot(profile: Profile, machine: MachineSpec) -> bool:
    """Spot pricing for the candidates: `true`, and `prefer` where the platform has spot at all (RunPod).
    A `prefer` create that falls back to on-demand is held to max_price_per_hour by the provider."""
    return machine.spot is True or (machine.spot == "prefer" and "spot" in profile.options)


def _regions(profile: Profile, offer: GpuOffer, wanted: list[str]) -> list[str | None]:
    if not wanted:
        # Paperspace needs a region at create; RunPod picks one itself when none is given.
        if offer.regions:
            return [r for r in profile.regions if r in offer.regions] or list(offer.regions)
        return [None]
    out: list[str | None] = []
    for name in wanted:
        region = profile.normalise_region(name) or name
        if offer.regions and region not in offer.regions:
            continue
        if region not in out:
            out.append(region)
    return out


def _clouds(profile: Profile, machine: MachineSpec) -> list[Cloud | None]:
    if "cloud" not in profile.options:
        return [None]
    # The spec documents secure as the default cloud; community is tried only when asked for.
    return [machine.cloud or "secure"]


def _price(
    profile: Profile,
    offer: GpuOffer,
    platform_id: str,
    cloud: Cloud | None,
    machine: MachineSpec,
    quotes: list[PriceQuote],
) -> tuple[float, str, datetime] | None:
    """(USD per GPU-hour, source, as_of), or None when a live quote says the offer is unavailable."""
    spot = _spot(profile, machine)
    q = matching_quote(
        quotes,
        profile.platform,
        (offer.platform_id, platform_id),
        spot=spot,
        cloud=cloud,
        count=machine.gpu_count,
    )
    if q is not None:
        if q.available is False:
            return None
        return q.price_hour, q.source, _aware(q.as_of)
    as_of = _aware(offer.as_of)
    listed = f"profile {profile.platform}: {offer.source}"
    if spot:
        if offer.price_hour_spot is not None:
            return offer.price_hour_spot, listed, as_of
        # No spot list price: the on-demand price bounds it from above, so max-price checks stay safe.
        return offer.price_hour, f"{listed} (on-demand price; no spot list price)", as_of
    if cloud == "community":
        if offer.price_hour_community is not None:
            return offer.price_hour_community, listed, as_of
        return offer.price_hour, f"{listed} (secure price; no community list price)", as_of
    return offer.price_hour, listed, as_of


def matching_quote(
    quotes: Sequence[PriceQuote],
    platform: str,
    gpu_ids: tuple[str, ...],
    *,
    spot: bool,
    cloud: str | None,
    count: int,
) -> PriceQuote | None:
    """The live quote for an offer: same platform, GPU, spot-ness and cloud; the one whose stock was asked
    for this GPU count when there is one (8 GPUs can be out while 1 is in), else any (prices are per GPU)."""
    found = [
        q
        for q in quotes
        if q.platform == platform
        and q.spot == spot
        and q.gpu_id in gpu_ids
        and (q.cloud is None or cloud is None or q.cloud == cloud)
    ]
    return next((q for q in found if q.gpu_count == count), found[0] if found else None)


def _aware(value: date | datetime) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return datetime(value.year, value.month, value.day, tzinfo=UTC)
