"""Code sync: a tar stream over one SSH exec channel, sending only files whose size or mtime differ
from the remote copy (rsync's quick check), then placing them atomically.

Why a tar stream: measured on loopback it beats asyncssh SFTP by a wide margin and matches `rsync -a`
(numbers in the SSH layer's report); it needs only GNU tar, find and cp on the remote.

Atomicity: the stream is extracted into a staging directory inside `dest`, and only after the whole
archive arrived are the files hard-linked into place (`cp -al --remove-destination`), so a dropped
connection never leaves a half-written file under its real name; the next sync clears the stage and
converges. A manifest under `dest` records which files gpujob put there, so a file deleted locally is
deleted remotely, while files the run itself wrote are never touched.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import tarfile
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from pathlib import Path

from pydantic import Field

from gpujob.model import Model
from gpujob.ssh.ignore import LocalEntry, walk
from gpujob.ssh.quote import q, remote_path
from gpujob.ssh.session import CHUNK, Remote

STAGE = ".gpujob-sync.tmp"
MANIFEST = ".gpujob-sync.json"
DELETE = ".gpujob-sync.delete"  # inside the stage only: NUL-separated paths to delete
READ_AHEAD = 8  # chunks packed ahead of the channel
_MARK = "\0GPUJOB-LIST\0"

Progress = Callable[[int, int], object]


class SyncStats(Model):
    files_sent: int
    bytes_sent: int
    files_deleted: int
    seconds: float
    warnings: list[str] = Field(default_factory=list)


class RemoteEntry(Model):
    kind: str  # find %y: f (file) or l (symlink)
    size: int
    mtime: int
    link: str


async def remote_listing(
    remote: Remote, dest: str
) -> tuple[dict[str, RemoteEntry], dict[str, list[int]] | None]:
    """One round trip: clear a stale stage, read the manifest, list files with size/mtime/link target.
    The manifest is None when it exists but is not what gpujob writes (then nothing in it is trusted)."""
    d = q(dest)
    cmd = (
        f"mkdir -p {d} && cd {d} && rm -rf {STAGE} && {{ cat {MANIFEST} 2>/dev/null || true; }} && "
        f"printf '\\0GPUJOB-LIST\\0' && find . -mindepth 1 \\( -path ./{STAGE} -o -path ./{MANIFEST} \\) -prune "
        "-o \\( -type f -o -type l \\) -printf '%P\\0%y\\0%s\\0%T@\\0%l\\0'"
    )
    out = (await remote.run(cmd, what=f"listing {dest} for the code sync", left="nothing was sent")).stdout
    head, _, listing = out.partition(_MARK)
    fields = listing.split("\0")
    entries: dict[str, RemoteEntry] = {}
    for i in range(0, len(fields) - 4, 5):
        path, kind, size, mtime, link = fields[i : i + 5]
        entries[path] = RemoteEntry(kind=kind, size=int(size), mtime=int(float(mtime)), link=link)
    return entries, parse_manifest(head)


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


def _member(name: str, data: bytes) -> bytes:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = int(time.time())
    ti.mode = 0o644
    return (
        ti.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
        + data
        + b"\0" * (-len(data) % tarfile.BLOCKSIZE)
    )


def _tar_blocks(entries: list[LocalEntry], extra: list[tuple[str, bytes]]) -> Iterator[tuple[bytes, int]]:
    """A GNU tar stream of `entries`, cut into ~CHUNK blocks (small files batched together), each with the
    file bytes it completes (for progress)."""
    buf = bytearray()
    done = 0
    for e in entries:
        ti = tarfile.TarInfo(e.rel)
        ti.mtime = e.mtime
        ti.mode = e.mode
        if e.link is not None:
            ti.type = tarfile.SYMTYPE
            ti.linkname = e.link
            buf += ti.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
            continue
        ti.size = e.size
        buf += ti.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")
        remaining = e.size
        with open(e.path, "rb") as fh:
            while remaining > 0:
                chunk = fh.read(min(CHUNK, remaining))
                if not chunk:  # the file shrank since it was listed: pad; the next sync re-sends it
                    chunk = b"\0" * min(CHUNK, remaining)
                remaining -= len(chunk)
                done += len(chunk)
                if not buf and len(chunk) >= CHUNK:
                    yield chunk, done
                else:
                    buf += chunk
                    if len(buf) >= CHUNK:
                        yield bytes(buf), done
                        buf.clear()
        buf += b"\0" * (-e.size % tarfile.BLOCKSIZE)
    for name, data in extra:
        buf += _member(name, data)
    buf += b"\0" * (2 * tarfile.BLOCKSIZE)
    yield bytes(buf), done


async def _read_ahead(
    blocks: Iterator[tuple[bytes, int]], total: int, progress: Progress | None
) -> AsyncGenerator[bytes, None]:
    """Read and pack files in a thread, a few chunks ahead, so disk reads overlap with encryption on the
    event loop. Progress is reported here, on the loop. If the consumer stops (a dropped connection),
    the reader notices within its put timeout and ends."""
    chunks: queue.Queue[tuple[bytes, int] | BaseException | None] = queue.Queue(maxsize=READ_AHEAD)
    stop = threading.Event()

    def put(item: tuple[bytes, int] | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                chunks.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in blocks:
                if not put(item):
                    return
            put(None)
        except BaseException as exc:  # handed to the consumer, which raises it
            put(exc)

    reader = threading.Thread(target=produce, name="gpujob-sync-reader", daemon=True)
    reader.start()
    try:
        while True:
            try:
                item = chunks.get_nowait()
            except queue.Empty:
                item = await asyncio.to_thread(chunks.get)
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            chunk, done = item
            yield chunk
            if progress is not None:
                progress(done, total)
    finally:
        stop.set()


def _place_command(dest: str) -> str:
    d = q(dest)
    # Hard links make placement a rename-like metadata operation; a filesystem without hard links
    # falls back to moving file by file (still never a partial file under its real name).
    fallback = (
        f"(cd {STAGE} && find . \\( -type f -o -type l \\) -print0 | while IFS= read -r -d '' f; do "
        'mkdir -p "../${f%/*}" && mv -f "$f" "../$f" || exit 1; done)'
    )
    script = (
        f"cd {d} && mkdir -p {STAGE} && tar -x --no-same-owner -f - -C {STAGE} && "
        f"{{ [ ! -e {STAGE}/{DELETE} ] || {{ xargs -0 rm -f -- < {STAGE}/{DELETE} && rm -f {STAGE}/{DELETE}; }}; }} && "
        f"{{ cp -al --remove-destination {STAGE}/. . 2>/dev/null || {fallback}; }} && rm -rf {STAGE}"
    )
    return f"bash -c {q(script)}"


async def sync_tree(
    remote: Remote, src: Path, dest: str, exclude: list[str], progress: Progress | None = None
) -> SyncStats:
    """Make `dest` hold the files of `src` (minus excludes and .gitignored paths). Re-running after
    any interruption converges; an unchanged tree costs one round trip."""
    started = time.monotonic()
    dest = remote_path(dest)
    src = Path(src)
    local = {e.rel: e for e in walk(src, exclude)}
    remote_entries, found = await remote_listing(remote, dest)
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
    if to_send or to_delete or new_manifest != manifest or found is None:
        # One stream carries the changed files, the deletions and the new manifest: one round trip.
        extra = [(MANIFEST, json.dumps({"version": 1, "files": new_manifest}, sort_keys=True).encode())]
        if to_delete:
            extra.append((DELETE, "\0".join(to_delete).encode()))
        blocks = _read_ahead(_tar_blocks(to_send, extra), total, progress)
        try:
            await remote.stream_in(
                _place_command(dest),
                blocks,
                size=total,
                what=f"code sync to {dest}",
                left="files are staged and placed only once all arrived, so nothing is half-written; "
                "the next apply syncs again",
            )
        finally:
            await blocks.aclose()  # stops the reader thread at once when the connection dropped
    elif progress is not None:
        progress(0, 0)
    return SyncStats(
        files_sent=len(to_send),
        bytes_sent=total,
        files_deleted=len(to_delete),
        seconds=round(time.monotonic() - started, 4),
        warnings=warnings,
    )
