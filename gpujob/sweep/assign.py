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

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from gpujob.model import Model


class Assignment(Model):
    job: str
    cells: dict[str, int] = Field(default_factory=dict, description="cell -> queue number it was placed on")
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
    from gpujob.state import as_store

    names = list(cells)

    def change(old: bytes | None) -> bytes:
        kept: dict[str, int] = {}
        if old is not None:
            try:
                kept = dict(Assignment.model_validate_json(old).cells)
            except ValueError:
                kept = {}
        kept.update({c: n for c in names})
        rec = Assignment(job=job, cells=kept, at=now or datetime.now(UTC))
        return (rec.model_dump_json(indent=2) + "\n").encode()

    as_store(store).update(record_name(job), change)


def pulled_queues(pull_to: Path, cells: Iterable[str]) -> dict[str, int]:
    """cell -> queue from the records pulled to pull_to/<cell>/ that name their queue."""
    from gpujob.sweep.isolation import local_records

    out: dict[str, int] = {}
    for cell, rec in local_records(pull_to, list(cells)).items():
        if rec is not None and rec.queue is not None:
            out[cell] = rec.queue
    return out


def placed_cells(loaded: Any, cells: Iterable[str]) -> dict[str, int]:
    """Where each cell of a loaded sweep job file was placed: the store's record, and where a pulled
    record says otherwise, the pulled record (it is where the cell ran)."""
    from gpujob.outputs.roots import pull_to
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
