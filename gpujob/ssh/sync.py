"""Code sync: tar streams over SSH exec channels, sending only files whose size or mtime differ from the
remote copy (rsync's quick check), then placing them atomically.

Why tar streams: measured on loopback they beat asyncssh SFTP by a wide margin and match `rsync -a`
(numbers in docs/performance.md); they need only bash, GNU tar, find and cp on the remote.

The listing command clears a stale stage and prints the manifest and the listing while the client
walks the local tree. The client then streams what changed on up to STREAMS data channels in parallel
(small files' inode creation on one, large files on another: the remote's kernel work overlaps the
client's encryption), and opens the place command beside them. Only once every data channel's `tar`
exited 0 does the client tell it to place: deletions, then hard links from the stage into place
(`cp -al --remove-destination`). A dropped connection or a failed stream never tells it, so nothing
is placed under its real name half-written; the next sync clears the stage and converges.
A manifest under `dest` records which files gpujob put there, so a file deleted locally is deleted
remotely, while files the run itself wrote are never touched.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import NamedTuple

from pydantic import Field

from gpujob.model import Model
from gpujob.quote import q, remote_path
from gpujob.ssh.crlf import crlf_scripts, warning
from gpujob.ssh.deadline import Watch
from gpujob.ssh.ignore import LocalEntry, walk
from gpujob.ssh.session import Remote
from gpujob.ssh.tarstream import read_ahead, split, tar_blocks

STAGE = ".gpujob-sync.tmp"
MANIFEST = ".gpujob-sync.json"
DELETE = ".gpujob-sync.delete"  # inside the stage only: NUL-separated paths to delete
STREAMS = 2  # data channels: two cores, two remote tars; more only add remote commands
_MARK = b"\0GPUJOB-LIST\0"
PLACE = b"place\n"
LEFT = (
    "files are staged and placed only once all arrived, so nothing is half-written; the next apply "
    "syncs again"
)

Progress = Callable[[int, int], object]


class SyncStats(Model):
    files_sent: int
    bytes_sent: int
    files_deleted: int
    seconds: float
    warnings: list[str] = Field(default_factory=list)
    streams: int = 0  # data channels the upload used


class RemoteEntry(NamedTuple):  # a tuple: a no-op sync parses one per remote file
    kind: str  # find %y: f (file) or l (symlink)
    size: int
    mtime: int
    link: str


def listing_command(dest: str) -> str:
    """Stage cleared, then the manifest and the listing printed."""
    d = q(dest)
    # Builtin tests first: an unchanged tree (the common case) forks only tr and find. The manifest's
    # NULs become \1: the listing's fields are what NULs separate.
    return (
        f"{{ [ -d {d} ] || mkdir -p {d}; }} && cd {d} && {{ [ ! -e {STAGE} ] && [ ! -L {STAGE} ] || rm -rf {STAGE}; }} && "
        f"{{ tr '\\000' '\\001' 2>/dev/null < {MANIFEST} || true; }} && printf '\\0GPUJOB-LIST\\0' && "
        f"find . -mindepth 1 \\( -path ./{STAGE} -o -path ./{MANIFEST} \\) -prune "
        "-o \\( -type f -o -type l \\) -printf '%P\\0%y\\0%s\\0%T@\\0%l\\0'"
    )


def place_command(dest: str) -> str:
    """Waits for one line from the client: `place` applies the deletions and hard-links the stage into
    place; end of input (a stream failed, the connection dropped) leaves everything as it is."""
    # Hard links make placement a rename-like metadata operation; a filesystem without hard links
    # falls back to moving file by file (still never a partial file under its real name).
    fallback = "bash -c " + q(
        f"cd {STAGE} && find . \\( -type f -o -type l \\) -print0 | while IFS= read -r -d '' f; do "
        'mkdir -p "../${f%/*}" && mv -f "$f" "../$f" || exit 1; done'
    )
    # Run by the login shell itself: a nested `bash -c` would be a second shell start, and bash run
    # by sshd reads ~/.bashrc, which on a machine with pyenv or conda init takes ~150 ms.
    return (
        f'cd {q(dest)} && {{ IFS= read -r verdict || exit 0; }} && {{ [ "$verdict" = place ] || exit 0; }} && '
        f"{{ [ ! -e {STAGE}/{DELETE} ] || {{ xargs -0 rm -f -- < {STAGE}/{DELETE} && rm -f {STAGE}/{DELETE}; }}; }} && "
        f"{{ cp -al --remove-destination {STAGE}/. . 2>/dev/null || {fallback}; }} && rm -rf {STAGE}"
    )


def extract_command(dest: str) -> str:
    """A data channel: one tar stream extracted into the stage (which the listing cleared)."""
    d = q(dest)
    # 128 KiB records: tar drains the pipe in larger reads, so sshd re-opens the window (one packet
    # each way) half as often as with tar's default 10 KiB.
    return f"cd {d} && mkdir -p {STAGE} && tar -x -b 256 --no-same-owner -f - -C {STAGE}"


def parse_listing(out: bytes) -> tuple[dict[str, RemoteEntry], dict[str, list[int]] | None]:
    """The listing command's output: (listing, manifest); the manifest is None when it exists but is
    not what gpujob writes (then nothing in it is trusted)."""
    head, _, listing = out.partition(_MARK)
    fields = listing.decode("utf-8", "surrogateescape").split("\0")
    entries: dict[str, RemoteEntry] = {}
    for i in range(0, len(fields) - 4, 5):
        path, kind, size, mtime, link = fields[i : i + 5]
        entries[path] = RemoteEntry(kind, int(size), int(float(mtime)), link)
    return entries, parse_manifest(head.decode("utf-8", "replace"))


def parse_manifest(text: str) -> dict[str, list[int]] | None:
    """{path: [size, mtime]} from the manifest's text; {} when there is none, None when it is malformed."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return None
    ok = all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(n, int) for n in v)
        for k, v in files.items()
    )
    return files if ok else None


