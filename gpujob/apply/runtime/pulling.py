"""The pull: list, fetch, checksum and verify every checkpoint, then write the pull record."""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from gpujob.apply.gate import checkpoint_tier
from gpujob.apply.localfiles import local_sha256
from gpujob.apply.runtime.remote import ATTEMPT_S, Target, open_remote
from gpujob.apply.runtime.transfer import transfer_reporting
from gpujob.apply.sshapi import SSHApi
from gpujob.clock import Clock
from gpujob.errors import GpujobError, SSHConnectError
from gpujob.invariant import present
from gpujob.jobfile.model import JobSpec
from gpujob.live import SSHEndpoint
from gpujob.plan.records import (
    PulledFile,
    PullRecord,
    current_record,
    load_pull_record,
    save_pull_record,
)
from gpujob.state import as_store


def pull_dir(spec: JobSpec, spec_path: Path) -> Path:
    """checkpoint.pull_to as an absolute path (relative ones start at the job file's directory)."""
    ck = present(spec.checkpoint, "the checkpoint block of a job that pulls")
    local_dir = Path(ck.pull_to)
    if not local_dir.is_absolute():
        local_dir = (spec_path.parent / local_dir).resolve()
    return local_dir


async def pull(
    target: Target, ssh: SSHApi, clock: Clock, note: Callable[[str], None], *, progress: Any = None
) -> PullRecord:
    """List, pull, checksum and verify every checkpoint, then write the pull record."""
    spec = target.spec
    if spec.checkpoint is None:
        raise GpujobError(f"{spec.name}: no checkpoint section: nothing to pull")
    if target.resource.status != "running":
        raise GpujobError(
            f"{spec.name}: cannot pull: {target.resource.name} is {target.resource.status}",
            hint="set state: running and apply (the disks are kept), then pull",
        )
    async with open_remote(target, ssh, clock, note) as remote:
        return await pull_over(remote, target, ssh, clock, note, progress=progress)


MAX_LANES = 4  # connections a striped pull may use, the first included


async def _extra_lanes(
    stack: contextlib.AsyncExitStack, remote: Any, target: Target, ssh: SSHApi, note: Callable[[str], None]
) -> list[Any]:
    """More connections to the same machine for a striped pull (GPUJOB_PULL_STRIPES above 1): each
    stripe of a large file gets its own TCP stream, which is what fills a long, lossy link. The host key
    is the one the first connection pinned. One that cannot be opened is done without, not an error."""
    from gpujob.ssh.pull import stripe_count

    endpoint = getattr(remote, "endpoint", None)
    want = min(stripe_count(), MAX_LANES) - 1
    if want <= 0 or not isinstance(endpoint, SSHEndpoint):
        return []
    key_path, _ = ssh.ensure_project_key(target.state_dir)
    lanes: list[Any] = []
    for _ in range(want):
        cm = ssh.open(
            endpoint,
            key_path=key_path,
            known_hosts=as_store(target.state_dir),
            resource_id=target.resource.id,
            timeout=ATTEMPT_S,
        )
        try:
            lanes.append(await stack.enter_async_context(cm))
        except (SSHConnectError, OSError) as exc:
            note(
                f"{target.spec.name}: pull: an extra connection failed ({str(exc)[:120]}); going on with fewer"
            )
            break
    note(f"{target.spec.name}: pull: large files striped over {len(lanes) + 1} connections")
    return lanes


