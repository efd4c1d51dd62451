"""What a person decided that watch must not undo: a job `gpujob destroy` tore down stays down."""

from __future__ import annotations

from typing import Any


def destroyed_on_purpose(loaded: Any) -> str | None:
    """`gpujob destroy` tore the job down: watch never creates it again (apply --recreate does)."""
    from gpujob.plan.records import load_destroyed
    from gpujob.state import open_store

    if loaded.spec.state == "absent":
        return None
    rec = load_destroyed(open_store(loaded.path), loaded.spec.name)
    return rec.describe() if rec is not None else None
