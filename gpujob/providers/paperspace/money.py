"""Paperspace's money facts: it has no billing or price API, so what a machine cost is its running
spans from its own events (it bills compute only while on), and prices come from the profile table."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from gpujob.errors import ProviderError
from gpujob.live import Metering, PriceQuote, ResourceRef, Span
from gpujob.providers.paperspace import wire
from gpujob.providers.paperspace.client import PLATFORM, PaperspaceClient


async def metering(client: PaperspaceClient, refs: Sequence[ResourceRef]) -> Metering:
    """Paperspace has no billing API: each machine's running spans from its own events (it bills
    compute only while on), and when it was destroyed. The cost engine prices the time."""
    machines = [r.id for r in refs if r.kind == "machine"]
    call = client.api.call_name("GET", "/machine-events")
    out = Metering(source=f"{call} {client.api.platform_now():%Y-%m-%d}")
    histories = await asyncio.gather(*(client.list_events(m) for m in machines), return_exceptions=True)
    for mid, events in zip(machines, histories, strict=True):
        if isinstance(events, ProviderError):
            out.errors.append(f"Paperspace machine-events of {mid}: {events}")
            continue
        if isinstance(events, BaseException):
            raise events
        spans, ended = running_spans(events)
        out.running[mid] = spans
        if ended is not None:
            out.ended[mid] = ended
    return out


def quotes(now: datetime) -> list[PriceQuote]:
    """Paperspace has no price API: prices come from the profile table, and say so."""
    from gpujob.profile import load_profile

    try:
        profile = load_profile(PLATFORM)
    except Exception:  # the bundled profile is missing or broken: no prices rather than a crash
        return []
    out: list[PriceQuote] = []
    for g in profile.gpus:
        out.append(quote(g.platform_id, g.price_hour, g.as_of, g.source, now))
        for machine_type in g.multi_gpu_ids.values():
            out.append(quote(machine_type, g.price_hour, g.as_of, g.source, now))
    return out


def quote(gpu_id: str, per_gpu: float, as_of: Any, source: str, now: datetime) -> PriceQuote:
    return PriceQuote(
        platform=PLATFORM,
        gpu_id=gpu_id,
        price_hour=per_gpu,
        source="profile paperspace (no price API)",
        as_of=datetime(as_of.year, as_of.month, as_of.day, tzinfo=UTC) if hasattr(as_of, "year") else now,
    )


# Machine events that start or end a running span (REFERENCE §2.3 event names). A span starts when a
# create/start/restart finishes (the machine is up) and ends when a stop, forced shutdown, restart or
# destroy is asked for (compute stops billing as the machine goes down).
_UP = ("create", "start", "restart")
_DOWN = ("stop", "vm-shutdown-force", "restart", "deactivate")


def running_spans(events: Sequence[wire.MachineEvent]) -> tuple[list[Span], datetime | None]:
    """(running spans, destroyed at) from a machine's events, oldest first."""
    marks: list[tuple[datetime, int, str]] = []
    for e in events:
        name = (e.name or "").lower()
        if name in _DOWN and e.dt_created is not None and not (e.failed and name != "deactivate"):
            marks.append((e.dt_created, 0, "down" if name != "deactivate" else "gone"))
        if name in _UP and e.finished and not e.failed and e.dt_finished is not None:
            marks.append((e.dt_finished, 1, "up"))
    spans: list[Span] = []
    ended: datetime | None = None
    start: datetime | None = None
    for at, _, what in sorted(marks):
        if what == "up" and start is None and ended is None:
            start = at
        elif what in ("down", "gone") and start is not None:
            spans.append(Span(start=start, end=at))
            start = None
        if what == "gone":
            ended = at
    if start is not None:
        spans.append(Span(start=start))
    return spans, ended