def _changed(local: LocalEntry, rem: RemoteEntry | None) -> bool:
    if rem is None:
        return True
    if local.link is not None:
        return rem.kind != "l" or rem.link != local.link
    return rem.kind != "f" or rem.size != local.size or rem.mtime != local.mtime


class _Abandoned(Exception):
    """Tells the place command to end without placing (a data channel failed)."""


class _Verdict:
    """What the place command waits for: `place` once every stream arrived, else end of input."""

    def __init__(self) -> None:
        self.decided: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def feed(self) -> AsyncGenerator[bytes, None]:
        if await self.decided:
            yield PLACE

    def place(self) -> None:
        self.decided.set_result(True)

    def abandon(self) -> None:
        if not self.decided.done():
            self.decided.set_exception(_Abandoned())


async def sync_tree(
    remote: Remote, src: Path, dest: str, exclude: list[str], progress: Progress | None = None
) -> SyncStats:
    """Make `dest` hold the files of `src` (minus excludes and .gitignored paths). Re-running after
    any interruption converges; an unchanged tree costs one remote command, run while the local tree
    is walked."""
    started = time.monotonic()
    dest = remote_path(dest)
    src = Path(src)
    watch = remote.watch(f"code sync to {dest}", left=LEFT)
    out = bytearray()
    listing = asyncio.create_task(remote.exchange(listing_command(dest), watch, sink=out.extend))
    walking = asyncio.create_task(asyncio.to_thread(lambda: {e.rel: e for e in walk(src, exclude)}))
    try:
        await listing
    finally:
        listing.cancel()  # a no-op once it finished
        local = await walking
    stats = await _send(remote, src, dest, local, parse_listing(bytes(out)), watch, progress)
    return stats.model_copy(update={"seconds": round(time.monotonic() - started, 4)})


async def _send(
    remote: Remote,
    src: Path,
    dest: str,
    local: dict[str, LocalEntry],
    listed: tuple[dict[str, RemoteEntry], dict[str, list[int]] | None],
    watch: Watch,
    progress: Progress | None,
) -> SyncStats:
    """Decide what to send and delete, stream it, and tell the place command to place it."""
    remote_entries, found = listed
    warnings = []
    if found is None:
        # Whatever wrote it, the remote tree cannot be read as gpujob's: send every file (no quick
        # check against it), delete nothing on its word, and write a fresh manifest.
        warnings.append(
            f"{dest}/{MANIFEST} on the machine is not a gpujob sync manifest: ignored it and sent every "
            "file (a fresh manifest replaces it)"
        )
    manifest = found or {}
    compare = remote_entries if found is not None else {}
    to_send = [e for rel, e in sorted(local.items()) if _changed(e, compare.get(rel))]
    crlf = warning(crlf_scripts(local.values(), to_send))  # U26, before the run ever starts
    if crlf is not None:
        warnings.append(crlf)
    total = sum(e.size for e in to_send if e.link is None)
    # Only files gpujob placed (the manifest) and that are gone locally are deleted: outputs the run
    # wrote into dest, and files merely excluded now, are left alone.
    to_delete = sorted(
        rel
        for rel in manifest
        if rel not in local and rel in remote_entries and not os.path.lexists(src / rel)
    )
    deleted = set(to_delete)
    kept = {
        rel: v
        for rel, v in manifest.items()
        if rel not in local and rel in remote_entries and rel not in deleted
    }
    new_manifest = {rel: [e.size, e.mtime] for rel, e in local.items()} | kept
    stats = SyncStats(
        files_sent=len(to_send), bytes_sent=total, files_deleted=len(to_delete), seconds=0, warnings=warnings
    )
    if not (to_send or to_delete or new_manifest != manifest or found is None):
        if progress is not None:
            progress(0, 0)
        return stats
    watch.total_s = remote.limits.for_bytes(total)
    watch.expected = total or None
    # The manifest and the deletions ride in the first stream: placed with the files, or not at all.
    extra = [(MANIFEST, json.dumps({"version": 1, "files": new_manifest}, sort_keys=True).encode())]
    if to_delete:
        extra.append((DELETE, "\0".join(to_delete).encode()))
    shares = split(to_send, STREAMS) or [[]]
    done = [0] * len(shares)

    def report(i: int) -> Callable[[int], object] | None:
        if progress is None:
            return None

        def moved(n: int) -> None:
            done[i] = n
            progress(sum(done), total)

        return moved

    streams = [
        read_ahead(tar_blocks(share, extra if i == 0 else []), report(i)) for i, share in enumerate(shares)
    ]
    verdict = _Verdict()
    # Opened with the streams, so its remote shell start overlaps them; it places on the word only.
    placing = asyncio.create_task(remote.exchange(place_command(dest), watch, feed=verdict.feed()))
    tasks = [asyncio.create_task(remote.exchange(extract_command(dest), watch, feed=s)) for s in streams]
    try:
        try:
            await watch.all(tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(
                *tasks, return_exceptions=True
            )  # the first error was raised; the rest follow it
            for s in streams:
                await s.aclose()  # stops the reader threads at once when the connection dropped
        verdict.place()
        await placing
    finally:
        verdict.abandon()  # a no-op once placed
        placing.cancel()  # a no-op once it finished
        await asyncio.gather(placing, return_exceptions=True)
    return stats.model_copy(update={"streams": len(streams)})
