"""The Iron Law on gpujob's own stops (gpujob.plan.stop_law): a stop that leaves the machine stopped, of a
job whose checkpoint.dir is on a disk a stop wipes, bills at 2× or deletes on a clock, first pulls the
checkpoints over the connection the quiesce used (the run has made its last save) and verifies the
newest one: every file of it home, its sha256 the remote's, checkpoint.verify passed when set. A newest
checkpoint that does not come home refuses the stop (GateError): nothing is stopped while it would be
left only on the machine's own disk. gpujob.apply.quiesce.stop calls this; every stop goes through it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.errors import GateError
from gpujob.plan.checkpoint_actions import human_bytes
from gpujob.plan.records import PulledFile, PullRecord


def risk_of(target: Any) -> str | None:
    """Why stopping `target.resource` would strand its checkpoints (None: a stop keeps them safe, or the
    job has no checkpoints to keep)."""
    spec = target.spec
    if spec.checkpoint is None:
        return None
    from gpujob.plan.stop_law import live_tier, stop_risk
    from gpujob.profile import load_profile

    return stop_risk(load_profile(spec.platform), spec, live_tier(spec, target.resource))


def newest(record: PullRecord) -> tuple[str, list[PulledFile], list[str]]:
    """(name, its pulled files, its names the remote listed) of the newest checkpoint the remote lists:
    files grouped by their top directory (a checkpoint may be a folder of shards), newest by the
    pulled copies' time, then name."""
    groups: dict[str, list[str]] = {}
    for name in record.remote_files:
        groups.setdefault(name.split("/", 1)[0], []).append(name)
    pulled = {f.name: f for f in record.files}

    def when(kv: tuple[str, list[str]]) -> tuple[float, str]:
        times = [pulled[n].at.timestamp() for n in kv[1] if n in pulled]
        return (max(times) if times else 0.0, kv[0])

    top, names = max(groups.items(), key=when)
    return top, [pulled[n] for n in names if n in pulled], names


async def pull_newest(
    remote: Any, target: Any, ssh: Any, clock: Any, note: Callable[[str], None], risk: str
) -> str:
    """Pull over `remote` and check the newest checkpoint came home; "; ..." for the stop's outcome."""
    from gpujob.apply.runtime.pulling import pull_over

    spec, machine = target.spec, target.resource
    record = await pull_over(remote, target, ssh, clock, note)
    if not record.remote_files:
        return f"; no checkpoint in {record.remote_dir} on {machine.name} to pull before the stop"
    top, files, names = newest(record)
    verify = spec.checkpoint.verify if spec.checkpoint is not None else None
    problems = [f"{n!r} not pulled" for n in names if n not in {f.name for f in files}]
    problems += [f"{f.name!r} sha256 differs from the remote's" for f in files if not f.checksum_ok]
    if verify:
        problems += [
            f"{f.name!r} failed checkpoint.verify"
            + (f" ({f.verify_output.strip()[:120]})" if f.verify_output else "")
            for f in files
            if f.checksum_ok and not f.verified
        ]
    if problems:
        raise GateError(
            f"{spec.name}: the stop of {machine.name} is refused: the newest checkpoint {top!r} did not pull "
            f"and verify ({'; '.join(problems[:4])}), and a stop would leave it only there, where {risk}",
            hint=f"see `gpujob pull` (the local copies are in {record.local_dir}), fix the cause, then run "
            "the command again",
        )
    from gpujob.plan.records import save_pull_record

    save_pull_record(target.state_dir, record.model_copy(update={"before_stop": True}))
    size = sum(f.size for f in files)
    how = "verified" if verify else "sha256 matched (checkpoint.verify is not set, so not load-checked)"
    note(f"before the stop: newest checkpoint {top} pulled and {how}")
    return f"; newest checkpoint {top} ({len(files)} file(s), {human_bytes(size)}) pulled and {how} first"
