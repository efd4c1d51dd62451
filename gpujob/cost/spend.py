"""Money spent so far, per resource: the platform's own billing where it has one (RunPod's v2 billing),
otherwise an estimate from metered time, priced by the same rates as every other figure.

An estimate rebuilds each resource's timeline from what is known (the platform's events for a Paperspace
machine's on/off spans, creation dates, the time gpujob deleted it or last saw it) and bills it the way
the profile says the platform does: per second, or every started hour in full (`profile.billed_hours`),
each meter's monthly maximum per 30-day cycle. What it could not see is said in `basis`, never shown as
$0.00."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field

from gpujob.cost import rates
from gpujob.cost.live import MACHINE_KINDS, Pricing, footprint
from gpujob.cost.model import MeterLine
from gpujob.cost.seen import Seen
from gpujob.live import LiveResource, Metering, Span
from gpujob.model import Model, Platform
from gpujob.profile import HOURS_PER_MONTH, Profile, billed_hours

SpendSource = Literal["billing", "estimate"]
MONTH = timedelta(hours=HOURS_PER_MONTH)


class SpendLine(Model):
    """One resource: what it has cost, how that is known, and what it bills now."""

    platform: Platform
    kind: str
    id: str
    name: str
    state: str = Field(description="running / stopped / available, or gone once deleted.")
    usd: float
    source: SpendSource
    basis: str = ""
    usd_per_hour: float = Field(0.0, description="What it bills per hour now (0 once gone).")


def granularity(profile: Profile, key: str, volume_tier: str | None = None) -> str:
    """How the meter `key` (rates.meters' keys) is billed: "second" or "hour"."""
    kind = key.split(":")[0]
    if kind == "gpu":
        return profile.compute_billing_granularity
    if kind == "network_volume":
        try:
            return profile.network_volume_tier(volume_tier or "standard").billing_granularity
        except KeyError:
            return "hour"
    if kind in ("static_ip", "dynamic_ip", "snapshot"):
        try:
            return profile.addon(kind).billing_granularity
        except KeyError:
            return "hour"
    try:
        return profile.tier(kind).billing_granularity
    except KeyError:
        return "second"


def charge(m: MeterLine, periods: Sequence[tuple[datetime, datetime]], how: str, created: datetime) -> float:
    """USD for meter `m` over its billing periods (each a stretch at one rate), capped per 30-day cycle
    from `created` the way the platform caps a resource's monthly charge."""
    return _charge_runs([(a, b, m) for a, b in periods], how, created)


def _charge_runs(runs: Sequence[tuple[datetime, datetime, MeterLine]], how: str, created: datetime) -> float:
    """One meter's billing periods, each at its own rate (a RunPod volume disk bills at 2× while its pod
    is stopped), capped as one resource: the last period's monthly maximum per 30-day cycle."""
    total = 0.0
    for start, end, m in runs:
        seconds = (end - start).total_seconds()
        if seconds <= 0:
            continue
        hours = billed_hours(seconds) if how == "hour" else seconds / 3600
        total += m.usd_per_hour * hours
    cap = runs[-1][2].monthly_cap_usd if runs else None
    if cap is not None:
        cycles = int((runs[-1][1] - created) / MONTH) + 1
        total = min(total, cap * cycles)
    return total


State = Literal["running", "stopped"]


def _timeline(
    start: datetime, end: datetime, spans: Sequence[Span]
) -> list[tuple[datetime, datetime, State]]:
    """[start, end) cut into running / stopped stretches by the running spans."""
    out: list[tuple[datetime, datetime, State]] = []
    t = start
    for s in sorted(spans, key=lambda s: s.start):
        a, b = max(s.start, start), min(s.end or end, end)
        if b <= a:
            continue
        if a > t:
            out.append((t, a, "stopped"))
        out.append((a, b, "running"))
        t = max(t, b)
    if t < end:
        out.append((t, end, "stopped"))
    return out


def _bill_timeline(
    p: Pricing,
    r: LiveResource,
    timeline: Sequence[tuple[datetime, datetime, State]],
    created: datetime,
    ip_listed: bool,
) -> float:
    """Price a resource over its timeline: per meter, contiguous stretches at one rate form one billing
    period (an hourly meter bills each period's started hours; a new period starts when its rate
    changes or it stops billing, as the platforms do), each at its own rate."""
    lines = {st: rates.meters(_fp(p, r, st, ip_listed), p.profile) for st in ("running", "stopped")}
    periods: dict[str, list[tuple[datetime, datetime, MeterLine]]] = {}
    for a, b, st in timeline:
        for key, m in lines[st].items():
            runs = periods.setdefault(key, [])
            if runs and runs[-1][1] == a and runs[-1][2].usd_per_hour == m.usd_per_hour:
                runs[-1] = (runs[-1][0], b, m)
            else:
                runs.append((a, b, m))
    total = 0.0
    for key, runs in periods.items():
        how = granularity(p.profile, key, r.volume_tier)
        total += _charge_runs(runs, how, created)
    return total


def _fp(p: Pricing, r: LiveResource, state: State, ip_listed: bool) -> rates.Footprint:
    if r.kind in MACHINE_KINDS:
        fp = footprint(p, [r.model_copy(update={"status": state})])
        return fp.with_(static_ip=False) if ip_listed else fp  # the IP object is counted on its own
    return footprint(p, [r])


def _iso(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M} UTC"


def resource_spend(
    p: Pricing,
    r: LiveResource,
    *,
    live: bool,
    seen: Seen | None,
    metering: Metering,
    now: datetime,
    usd_per_hour: float = 0.0,
    ip_listed: bool = False,
) -> SpendLine:
    """What one resource has cost until `now` (platform clock), from billing or an estimate."""
    state = r.status if live else "gone"
    base = dict(platform=r.platform, kind=r.kind, id=r.id, name=r.name or r.public_ip or r.id, state=state,
                usd_per_hour=usd_per_hour if live else 0.0)  # fmt: skip
    billed = metering.billed.get(r.id)
    if billed is not None:
        since = f" since {metering.billed_since:%Y-%m-%d}" if metering.billed_since else " (last 30 days)"
        return SpendLine(**base, usd=round(billed, 6), source="billing",  # type: ignore[arg-type]
                         basis=f"{r.platform} billing{since}")  # fmt: skip
    notes: list[str] = []
    created = r.created_at
    if created is None and seen is not None:
        created = seen.first_seen
        notes.append(f"creation time unknown: counted from when gpujob first saw it ({_iso(created)})")
    if created is None:
        return SpendLine(
            **base, usd=0.0, source="estimate", basis="nothing known of when it was created: not counted"
        )  # type: ignore[arg-type]
    end = now
    ended = metering.ended.get(r.id)
    if ended is not None:
        end = ended
    elif not live and seen is not None:
        if seen.gone_at is not None:
            end = seen.gone_at
        else:
            end = seen.last_seen
            gone_by = f", gone by {_iso(seen.gone_by)}" if seen.gone_by else ""
            notes.append(f"counted until last seen {_iso(end)}{gone_by} (deleted outside gpujob)")
    spans = metering.running.get(r.id)
    if r.kind in MACHINE_KINDS and spans is None:
        spans = _guess_spans(r, live, end, notes)
    running: State = "running"
    timeline = _timeline(created, end, spans or []) if r.kind in MACHINE_KINDS else [(created, end, running)]
    usd = _bill_timeline(p, r, timeline, created, ip_listed)
    what = "platform events" if r.id in metering.running else "known times"
    basis = f"estimate from metered time ({what}, {_iso(created)} to {'now' if end == now else _iso(end)})"
    return SpendLine(**base, usd=round(usd, 6), source="estimate", basis="; ".join([basis, *notes]))  # type: ignore[arg-type]


def _guess_spans(r: LiveResource, live: bool, end: datetime, notes: list[str]) -> list[Span]:
    """Without the platform's history: the run it was (last seen) in since its start is known; earlier
    runs are not."""
    if r.status in ("running", "pending"):
        start = r.started_at or r.created_at
        if start is not None:
            if r.started_at is not None and r.created_at is not None and r.started_at > r.created_at:
                notes.append("GPU time before the last start not seen (counted as stopped)")
            return [Span(start=start, end=end)]
    notes.append("GPU time not seen (no run history)")
    return []


def projected_charge(lines: dict[str, MeterLine], seconds: float, profile: Profile) -> float:
    """What these meters bill over `seconds` from now, each at its billing granularity (Paperspace bills
    every started hour of compute in full, so 1.5 h of GPU is 2 h): the plan's budget projection."""
    if seconds <= 0:
        return 0.0
    start = datetime(2000, 1, 1)
    period = [(start, start + timedelta(seconds=seconds))]
    return sum(charge(m, period, granularity(profile, key), start) for key, m in lines.items())


def more_until(
    p: Pricing,
    live: Sequence[LiveResource],
    seen: dict[str, Seen],
    metering: Metering,
    now: datetime,
    until: datetime,
) -> float:
    """What the live resources add from `now` to `until` if nothing changes, billed as the platform bills
    (started hours already charged are not charged again): the estimate to `until` minus the one to now,
    both over the same timelines (billing figures left out: they cannot be extended)."""
    if until <= now:
        return 0.0
    estimate = metering.model_copy(update={"billed": {}})
    with_ip = {r.machine_id for r in live if r.kind == "public_ip" and r.machine_id}
    total = 0.0
    for r in live:
        kw = dict(live=True, seen=seen.get(r.id), metering=estimate, ip_listed=r.id in with_ip)
        later = resource_spend(p, r, now=until, **kw)  # type: ignore[arg-type]
        total += later.usd - resource_spend(p, r, now=now, **kw).usd  # type: ignore[arg-type]
    return max(total, 0.0)


def job_spend(
    p: Pricing,
    live: Sequence[LiveResource],
    seen: dict[str, Seen],
    metering: Metering,
    now: datetime,
    burn: dict[str, float],
) -> list[SpendLine]:
    """Every resource of a job, live ones first, then the ones gpujob saw before that are gone."""
    known = list(live) + [s.resource for rid, s in seen.items() if rid not in {r.id for r in live}]
    with_ip = {r.machine_id for r in known if r.kind == "public_ip" and r.machine_id}
    out = [
        resource_spend(p, r, live=True, seen=seen.get(r.id), metering=metering, now=now,
                       usd_per_hour=burn.get(r.id, 0.0), ip_listed=r.id in with_ip)
        for r in live
    ]  # fmt: skip
    listed = {r.id for r in live}
    for rid, s in sorted(seen.items(), key=lambda kv: kv[1].first_seen):
        if rid not in listed:
            out.append(
                resource_spend(
                    p, s.resource, live=False, seen=s, metering=metering, now=now, ip_listed=rid in with_ip
                )
            )
    return out