async def pull_over(
    remote: Any,
    target: Target,
    ssh: SSHApi,
    clock: Clock,
    note: Callable[[str], None],
    *,
    progress: Any = None,
) -> PullRecord:
    """The pull on an open connection (the teardown gate's final pull shares its connection)."""
    spec = target.spec
    ck = spec.checkpoint
    ck = present(ck, "the checkpoint block of a job that pulls")
    local_dir = pull_dir(spec, target.spec_path)
    local_dir.mkdir(parents=True, exist_ok=True)
    from gpujob.layout.storage import own_checkpoints

    only = own_checkpoints(spec)  # a sweep queue on a shared volume: its own cells' checkpoints
    async with contextlib.AsyncExitStack() as stack:
        lanes = await _extra_lanes(stack, remote, target, ssh, note)
        with transfer_reporting("pull", note) as fallback:
            outcome = await ssh.pull_checkpoints(
                remote,
                ck.dir,
                local_dir,
                verify=None,
                progress=progress or fallback,
                **({"lanes": lanes} if lanes else {}),
                **({"only": only} if only is not None else {}),
            )
    if outcome.unpullable:
        note(
            f"not pullable, skipped: {_names(outcome.unpullable)} (rename or remove them on the "
            f"{target.resource.kind}: gpujob ssh -- ls -la {shlex.quote(ck.dir)})"
        )
    if outcome.vanished:
        note(f"removed by the run while pulling (its keep: {ck.keep} rotation): {_names(outcome.vanished)}")
    now = clock.now()
    # A file verified in the last pull is not checked again, if that pull read this very disk.
    here = target.resource
    previous = current_record(load_pull_record(target.state_dir, spec.name), here, [here.network_volume_id])
    # The load check runs here, from the job file's directory, where its relative paths point.
    files = [
        await _as_pulled_file(p, local_dir, ck.verify, now, target.spec_path.parent, previous)
        for p in outcome.files
    ]
    listing = outcome.listing
    remote_files = {} if listing is None else {n: f.sha256 for n, f in listing.files.items()}
    for gone in outcome.vanished:
        remote_files.pop(gone, None)
    # checkpoint.writers: all: every other node's shards too, each into pull_to/node-<rank>/ (gang.py).
    from gpujob.apply.runtime.gang import pull_writers

    for sub, pulled, names in await pull_writers(target, ssh, local_dir, progress, note):
        files += [
            (
                await _as_pulled_file(p, local_dir / sub, ck.verify, now, target.spec_path.parent, previous)
            ).model_copy(update={"name": f"{sub}/{p.name}"})
            for p in pulled
        ]
        remote_files |= {f"{sub}/{n}": digest for n, digest in names.items()}
    record = PullRecord(
        job=spec.name,
        platform=spec.platform,
        resource_id=target.resource.id,
        network_volume_id=target.resource.network_volume_id,
        tier=checkpoint_tier(spec) or "",
        remote_dir=ck.dir,
        local_dir=str(local_dir),
        remote_files=remote_files,
        files=files,
        vanished=list(outcome.vanished),
        unpullable=dict(outcome.unpullable),
        verify_command=ck.verify,
        at=now,
    )
    save_pull_record(target.state_dir, record)
    return record


def _names(names: Any, limit: int = 5) -> str:
    """Untrusted remote names for one line: repr-escaped (a newline stays \\n), at most `limit`."""
    shown = [repr(n) for n in list(names)[:limit]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


async def _as_pulled_file(
    item: Any, local_dir: Path, verify: str | None, now: datetime, cwd: Path, previous: PullRecord | None
) -> PulledFile:
    """Checksum the local copy here (the record is ours), then verify it, unless this very copy
    already passed the same verify command in the previous record."""
    from gpujob import verify as verify_cmd

    local = local_dir / item.name
    digest = await asyncio.to_thread(local_sha256, local)
    size = local.lstat().st_size if digest else 0
    before = previous.file(item.name) if previous is not None else None
    output = ""
    if (
        before is not None
        and before.verified
        and digest
        and before.sha256 == digest
        and previous is not None
        and previous.verify_command == verify
    ):
        verified = True
    elif verify and digest:
        verified, output = await verify_cmd.run_async(verify, local, cwd)
    else:
        verified = False
    return PulledFile(
        name=item.name,
        size=size,
        sha256=digest,
        remote_sha256=item.remote_sha256,
        verified=verified and digest != "",
        at=now,
        local_path=str(local),
        verify_output="" if verified else output,
    )
