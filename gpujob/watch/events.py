"""Watch events: one line each, on stdout and appended to events.jsonl in the project's store
(gpujob.state: .gpujob/events.jsonl locally). This module is the only place that writes or reads them. Every text passes gpujob.redact before it is shown or stored: events
are built from gpujob's own words, but a reason can quote an error message, and an error message can
quote anything.
"""

from __future__ import annotations

import json
from collections import deque
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from gpujob.model import Model
from gpujob.state import StateRef, as_store

Level = Literal["info", "action", "warning", "human"]

EVENTS = "events.jsonl"
READ_LINES = 2000  # `status` looks this far back for a job's last events


class Event(Model):
    at: datetime
    job: str = Field(description="Job name, or '-' for the watcher itself.")
    event: str = Field(description="Short kind: preempted, recovered, pulled, needs-human, parked, ...")
    happened: str = Field(description="What was observed.")
    did: str = Field("", description="What watch did about it (empty: nothing needed or allowed).")
    usd_so_far: float | None = Field(None, description="Money the job has cost so far, as watch counts it.")
    level: Level = "info"

    def line(self) -> str:
        """`2026-11-29 12:00:03Z  bert  preempted: pod ... is EXITED -> started it again  ($1.20 so far)`"""
        when = self.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        text = f"{when}  {self.job}  {self.event}: {self.happened}"
        if self.did:
            text += f" -> {self.did}"
        if self.usd_so_far is not None:
            text += f"  (${self.usd_so_far:,.2f} so far)"
        from gpujob.safe import for_terminal

        return for_terminal(text)  # what happened quotes the machine and the API (names, errors)


def make_event(
    at: datetime,
    job: str,
    event: str,
    happened: str,
    did: str = "",
    *,
    usd_so_far: float | None = None,
    level: Level = "info",
) -> Event:
    from gpujob.redact import redact

    return Event(
        at=at,
        job=job,
        event=event,
        happened=_one_line(redact(happened)),
        did=_one_line(redact(did)),
        usd_so_far=None if usd_so_far is None else round(usd_so_far, 4),
        level=level,
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())[:600]


def append_event(state: StateRef, event: Event) -> None:
    """One JSON line, appended to the project's store in one write."""
    as_store(state).append(EVENTS, event.model_dump_json().encode())


def read_events(state: StateRef, job: str | None = None, *, last: int = 5) -> list[Event]:
    """The newest `last` events (of `job`, or of every job), oldest first. Torn or foreign lines are
    skipped; only the newest READ_LINES lines are looked at, never a whole long-running log."""
    out: deque[Event] = deque(maxlen=max(0, last))
    for raw in as_store(state).lines(EVENTS, last=READ_LINES):
        try:
            ev = Event.model_validate(json.loads(raw))
        except ValueError:
            continue
        if job is None or ev.job == job:
            out.append(ev)
    return list(out)
