"""Which queue each cell was placed on, kept so that no later split moves it (the seed's "idempotency
guard scope must contain the scheduling scope": a queue's "never run again" guard is the state dir on
its own machine's disk, which no other machine sees).

Two sources, both read when a sweep job file is loaded (gpujob.sweep.expand):
- sweeps/<job>.json in the project's store: cell -> queue number, written by apply before it places a
  version on a queue (a launch, a relaunch, a run change applied from the next cell), so a placement
  that dies half-way is still remembered;
- the cell records pulled to outputs.pull_to/<cell>/ (`queue=q<N>`, written by the wrapper), so a
  finished cell stays where it ran even when the store was lost or is another checkout's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from gpujob.model import Model


class Leaving(Model):
    """A placed cell on its way to another queue (gpujob.sweep.rebalance): its origin got a version
    without it; it lands on `to` once the origin is proven never to start it."""

    origin: int = Field(description="the queue it was placed on (cells[cell] still says so)")
    to: int = Field(description="the queue it lands on once proven")
    since: datetime | None = Field(
        None, description="when it was marked leaving (the bound of its wait: gpujob.sweep.stranded)"
    )


class Assignment(Model):
    job: str
    cells: dict[str, int] = Field(default_factory=dict, description="cell -> queue number it was placed on")
    leaving: dict[str, Leaving] = Field(
        default_factory=dict, description="cells leaving their queue (gpujob.sweep.rebalance)"
    )
    started: list[str] = Field(
        default_factory=list, description="cells seen started where placed: never moved again"
    )
    at: datetime


def record_name(job: str) -> str:
    return f"sweeps/{job}.json"


def read_assignment(store: Any, job: str) -> dict[str, int]:
    from gpujob.state import as_store

    data = as_store(store).read(record_name(job))
    if data is None:
        return {}
    try:
        return dict(Assignment.model_validate_json(data).cells)
    except ValueError:
        return {}  # an unreadable record: the pulled records still keep the finished cells in place


def note_placed(store: Any, job: str, n: int, cells: Iterable[str], now: datetime | None = None) -> None:
    """Before queue N gets a version: its cells are placed there for good (merged under the store's lock)."""
    names = list(cells)

    def change(rec: Assignment) -> None:
        rec.cells.update({c: n for c in names})
        for c in names:  # a cell placed on a queue is no longer on its way anywhere
            rec.leaving.pop(c, None)

    update_assignment(store, job, change, now)


def read_record(store: Any, job: str) -> Assignment | None:
    from gpujob.state import as_store

    data = as_store(store).read(record_name(job))
    if data is None:
        return None
    try:
        return Assignment.model_validate_json(data)
    except ValueError:
        return None


def update_assignment(store: Any, job: str, change: Any, now: datetime | None = None) -> None:
    """Change the job's record under the store's lock (`change` edits an Assignment in place)."""
    from gpujob.state import as_store

    def edit(old: bytes | None) -> bytes:
        rec = Assignment(job=job, at=now or datetime.now(UTC))
        # an unreadable record starts afresh: the pulled records still keep the finished cells in place
        with contextlib.suppress(ValueError):
            rec = Assignment.model_validate_json(old) if old is not None else rec
        change(rec)  # its dicts and lists are edited in place (the model itself is frozen)
        rec = rec.model_copy(update={"at": now or datetime.now(UTC)})
        return (rec.model_dump_json(indent=2) + "\n").encode()

    as_store(store).update(record_name(job), edit)


def pulled_queues(pull_to: Path, cells: Iterable[str]) -> dict[str, int]:
    """cell -> queue from the records pulled to pull_to/<cell>/ that name their queue."""
    from gpujob.layout.isolation import local_records

    out: dict[str, int] = {}
    for cell, rec in local_records(pull_to, list(cells)).items():
        if rec is not None and rec.queue is not None:
            out[cell] = rec.queue
    return out


def placed_cells(loaded: Any, cells: Iterable[str]) -> dict[str, int]:
    """Where each cell of a loaded sweep job file was placed: the store's record, and where a pulled
    record says otherwise, the pulled record (it is where the cell ran)."""
    from gpujob.layout.outputs import pull_to
    from gpujob.state import open_store

    names = list(cells)
    out = read_assignment(open_store(loaded.path), loaded.spec.name)
    out.update(pulled_queues(pull_to(loaded.spec, loaded.path), names))
    return {c: q for c, q in out.items() if c in set(names)}


def note_queues(loaded: Iterable[Any], jobs: Mapping[str, Any], store_of: Any) -> None:
    """For each loaded sweep queue in `jobs` (job name -> anything): note its cells placed on it."""
    for ls in loaded:
        q = getattr(ls, "sweep", None)
        if q is not None and ls.spec.name in jobs:
            note_placed(store_of(ls), q.sweep_job, q.n, [c.name for c in q.cells])
