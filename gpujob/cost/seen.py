"""What gpujob has seen of each job's billable resources: the document seen/<job>.json in the project's
Store (gpujob.state).

A resource that is gone is no longer listed, yet it cost money while it existed. `gpujob cost` counts it
from this record: its last known shape (GPU, disk sizes: what prices it), when gpujob first and last saw
it, and when it went (exactly, when gpujob deleted it itself; else only "gone by" the next read). Times
are the platform's clock. Written by status, cost and apply, never by plan (a plan changes nothing, not
even local state), through Store.update so two commands recording at once do not lose each other's."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import Field

from gpujob.live import LiveResource, ResourceRef
from gpujob.model import Model
from gpujob.state import StateRef, as_store

BILLABLE = ("pod", "machine", "network_volume", "public_ip", "snapshot")


class Seen(Model):
    resource: LiveResource = Field(description="The last shape gpujob saw (secrets never reach it).")
    first_seen: datetime
    last_seen: datetime
    gone_at: datetime | None = Field(None, description="When gpujob deleted it, on the platform's clock.")
    gone_by: datetime | None = Field(
        None, description="First read that no longer listed it (it went before)."
    )

    @property
    def gone(self) -> bool:
        return self.gone_at is not None or self.gone_by is not None

    def ref(self) -> ResourceRef:
        r = self.resource
        return ResourceRef(
            platform=r.platform, kind=r.kind, id=r.id, created_at=r.created_at or self.first_seen
        )


def name_of(job: str) -> str:
    return f"seen/{job}.json"


def _parse(raw: bytes | None) -> dict[str, Seen]:
    """id -> Seen; an unreadable document reads as empty (it is a cache of what the platform said)."""
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        return {}
    out: dict[str, Seen] = {}
    for rid, row in data.items() if isinstance(data, dict) else []:
        try:
            out[rid] = Seen.model_validate(row)
        except ValueError:
            continue
    return out


def load(state: StateRef, job: str) -> dict[str, Seen]:
    return _parse(as_store(state).read(name_of(job)))


def record(
    state: StateRef,
    job: str,
    listed: Iterable[LiveResource],
    at: datetime,
    *,
    complete: bool = True,
    deleted: Mapping[str, datetime] | None = None,
    platform: str | None = None,
) -> dict[str, Seen]:
    """Merge one read of the job's resources (`listed`, read at platform time `at`) into the record.
    With `complete` (the listing covered the job's platform without errors), a recorded resource missing
    from it is marked gone by `at`; `deleted` gives exact deletion times gpujob observed itself. `platform`:
    the listing covered only that platform (a job that may run on several keeps the others' as they were)."""
    rows = [r for r in listed if r.kind in BILLABLE and r.status != "terminating"]
    result: dict[str, Seen] = {}

    def change(raw: bytes | None) -> bytes:
        seen = _parse(raw)
        present = set()
        for r in rows:
            present.add(r.id)
            old = seen.get(r.id)
            clean = r.model_copy(update={"ssh": None})
            if old is None or old.gone:
                seen[r.id] = Seen(resource=clean, first_seen=at, last_seen=at)
            else:
                seen[r.id] = old.model_copy(update={"resource": clean, "last_seen": max(at, old.last_seen)})
        for rid, when in (deleted or {}).items():
            if rid in seen and rid not in present:
                seen[rid] = seen[rid].model_copy(update={"gone_at": when, "gone_by": None})
        if complete:
            for rid, s in seen.items():
                if rid not in present and not s.gone and platform in (None, s.resource.platform):
                    seen[rid] = s.model_copy(update={"gone_by": at})
        result.update(seen)
        data = {rid: s.model_dump(mode="json") for rid, s in seen.items()}
        return json.dumps(data, indent=1, sort_keys=True).encode()

    as_store(state).update(name_of(job), change)
    return result
