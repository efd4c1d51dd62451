"""A job whose machine is created on a fresh disk (after a destroy, a lost volume) resumes: the newest
verified local checkpoint is pushed into checkpoint.dir and read back before the run starts, instead of
training from step 0. Not when the last run finished (exit 0), not when checkpoint.dir is on a network
volume that exists already (its files are still there), and not with --fresh."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gpujob.plan.builder import add
from gpujob.plan.checkpoint_actions import human_bytes
from gpujob.plan.context import JobContext
from gpujob.plan.model import ActionKind


def newest_verified(record: Any) -> Any:
    """The record's newest verified file whose local copy is still there (natural order of names:
    step_9 before step_10), or None."""
    if record is None:
        return None
    files = [f for f in getattr(record, "files", []) or [] if getattr(f, "verified", False)]
    here = [f for f in files if Path(getattr(record, "local_dir", ""), f.name).is_file()]
    return max(here, key=lambda f: _natural(f.name), default=None)


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def seed_checkpoints(ctx: JobContext, create_id: str) -> str | None:
    """The PUSH onto the machine `create_id` makes, when it is due; its id, else None."""
    ck, run = ctx.spec.checkpoint, ctx.spec.run
    if ck is None or run is None or ctx.fresh:
        return None
    fact = ctx.live.runs.get(ctx.job)
    if fact is not None and fact.finished_for_digest:
        return None
    mount = ctx.spec.storage.mount.rstrip("/")
    on_volume = ctx.spec.storage.network_volume is not None and (ck.dir + "/").startswith(mount + "/")
    if on_volume and ctx.volume is not None:
        return None  # the volume outlived the machine, and its checkpoints with it
    newest = newest_verified(ctx.last_pull)
    if newest is None:
        return None
    reasons = [
        f"checkpoint.dir starts empty on the new {ctx.machine_kind}, and a verified local checkpoint exists: "
        f"{newest.name} ({human_bytes(newest.size)}) from {ck.pull_to} goes into {ck.dir} and is read back "
        "before the run starts, so it resumes instead of starting at step 0",
        "skipped if checkpoint.dir already holds files; `--fresh` starts from step 0 instead",
    ]
    return add(ctx, ActionKind.PUSH, "checkpoints", ck.dir, reasons=reasons, depends_on=[create_id]).id
