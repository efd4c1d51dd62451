"""Where the job runs now: failover/<job>.json in the project's store.

No record (or entry -1) is the job file's own platform. A move writes the record before it creates
anything on the new platform, so a move that dies half-way is picked up by the next plan on the new
platform (its create is adopted by name) instead of being forgotten; the old platform's resources are
never touched by it and stay visible (status, cost) through the record's `left`.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import Field

from gpujob.model import Model, Platform

if TYPE_CHECKING:
    from gpujob.jobfile.model import JobSpec
    from gpujob.state import StateRef


class Move(Model):
    at: datetime
    from_entry: int
    to_entry: int
    from_platform: Platform
    to_platform: Platform
    why: str
    checkpoint: str | None = Field(None, description="The verified checkpoint file carried (relative name).")
    step: int | None = None
    outcome: str = Field("started", description="started | done | failed: <why> (the job is parked).")


class Placement(Model):
    job: str
    entry: int = Field(-1, description="-1: the job file's own platform; i: fallback[i].")
    platform: Platform
    since: datetime
    moves: list[Move] = Field(default_factory=list)


def record_name(job: str) -> str:
    return f"failover/{job}.json"


def read_placement(state: StateRef, job: str) -> Placement | None:
    from gpujob.state import as_store

    data = as_store(state).read(record_name(job))
    return None if data is None else Placement.model_validate_json(data)


def write_placement(state: StateRef, placement: Placement) -> None:
    from gpujob.state import as_store

    as_store(state).write(record_name(placement.job), (placement.model_dump_json(indent=2) + "\n").encode())


def placed_spec(declared: JobSpec, entry: int) -> JobSpec:
    """The job as it runs on entry `entry`, with the rest of the chain (its own platform first) as its
    fallback, so every platform it may be on is still read (status, cost, the next move)."""
    from gpujob.jobfile.fallback import effective_spec
    from gpujob.jobfile.model import FallbackSpec

    if entry < 0 or entry >= len(declared.fallback):
        return declared
    here = effective_spec(declared, entry)
    home = FallbackSpec(platform=declared.platform, machine=declared.machine, storage=declared.storage)
    rest = [home] + [f for i, f in enumerate(declared.fallback) if i != entry]
    return here.model_copy(update={"fallback": rest})


def named_platforms(record: Placement) -> list[str]:
    """Every platform the record names, in order: where the job runs now, then each move's ends."""
    ends = [p for m in record.moves for p in (m.from_platform, m.to_platform)]
    return list(dict.fromkeys([record.platform, *ends]))


def strays(declared: JobSpec, record: Placement | None) -> tuple[str, ...]:
    """The platforms the record names that the job file no longer lists (its entry was removed): the
    job may still hold resources there, so they are read, and nothing but their teardown is planned
    there (gpujob.failover.leftover)."""
    if record is None:
        return ()
    listed = {declared.platform, *(f.platform for f in declared.fallback)}
    return tuple(p for p in named_platforms(record) if p not in listed)


def _entry_now(declared: JobSpec, record: Placement) -> int:
    """The record's entry, when the job file still has it on the record's platform; else the first
    entry on that platform; else -1 (the job file's own platform, also when it no longer lists the
    record's platform at all)."""
    fb = declared.fallback
    if 0 <= record.entry < len(fb) and fb[record.entry].platform == record.platform:
        return record.entry
    if record.entry < 0 or declared.platform == record.platform:
        return -1
    return next((i for i, f in enumerate(fb) if f.platform == record.platform), -1)


def placed(loaded: Any, store: StateRef) -> Any:
    """The loaded job as it runs now: its spec swapped for its entry's when a move put it elsewhere
    (with `declared` keeping the job file's own and `entry` the index), and `strays` naming the
    platforms its record names that the job file no longer lists."""
    spec = loaded.spec
    record = read_placement(store, spec.name)
    gone = strays(spec, record)
    if not spec.fallback:
        return dataclasses.replace(loaded, strays=gone) if gone else loaded
    entry = -1 if record is None else _entry_now(spec, record)
    return dataclasses.replace(loaded, spec=placed_spec(spec, entry), declared=spec, entry=entry, strays=gone)
