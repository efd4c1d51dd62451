"""`gpujob state rm TARGET`: forget a job's resources, or one resource, without touching the platform.

A job name forgets every resource that job owns now; an id or a name forgets that one. Only the
forgotten list of the project's store changes (gpujob.project.ownership): pull records, the journal and
the spend ledger stay, so the teardown gate and `gpujob cost` keep their evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpujob import naming
from gpujob.errors import GpujobError
from gpujob.live import LiveResource


def targets(
    loaded: Sequence[Any], listed: dict[str, list[LiveResource]], target: str
) -> list[tuple[Any, LiveResource]]:
    """(job, resource) pairs TARGET names; GpujobError listing what it could have been otherwise."""
    owned = [
        (ls, r)
        for ls in loaded
        for r in naming.owned(listed.get(ls.spec.platform, []), ls.spec.name, ls.project)
    ]
    from gpujob.layout.address import names_job

    # a job's name; a sweep's stands for all its queues, a queue is abl.q1 or abl--q1
    jobs = [ls for ls in loaded if names_job(target, ls.spec.name)]
    if jobs:
        return _once([(ls, r) for ls, r in owned if ls in jobs])
    picked = [(ls, r) for ls, r in owned if target in (r.id, r.name)]
    if picked:
        return _once(picked)
    known = ", ".join(f"{r.id} ({r.kind} {r.name} of {ls.spec.name})" for ls, r in owned) or "none"
    raise GpujobError(
        f"nothing here is named {target!r}: no job of that name, and no resource a job owns has that id or name",
        hint=f"see `gpujob state list`; the jobs here: {', '.join(ls.spec.name for ls in loaded)}; "
        f"their resources: {known}",
    )


def _once(pairs: list[tuple[Any, LiveResource]]) -> list[tuple[Any, LiveResource]]:
    """Each resource once: the queues of a sweep share its network volume, which the first one names."""
    seen: set[str] = set()
    out = []
    for ls, r in pairs:
        if r.id not in seen:
            seen.add(r.id)
            out.append((ls, r))
    return out


def forget(pairs: list[tuple[Any, LiveResource]]) -> None:
    from gpujob.project import ownership
    from gpujob.state import open_store

    by_path: dict[Any, list[dict[str, Any]]] = {}
    for ls, r in pairs:
        by_path.setdefault(ls.path, []).append(
            {
                "id": r.id,
                "job": ls.spec.name,
                "kind": r.kind,
                "name": r.name,
                "platform": r.platform,
                "project": ls.project,
            }
        )
    for path, entries in by_path.items():
        ownership.forget(open_store(path), entries)
