"""ownership.json in the project's store: the resources `gpujob state rm` forgot and the ones
`gpujob import` adopted, by platform id. Only these two commands write it; every command that knows
its project loads it into gpujob.naming (gpujob.project.with_projects).

    {"forgotten": {"<id>": {"job", "kind", "name", "platform", "project", "at", "by"}},
     "adopted":   {"<id>": {"job", "kind", "name", "name_before", "platform", "project", "at", "by"}}}

A forgotten resource is no job's: plan, apply, watch, status and cost leave it alone (it keeps billing
on the platform until someone deletes it there). Nothing else is removed: pull records, the journal and
the seen-resources ledger stay, so the teardown gate and `gpujob cost` keep their evidence.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from gpujob.lock import user_at_host
from gpujob.state import StateRef, as_store

NAME = "ownership.json"


def read(state: StateRef) -> dict[str, dict[str, dict[str, Any]]]:
    data = as_store(state).read(NAME)
    doc = json.loads(data) if data else {}
    return {"forgotten": dict(doc.get("forgotten") or {}), "adopted": dict(doc.get("adopted") or {})}


def _change(state: StateRef, edit: Any) -> None:
    def change(data: bytes | None) -> bytes:
        doc = json.loads(data) if data else {}
        doc.setdefault("forgotten", {})
        doc.setdefault("adopted", {})
        edit(doc)
        return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()

    as_store(state).update(NAME, change)


def forget(state: StateRef, entries: list[dict[str, Any]]) -> None:
    """Record these resources (each with id, job, kind, name, platform, project) as forgotten."""
    at = datetime.now(UTC).isoformat()

    def edit(doc: dict[str, Any]) -> None:
        for e in entries:
            doc["adopted"].pop(e["id"], None)
            doc["forgotten"][e["id"]] = {
                **{k: v for k, v in e.items() if k != "id"},
                "at": at,
                "by": user_at_host(),
            }

    _change(state, edit)


def adopt(state: StateRef, entry: dict[str, Any]) -> None:
    """Record one adopted resource (id, job, kind, name, name_before, platform, project)."""
    at = datetime.now(UTC).isoformat()

    def edit(doc: dict[str, Any]) -> None:
        doc["forgotten"].pop(entry["id"], None)
        doc["adopted"][entry["id"]] = {
            **{k: v for k, v in entry.items() if k != "id"},
            "at": at,
            "by": user_at_host(),
        }

    _change(state, edit)


def load(state: StateRef, project: str | None) -> None:
    """Tell gpujob.naming what this project forgot and adopted."""
    if project is None:
        return
    from gpujob import naming

    doc = read(state)
    naming.remember(
        forgotten={rid: project for rid, e in doc["forgotten"].items() if e.get("project") == project},
        adopted={rid: project for rid, e in doc["adopted"].items() if e.get("project") == project},
    )
