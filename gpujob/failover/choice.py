"""Can the job's current platform serve it, and where would it go otherwise. Pure: live quotes in,
a Choice out (the plan shows it; watch acts on it).

A place serves when at least one of its GPU candidates (gpujob.gpus.candidates: the spec's order,
under machine.max_price_per_hour) is in stock and under budget.max_hourly_usd. Spot offers carry no
stock of their own in RunPod's catalog, so an offer whose GPU the catalog lists as out of stock in that
cloud counts as out for spot too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpujob.jobfile.fallback import effective_spec, place_name
from gpujob.jobfile.model import JobSpec
from gpujob.live import PriceQuote


@dataclass(frozen=True)
class Place:
    entry: int  # -1: the job file's own platform; i: fallback[i]
    platform: str
    name: str  # "runpod" / "paperspace (fallback[0])"
    serves: bool
    why: str  # why it cannot serve ("" when it can)
    usd_per_hour: float | None  # the first candidate's machine price; None when none is in stock
    offer: str | None  # the first candidate, described


@dataclass(frozen=True)
class Choice:
    here: Place
    places: list[Place] = field(default_factory=list)  # every place, chain order (its own first)
    move_to: Place | None = None
    why: str = ""  # why the job moves (or would, were a place able to take it)
    failback: bool = False
    held: str = ""  # why no move is proposed though a place could serve: its rate is over the cap (capped.py)
    back: str = ""  # why no failback is proposed though home could serve: it refused (failback.py)

    @property
    def stuck(self) -> bool:
        """The job cannot be served where it is, and nowhere else either."""
        return not self.here.serves and self.move_to is None


def _stocked(platform: str, gpu_id: str, cloud: str | None, count: int, quotes: Sequence[PriceQuote]) -> bool:
    same = [
        q
        for q in quotes
        if q.platform == platform and q.gpu_id == gpu_id and q.cloud == cloud and q.available is not None
    ]
    counted = [q for q in same if q.gpu_count == count] or same
    return not any(q.available is False for q in counted)


def judge(
    declared: JobSpec, entry: int, quotes: Sequence[PriceQuote], spot_gone: Mapping[str, str] | None = None
) -> Place:
    """`spot_gone`: platform -> why it creates and resumes no spot pods any more (LiveState.spot_unavailable):
    a `spot: true` machine cannot start there, whatever its stock."""
    from gpujob import gpus
    from gpujob.profile import load_profile

    spec = effective_spec(declared, entry)
    profile = load_profile(spec.platform)
    name = place_name(declared, entry)
    uncapped = spec.machine.model_copy(update={"max_price_per_hour": None})
    every = gpus.candidates(profile, uncapped, list(quotes))
    capped = [
        c
        for c in gpus.candidates(profile, spec.machine, list(quotes))
        if spec.budget.max_hourly_usd is None or c.price_hour <= spec.budget.max_hourly_usd
    ]
    stocked = [c for c in capped if _stocked(spec.platform, c.platform_id, c.cloud, c.gpu_count, quotes)]
    gone = (spot_gone or {}).get(spec.platform)
    if stocked and spec.machine.spot is True and gone:
        why = f"machine.spot: true cannot start there: {spec.platform}'s spot API is gone ({gone})"
        return Place(entry, spec.platform, name, False, why, stocked[0].price_hour, None)
    if stocked:
        first = stocked[0]
        return Place(entry, spec.platform, name, True, "", first.price_hour, first.describe())
    gpu_list = ", ".join(spec.machine.gpu)
    if every and not capped:
        cap = spec.machine.max_price_per_hour or spec.budget.max_hourly_usd
        why = f"every {gpu_list} offer is over the price cap (${cap:.2f}/h)"
    else:
        why = f"no capacity for any of {gpu_list}{' (spot)' if spec.machine.spot else ''}"
    cheapest = min((c.price_hour for c in capped), default=None)
    return Place(entry, spec.platform, name, False, why, cheapest, None)


def choose(
    declared: JobSpec,
    entry: int,
    quotes: Sequence[PriceQuote],
    *,
    failed_starts: int = 0,
    running_here: bool = False,
    spot_gone: Mapping[str, str] | None = None,
    failback_held: str = "",
) -> Choice:
    """Where the job (declared as written, running on `entry` now) should be. `failed_starts`: starts
    refused on the current platform in a row (watch counts them); failover_after of them mean it
    cannot serve, whatever its catalog says. `spot_gone`: see judge. `running_here`: the job's machine
    runs where it is: it is served, whatever stock is left for others (a spot pod too, its API gone).
    `failback_held`: why home, which refused the start lately, gets no failback now (failback.hold)."""
    places = [judge(declared, e, quotes, spot_gone) for e in [-1, *range(len(declared.fallback))]]
    here = next(p for p in places if p.entry == entry)
    if running_here and not here.serves and not here.why.startswith("every"):  # capacity, not price
        here = Place(
            here.entry, here.platform, here.name, True, "", here.usd_per_hour, "its machine, running"
        )
        places = [here if p.entry == entry else p for p in places]
    waits = effective_spec(declared, entry).machine.when_unavailable == "wait"
    if (
        waits
        and not here.serves
        and not here.why.startswith("every")
        and failed_starts < declared.failover_after
    ):
        # machine.when_unavailable: wait: no stock here is a wait, not a move; a wait that ran out
        # (past wait_up_to) is a failed start, and failover_after of them move the job as before.
        here = Place(
            here.entry, here.platform, here.name, True, "", here.usd_per_hour,
            "waits for capacity (machine.when_unavailable: wait)",
        )  # fmt: skip
        places = [here if p.entry == entry else p for p in places]
    if here.serves and failed_starts >= declared.failover_after:
        here = Place(
            here.entry,
            here.platform,
            here.name,
            False,
            f"{failed_starts} failed starts in a row (failover_after: {declared.failover_after})",
            here.usd_per_hour,
            here.offer,
        )
        places = [here if p.entry == entry else p for p in places]
    if not declared.fallback:
        return Choice(here, places)
    if here.serves:
        home = places[0]
        if entry >= 0 and declared.failback == "auto" and home.serves:
            if failback_held:
                return Choice(here, places, back=failback_held)
            return Choice(here, places, home, f"{home.name} can serve again (failback: auto)", failback=True)
        return Choice(here, places)
    target = next((p for p in places if p.entry != entry and p.serves), None)
    return Choice(here, places, target, f"{here.name}: {here.why}")
