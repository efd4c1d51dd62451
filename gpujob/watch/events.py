"""Watch events: one line each, on stdout and appended to <state>/events.jsonl.

This module is the only place that writes or reads events, so they can be moved to another state
backend by changing it alone. Every text passes gpujob.redact before it is shown or stored: events
are built from gpujob's own words, but a reason can quote an error message, and an error message can
quote anything.
"""

from __future__ import annotations

import json
import os
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from gpujob.model import Model

Level = Literal["info", "action", "warning", "human"]

EVENTS_FILE = "events.jsonl"
READ_TAIL_BYTES = 256 << 10  # `status` reads the last events, never a whole long-running file


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
        return text


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


def events_path(state_dir: Path) -> Path:
    return state_dir / EVENTS_FILE


def append_event(state_dir: Path, event: Event) -> None:
    """One JSON line, appended in one write (concurrent appenders never interleave within a line)."""
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = (event.model_dump_json() + "\n").encode()
    fd = os.open(events_path(state_dir), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_events(state_dir: Path, job: str | None = None, *, last: int = 5) -> list[Event]:
    """The newest `last` events (of `job`, or of every job), oldest first. Torn or foreign lines are skipped."""
    path = events_path(state_dir)
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - READ_TAIL_BYTES))
            tail = fh.read()
    except FileNotFoundError:
        return []
    lines = tail.splitlines()
    if size > READ_TAIL_BYTES:
        lines = lines[1:]  # the first line is probably cut
    out: deque[Event] = deque(maxlen=max(0, last))
    for raw in lines:
        try:
            ev = Event.model_validate(json.loads(raw))
        except ValueError:
            continue
        if job is None or ev.job == job:
            out.append(ev)
    return list(out)
