"""The outputs' part of the teardown gate, on the gate's open connection after the workload quiesce:
the job's outputs and the run's log and records on a disk the action erases are pulled, listed again
with the machine's sha256, and every file there must have a local copy with that sha256, else the
gate refuses (naming the files)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpujob.errors import GateError
from gpujob.layout.outputs import output_roots, pull_to, run_root
from gpujob.outputs import remote as out


async def protect(
    remote: Any,
    *,
    ssh: Any,
    spec: Any,
    spec_path: Path,
    state_dir: Any,
    resource_id: str,
    erased: Callable[[Any], bool],
    now: Any,
    note: Callable[[str], None],
    action_id: str,
    where: str,
) -> str:
    """'' when no output is on an erased disk; else what was pulled and checked. Raises GateError."""
    listed = await out.resolve(remote, ssh, [*output_roots(spec), run_root(spec)])
    at_risk = [x for x in listed if x.holds and erased(x.listing)]
    if not at_risk:
        return ""
    local = pull_to(spec, spec_path)
    await out.pull(
        remote,
        ssh,
        at_risk,
        local,
        job=spec.name,
        resource_id=resource_id,
        state_dir=state_dir,
        now=now,
        note=note,
    )
    final = await out.relist(remote, ssh, at_risk)
    problems = out.unsafe(final, local)
    if problems:
        raise GateError(
            f"{action_id}: {len(problems)} output file(s) on {where} have no verified local copy right before "
            "the call: " + "; ".join(problems[:5]),
            hint=f"gpujob pull, then run the command again (the local copies are in {local})",
        )
    files = sum(len(x.listing.files) for x in final)
    size = sum(x.listing.total_bytes for x in final)
    from gpujob.plan.checkpoint_actions import human_bytes

    return f"{files} output and run-log file(s) ({human_bytes(size)}) listed again and each matched a local copy in {local}"
