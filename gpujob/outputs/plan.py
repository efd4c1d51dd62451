"""The plan's data line for outputs: which output paths an action erases, and what the last outputs
pull saw there (files and bytes), read from the outputs record. Only jobs with an outputs block."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _record(loaded: Any) -> Any:
    try:
        from gpujob.plan.outputs_record import load_outputs_record
        from gpujob.state import open_store

        return load_outputs_record(open_store(loaded.path), loaded.spec.name)
    except Exception:  # a plan without a readable store says "never pulled", it does not fail
        return None


def outputs_line(ctx: Any, survives: Any, now: datetime) -> str:
    """'' without outputs; else '; outputs A, B on the volume disk: LOST unless pulled (last pull: …)'."""
    from gpujob.plan.checkpoint_actions import human_bytes
    from gpujob.plan.context import path_tier, tier_title

    spec = ctx.spec
    if spec.outputs is None:
        return ""
    lost = [p for p in spec.outputs.paths if not survives(path_tier(spec, p))]
    if not lost:
        return f"; outputs ({', '.join(spec.outputs.paths)}) survive"
    where = tier_title(ctx.profile, path_tier(spec, lost[0]))
    rec = _record(ctx.loaded)
    machine = ctx.machine
    if rec is not None and (machine is None or rec.resource_id in (None, machine.id)):
        mine = {k: f for k, f in rec.files.items() if any(_under(k, p) for p in lost)}
        age = max(0, int((now - rec.at).total_seconds()) // 60)
        seen = f"last pull: {len(mine)} file(s), {human_bytes(sum(f.size for f in mine.values()))}, {age} min ago"
    else:
        seen = "never pulled"
    return f"; outputs {', '.join(lost)} on the {where}: LOST unless pulled ({seen})"


def _under(path: str, pattern: str) -> bool:
    import fnmatch

    segs, parts = path.strip("/").split("/"), pattern.strip("/").split("/")
    return len(segs) >= len(parts) and all(
        fnmatch.fnmatchcase(s, p) for s, p in zip(segs, parts, strict=False)
    )
