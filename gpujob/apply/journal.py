"""The apply journal: journal/<job>.jsonl in the project's store, one line per event, appended (fsynced
locally, committed in PostgreSQL).

An intent line is written before every step and an outcome line after it, so a killed apply leaves a
record of the step that was in flight. Apply itself converges from live state (level-triggered); the
journal tells it where to look harder: a create whose outcome is unknown may not be listed yet, so the
applier reads again before concluding the resource is absent. Secret values never reach this file.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from gpujob.model import Model

if TYPE_CHECKING:
    from gpujob.state import StateRef

Phase = Literal["begin", "intent", "done", "failed", "skipped", "end"]

CRASHPOINT_ENV = "GPUJOB_TEST_CRASHPOINT"


class JournalEntry(Model):
    at: datetime
    run: str = Field(description="Id of the apply that wrote the line.")
    phase: Phase
    action_id: str | None = None
    kind: str | None = None
    resource_name: str | None = None
    resource_id: str | None = None
    detail: str = ""


class Journal:
    def __init__(self, state: StateRef, job: str) -> None:
        from gpujob.state import as_store

        self.store = as_store(state)
        self.name = f"journal/{job}.jsonl"
        self.job = job
        self.run = uuid.uuid4().hex[:12]

    def append(
        self, entry_or_phase: JournalEntry | Phase, at: datetime, **fields: str | None
    ) -> JournalEntry:
        entry = (
            entry_or_phase
            if isinstance(entry_or_phase, JournalEntry)
            else JournalEntry(at=at, run=self.run, phase=entry_or_phase, **fields)  # type: ignore[arg-type]
        )
        self.store.append(self.name, json.dumps(entry.model_dump(mode="json"), sort_keys=True).encode())
        return entry

    def entries(self) -> list[JournalEntry]:
        """Every readable line; a line torn by a kill mid-write is skipped, not fatal."""
        out: list[JournalEntry] = []
        for raw in self.store.lines(self.name):
            try:
                out.append(JournalEntry.model_validate_json(raw))
            except ValueError:
                continue
        return out

    def in_flight(self) -> dict[str, JournalEntry]:
        """Steps whose last line is an intent: their outcome is unknown (the apply died mid-step)."""
        last: dict[str, JournalEntry] = {}
        for e in self.entries():
            if e.action_id is not None and e.phase in ("intent", "done", "failed", "skipped"):
                last[e.action_id] = e
        return {k: e for k, e in last.items() if e.phase == "intent"}


def crashpoint(where: Literal["before", "after"], action_id: str) -> None:
    """Test hook: GPUJOB_TEST_CRASHPOINT=before:<action id> (intent written, call not made) or
    after:<action id> (call made, outcome not written) kills the process on the spot."""
    wanted = os.environ.get(CRASHPOINT_ENV)
    if wanted and wanted == f"{where}:{action_id}":
        os._exit(137)


def journal_of(ls: Any) -> Journal:
    """The journal of a loaded job file's job, in its project's store."""
    from gpujob.state import open_store

    return Journal(open_store(ls.path), ls.spec.name)
