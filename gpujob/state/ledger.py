"""watch's ledger of one job as the store keeps it (watch/<job>.json): its name, the fields of one run
in it, and its reading. gpujob.watch.ledger writes the whole document; gpujob.cost.history reads the
subset the forecast needs, so the reasoning floors need not import the watch loop. Both read it here,
so the two cannot drift apart on what a run in the ledger is."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel

from gpujob.state import StateRef, read_model

M = TypeVar("M", bound=BaseModel)


def ledger_name(job: str) -> str:
    return f"watch/{job}.json"


class RunFields(BaseModel):
    """One launch of the command, known by the launcher's started_at stamp, with its first and last
    step and how it exited (the reader's and the writer's models set their own strictness)."""

    started_at: str
    first_step: int | None = None
    first_at: datetime | None = None
    last_step: int | None = None
    last_at: datetime | None = None
    exit_code: int | None = None


def read_ledger_as(state: StateRef, job: str, model: type[M]) -> M | None:
    """The job's ledger as `model` (the whole of it or a subset); None for none, or an unreadable one."""
    return read_model(state, ledger_name(job), model)
