"""The PUSH step: after a replace erased the checkpoints' disk, the verified copies of the gate's final
pull go onto the new machine's checkpoint.dir before its run starts, and are read back there. A machine
created on a fresh disk with no replace before it (after a destroy, a lost volume) gets the newest
verified local checkpoint the same way (gpujob.plan.seed), so its run resumes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from gpujob.apply.context import JobContext
from gpujob.apply.gate import unsafe_files
from gpujob.apply.reconcile import push_pending
from gpujob.apply.runtime.pulling import pull_dir
from gpujob.apply.runtime.remote import Target, open_remote
from gpujob.apply.runtime.transfer import transfer_reporting
from gpujob.errors import GpujobError
from gpujob.invariant import present
from gpujob.plan.checkpoint_actions import human_bytes
from gpujob.plan.model import Action
from gpujob.plan.records import PullRecord, load_pull_record


async def push_after_replace(ctx: JobContext, action: Action, target: Target) -> tuple[str | None, str]:
    """(resource id, outcome detail). Only the files the final pull listed on the replaced machine."""
    ck = ctx.spec.checkpoint
    if ck is None:
        return None, "no checkpoint block: nothing to carry across"
    record = load_pull_record(ctx.state_dir, ctx.spec.name)
    replaced = ctx.replaced or _pending(ctx, action)
    if replaced is None:
        return await _seed(ctx, action, target, record)
    if record is None or record.resource_id != replaced:
        return None, "the replaced machine held no checkpoint files: nothing to carry across"
    local_dir = pull_dir(ctx.spec, ctx.spec_path)
    files = {n: f for n in record.remote_files if (f := record.file(n)) is not None}
    bad = await asyncio.to_thread(unsafe_files, files, record, local_dir)
    if bad or set(files) != set(record.remote_files):
        raise GpujobError(
            f"{action.id}: the final pull's copies in {local_dir} are not all verified: {'; '.join(bad[:5])}",
            hint=f"the old machine is gone; copy them by hand into {ck.dir} (gpujob ssh) before the run starts",
        )
    names = sorted(files)
    async with open_remote(target, ctx.ssh, ctx.clock, ctx.note) as remote:
        with transfer_reporting("push", ctx.note) as progress:
            await ctx.ssh.push_checkpoints(remote, local_dir, names, ck.dir, progress=progress)
        landed = await ctx.ssh.list_checkpoints(remote, ck.dir)
    ctx.machine = target.resource
    wrong = [n for n in names if (got := landed.files.get(n)) is None or got.sha256 != files[n].sha256]
    if wrong:
        raise GpujobError(
            f"{action.id}: {len(wrong)} pushed checkpoint(s) read back differently on {target.resource.name}: "
            + ", ".join(repr(n) for n in wrong[:5]),
            hint="re-run apply: the push is repeated before the run starts",
        )
    size = sum(f.size for f in files.values())
    detail = f"pushed {len(names)} verified checkpoint file(s) ({human_bytes(size)}) into {ck.dir} and read them back"
    return target.resource.id, detail


async def _seed(
    ctx: JobContext, action: Action, target: Target, record: PullRecord | None
) -> tuple[str | None, str]:
    """The newest verified local checkpoint into an empty checkpoint.dir, read back before the launch."""
    from gpujob.apply.localfiles import local_sha256
    from gpujob.plan.seed import newest_verified

    ck = ctx.spec.checkpoint
    ck = present(ck, "the checkpoint block of a job that carries")
    newest = newest_verified(record)
    if record is None or newest is None:
        return None, "no verified local checkpoint: the run starts from step 0"
    local_dir = Path(record.local_dir)
    if await asyncio.to_thread(local_sha256, local_dir / newest.name) != newest.sha256:
        raise GpujobError(
            f"{action.id}: the local copy of {newest.name} in {local_dir} differs from the verified one",
            hint="`gpujob apply --fresh` starts from step 0; or restore the file, then apply again",
        )
    async with open_remote(target, ctx.ssh, ctx.clock, ctx.note) as remote:
        there = await ctx.ssh.list_checkpoints(remote, ck.dir)
        if there.files:
            ctx.machine = target.resource
            return (
                target.resource.id,
                f"{ck.dir} already holds {len(there.files)} checkpoint file(s): nothing pushed",
            )
        with transfer_reporting("push", ctx.note) as progress:
            await ctx.ssh.push_checkpoints(remote, local_dir, [newest.name], ck.dir, progress=progress)
        landed = await ctx.ssh.list_checkpoints(remote, ck.dir)
    ctx.machine = target.resource
    got = landed.files.get(newest.name)
    if got is None or got.sha256 != newest.sha256:
        raise GpujobError(
            f"{action.id}: {newest.name} read back differently on {target.resource.name}",
            hint="re-run apply: the push is repeated before the run starts",
        )
    return target.resource.id, (
        f"pushed the newest verified checkpoint {newest.name} ({human_bytes(newest.size)}) into {ck.dir} and "
        "read it back: the run resumes from it"
    )


def _pending(ctx: JobContext, action: Action) -> str | None:
    """The replaced machine of an earlier apply that died before this push (from the journal)."""
    return push_pending(ctx.journal.entries())
