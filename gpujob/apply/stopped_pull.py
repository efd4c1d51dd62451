"""`gpujob pull` of a job whose machine is stopped or gone (issue 37: the end state of a sweep queue
under `gpujob watch`).

A stopped machine whose files were all pulled before it stopped (the latest pull records are about it,
complete, and every local copy is there at its size) has nothing to give: the records are reported and
nothing is started. Otherwise its disk is reachable only while it runs, so it is started for the pull
and stopped again afterwards, whatever the pull's outcome (as the teardown gate does before a
terminate). A machine that no longer exists cannot be read: its last complete records are reported
when they are about it, else the pull fails as before, saying the machine does not exist.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpujob.live import LiveResource


def _pulled_here(view: Any, machine: LiveResource | None) -> tuple[Any, Any] | None:
    """The latest (checkpoint, outputs) records when they are about `machine` (or, with None, about
    whatever machine they name), complete, and every local copy is present at its size; else None."""
    from gpujob.plan.outputs_record import load_outputs_record
    from gpujob.plan.records import load_pull_record

    spec = view.spec
    ck = out = None
    if spec.checkpoint is not None:
        ck = load_pull_record(view.state_dir, spec.name)
        if ck is None or not ck.complete or ck.resource_id is None:
            return None
        if machine is not None and not ck.applies_to(machine.id, machine.network_volume_id):
            return None
        if any(not _has(Path(f.local_path), f.size) for f in ck.files if f.name in ck.remote_files):
            return None
    if spec.outputs is not None:
        out = load_outputs_record(view.state_dir, spec.name)
        if out is None or out.unpullable or out.resource_id is None:
            return None
        if machine is not None and out.resource_id != machine.id:
            return None
        local = Path(out.local_dir)
        if any(not _has(_local_copy(spec, local, path), f.size) for path, f in out.files.items()):
            return None
    if ck is None and out is None:
        return None
    return ck, out


def _local_copy(spec: Any, local_dir: Path, path: str) -> Path:
    """Where the outputs pull put the machine's `path` (gpujob.outputs.remote.pull: the root whose
    base holds it lands at pull_to/<root.local>)."""
    from gpujob.layout.outputs import file_root, output_roots, run_root

    roots = output_roots(spec)
    roots += [run_root(spec)] + [file_root(r.path) for r in roots]
    under = [r for r in roots if path.startswith(r.base.rstrip("/") + "/")]
    if not under:
        return local_dir / path.lstrip("/")
    root = max(under, key=lambda r: len(r.base))
    return local_dir / root.local / path[len(root.base.rstrip("/")) + 1 :]


def _has(path: Path, size: int) -> bool:
    try:
        return path.is_file() and path.stat().st_size == size
    except OSError:
        return False


async def pull_view(
    view: Any,
    ssh: Any,
    clock: Any,
    pull_ck: Callable[..., Any],
    pull_out: Callable[..., Any],
    note: Callable[[str], None],
) -> tuple[Any, Any]:
    """(checkpoint record or None, outputs record or None) of one job, its machine running, stopped or
    gone. `pull_ck` / `pull_out` take a Target and return a record (gpujob.apply.runtime.pull and
    gpujob.outputs.command.pull_outputs, with `ssh` and `clock` bound)."""
    spec, machine = view.spec, view.machine
    if machine is None or machine.status != "running":
        known = _pulled_here(view, machine)
        if known is not None:
            where = f"{machine.name} is {machine.status}" if machine is not None else "its machine is gone"
            note(
                f"{spec.name}: nothing to pull: {where}, and every file was pulled from it before (the records below)"
            )
            return known
    if machine is None or machine.status != "stopped":
        return await _both(view.target(), spec, pull_ck, pull_out)  # running; or refused as before
    note(f"{spec.name}: starting {machine.name} to pull from its disk (stopped again afterwards)")
    started = await view.provider.start(machine)
    try:
        return await _both(target_of_view(view, started), spec, pull_ck, pull_out)
    finally:
        from gpujob.apply.quiesce import stop as quiesced_stop  # THE stop (tests/apply/test_one_stop.py)

        note(f"{spec.name}: stopping {machine.name} again")
        fresh = "started for the pull only: nothing of the job was launched on it"
        await quiesced_stop(target_of_view(view, started), ssh, clock, note, fresh=fresh)


def target_of_view(view: Any, machine: LiveResource) -> Any:
    return dataclasses.replace(view.target(), resource=machine, moved=True)


async def _both(
    target: Any, spec: Any, pull_ck: Callable[..., Any], pull_out: Callable[..., Any]
) -> tuple[Any, Any]:
    ck = await pull_ck(target) if spec.checkpoint is not None else None
    out = await pull_out(target) if spec.outputs is not None else None
    return ck, out
