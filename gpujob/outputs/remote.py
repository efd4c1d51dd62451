"""The outputs over an open SSH connection: resolve each root, list it (names and sizes, or with the
remote's sha256 for the gate's last look), pull it (gpujob.ssh.pull: resumable, checksummed, the same
free-space and size checks as checkpoints), and check every listed file against its local copy."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpujob.layout.outputs import Root, file_root
from gpujob.plan.outputs_record import OutputFile, OutputsRecord, save_outputs_record
from gpujob.ssh.listing import RemoteFile, RemoteListing


@dataclass
class Listed:
    """One root as the machine showed it: files and unpullable entries are relative to root.base."""

    root: Root
    listing: RemoteListing

    @property
    def paths(self) -> dict[str, RemoteFile]:
        return {self.root.remote(n): f for n, f in self.listing.files.items()}

    @property
    def holds(self) -> bool:
        return bool(self.listing.files or self.listing.unpullable)


async def resolve(remote: Any, ssh: Any, roots: Sequence[Root]) -> list[Listed]:
    """Each root listed (names and sizes only). A plain path that is not a directory is read as a file
    through its parent; one that does not exist lists empty."""
    out: list[Listed] = []
    for root in roots:
        listing = await ssh.list_checkpoints(remote, root.base, hashes=False)
        if not listing.exists and not root.parts and root.names is None:
            root = file_root(root.path)
            listing = await ssh.list_checkpoints(remote, root.base, hashes=False)
        out.append(Listed(root, listing.selected(root.only)))
    return out


async def relist(remote: Any, ssh: Any, listed: Sequence[Listed]) -> list[Listed]:
    """The same roots listed again, each file with the sha256 the machine computes now: a whole
    directory in one pass, a selection (a glob, a file, the run's records) file by file, so nothing
    else under its base is hashed."""
    out: list[Listed] = []
    for item in listing_roots(listed):
        root = item
        if root.only is None:
            out.append(Listed(root, await ssh.list_checkpoints(remote, root.base, hashes=True)))
            continue
        now = (await ssh.list_checkpoints(remote, root.base, hashes=False)).selected(root.only)
        files: dict[str, RemoteFile] = {}
        for name, f in now.files.items():
            state = await ssh.file_state(remote, root.remote(name), f.size)
            if state is not None:
                files[name] = state
        out.append(Listed(root, now.model_copy(update={"files": files})))
    return out


def listing_roots(listed: Sequence[Listed]) -> list[Root]:
    return [x.root for x in listed]


async def pull(
    remote: Any,
    ssh: Any,
    listed: Sequence[Listed],
    local_dir: Path,
    *,
    job: str,
    resource_id: str | None,
    state_dir: Any,
    now: datetime,
    note: Callable[[str], None],
    progress: Any = None,
) -> OutputsRecord:
    """Pull every root that holds files into local_dir/<root.local>, each file checked by sha256 as
    it arrives; the record lists what arrived (path on the machine -> size, sha256)."""
    files: dict[str, OutputFile] = {}
    unpullable: dict[str, str] = {}
    for item in listed:
        if not item.listing.files:
            unpullable.update({item.root.remote(n): w for n, w in item.listing.unpullable.items()})
            continue
        root = item.root
        dest = local_dir / root.local
        await asyncio.to_thread(dest.mkdir, parents=True, exist_ok=True)
        kwargs: dict[str, Any] = {"verify": None}
        if root.only is not None:
            kwargs["only"] = root.only
        if progress is not None:
            kwargs["progress"] = progress
        outcome = await ssh.pull_checkpoints(remote, root.base, dest, **kwargs)
        for got in outcome.files:
            if got.sha256 and got.sha256 == got.remote_sha256:
                files[root.remote(got.name)] = OutputFile(size=got.size, sha256=got.sha256)
        unpullable.update({root.remote(n): w for n, w in outcome.unpullable.items()})
    record = OutputsRecord(
        job=job, resource_id=resource_id, local_dir=str(local_dir), at=now, files=files, unpullable=unpullable
    )
    save_outputs_record(state_dir, record)
    if files:
        note(f"pulled {len(files)} output file(s) into {local_dir}, each checked by sha256")
    return record


def unsafe(listed: Sequence[Listed], local_dir: Path) -> list[str]:
    """Every listed file without a local copy of the same sha256 (read again, never through a
    symlink), and every entry that cannot be pulled, each with why."""
    from gpujob.apply.localfiles import local_sha256

    out: list[str] = []
    for item in listed:
        root = item.root
        for name, why in sorted(item.listing.unpullable.items()):
            out.append(f"{root.remote(name)!r} (not pullable: {why})")
        for name, want in sorted(item.listing.files.items()):
            if local_sha256(local_dir / root.local / name) != want.sha256 or not want.sha256:
                out.append(
                    f"{root.remote(name)!r} (no local copy with its sha256 in {local_dir / root.local})"
                )
    return out


__all__ = ["Listed", "pull", "relist", "resolve", "save_outputs_record", "unsafe"]
