"""Positive evidence, from the project's state store, that a stopped machine holds nothing the gate
protects, so it is not started (GPU billing, RP1) just to be looked at.

All of these must hold: the journal shows gpujob created this very machine; after that, no step of
the job launched, pulled, pushed, updated or replaced anything (a relaunch after a disk grow is an
update); no pull record and no outputs record names it; and the job file has no checkpoint block and
no outputs. Anything missing (another checkout, a lost state dir, a foreign machine) is no evidence:
the gate looks, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Kinds of journal steps after the create that may have put something on the machine's disks.
_WROTE = frozenset({"launch", "pull", "push", "update", "replace"})


def nothing_to_protect(
    spec: Any, machine_id: str, entries: Sequence[Any], pull_record: Any, outputs_record: Any
) -> str | None:
    """Why the machine certainly holds nothing to protect, or None when that is not certain."""
    if spec.checkpoint is not None or (spec.outputs is not None and spec.outputs.paths):
        return None  # (an outputs block without paths: another platform's run log, gpujob.failover.leftover)
    created = next(
        (
            i
            for i, e in enumerate(entries)
            if e.phase == "done" and e.kind == "create" and e.resource_id == machine_id
        ),
        None,
    )
    if created is None:
        return None
    if any(e.kind in _WROTE for e in entries[created + 1 :]):
        return None
    for record in (pull_record, outputs_record):
        if record is not None and getattr(record, "resource_id", None) == machine_id:
            return None
    when = entries[created].at.strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"gpujob created it ({when}), never launched a run on it and never pulled from it, and the job "
        "has no checkpoint block or outputs: nothing on its disks to protect"
    )
