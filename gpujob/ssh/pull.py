"""Checkpoint pulls: resumable (a local `.part` continues from what it holds: spans.py), large files
optionally striped over parallel channels and connections, checksummed on both ends, then checked by
the user's local verify command. A `.part` is only promoted once its sha256 matches
the remote file's. A file that disappears mid-pull (the run's `keep` rotation) is reported as
vanished, not as an error. What is pulled comes from listing.list_remote; local writes go through
confined.LocalDir. The other direction (carrying checkpoints onto a new disk) is carry.py.
"""

from __future__ import annotations

import asyncio
import os
import queue
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from gpujob.errors import RemoteCommandError, SSHError
from gpujob.invariant import present as must_be
from gpujob.model import Model
from gpujob.quote import q, remote_path
from gpujob.ssh import spans
from gpujob.ssh.confined import PART, LocalDir, UnsafeLocalPath
from gpujob.ssh.listing import RemoteFile, RemoteListing, list_remote, remote_state
from gpujob.ssh.session import Remote

__all__ = [
    "ChecksumMismatch",
    "PullOutcome",
    "PulledCheckpoint",
    "RemoteFile",
    "RemoteListing",
    "list_remote",
    "pull_checkpoints",
]
Progress = Callable[[int, int], object]
T = TypeVar("T")


class ChecksumMismatch(SSHError):
    """A pulled file's sha256 differs from the remote one (after one full re-fetch)."""


class PulledCheckpoint(Model):
    name: str  # path relative to the remote checkpoint dir (and to local_dir)
    size: int
    sha256: str
    remote_sha256: str
    verified: bool | None  # None: no verify command configured
    verify_output: str
    bytes_transferred: int = 0
    resumed_from: int = 0


@dataclass
class PullOutcome:
    """What a pull did. Iterates over the pulled files."""

    files: list[PulledCheckpoint] = field(default_factory=list)
    listing: RemoteListing | None = None  # taken when the pull began
    vanished: list[str] = field(default_factory=list)  # listed, then gone before it was fetched
    unpullable: dict[str, str] = field(default_factory=dict)  # remote or local reason, by name

    def __iter__(self) -> Iterator[PulledCheckpoint]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


async def _fetch(
    lanes: Sequence[Remote],
    path: str,
    local: LocalDir,
    dfd: int,
    base: str,
    size: int,
    on_bytes: Callable[[int], None],
    shown: Path,
    stripes: int,
) -> tuple[str, int, int]:
    """Fill `<base>.part` (resuming what it holds) from the remote file, large files as several spans
    at once, one channel each, spread over `lanes`; returns (sha256 hex, bytes transferred, bytes
    already present)."""
    writer, present = spans.open_spans(local, dfd, base, size, stripes)
    got = 0

    async def fetch(span: spans.Span, remote: Remote) -> None:
        nonlocal got
        expected, taken = span.missing, 0

        async def sink(chunk: bytes) -> None:
            nonlocal got, taken
            writer.check()
            piece = chunk[: expected - taken]  # a file grown past its listed size: the hashes will differ
            taken += len(chunk)
            got += len(chunk)
            on_bytes(len(chunk))
            if piece:
                try:
                    writer.chunks.put_nowait((span, piece))
                except queue.Full:
                    await asyncio.to_thread(writer.chunks.put, (span, piece))

        # The last span reads to the end; the others stop after their bytes (`head -c`).
        cmd = f"tail -c +{span.filled + 1} -- {q(path)}"
        if span.end < size:
            cmd += f" | head -c {expected}"
        await remote.stream_out(
            cmd,
            sink,
            size=expected,
            what=f"pull of {path}",
            left=f"the partial file {shown}{PART} is kept; the next pull resumes it",
        )
        if taken < expected:  # `head` exits 0 when `tail` found no file: a short stream is a failure
            raise RemoteCommandError(cmd, None, f"the stream ended after {taken} of {expected} bytes")

    try:
        writer.start()
        todo = [s for s in writer.spans if s.missing]
        await _all_or_none([fetch(s, lanes[i % len(lanes)]) for i, s in enumerate(todo)])
    finally:
        await asyncio.to_thread(writer.chunks.put, None)
        await asyncio.to_thread(writer.join)
        os.close(writer.fd)
    writer.check()
    return (writer.hash.hexdigest() if writer.complete else ""), got, present


async def _all_or_none(work: list[Awaitable[None]]) -> None:
    """Run `work` concurrently; the first failure ends the rest (their channels closed) and is raised."""
    tasks = [asyncio.ensure_future(w) for w in work]
    if not tasks:
        return
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.wait(tasks)
    for t in tasks:
        if not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]


ROTATION_ROUNDS = 3
DEFAULT_STRIPES = 1


def stripe_count(given: int | None = None) -> int:
    """How many spans of one large file are fetched at once: `given`, else GPUJOB_PULL_STRIPES, else
    DEFAULT_STRIPES (1 to 16)."""
    if given is None:
        raw = os.environ.get("GPUJOB_PULL_STRIPES", "")
        given = int(raw) if raw.strip().isdigit() else DEFAULT_STRIPES
    return max(1, min(spans.MAX_STRIPES, given))


async def pull_checkpoints(
    remote: Remote,
    remote_dir: str,
    local_dir: Path,
    *,
    verify: str | None,
    progress: Progress | None = None,
    cwd: Path | None = None,
    lanes: Sequence[Remote] = (),
    stripes: int | None = None,
    only: Callable[[str], bool] | None = None,
) -> PullOutcome:
    """Pull every checkpoint under `remote_dir` into `local_dir`, resuming partial files, refusing a
    checksum mismatch (ChecksumMismatch), and recording the verify command's result per file.

    A running job keeps its newest N checkpoints: a file it deletes between the listing and its fetch
    was superseded, not missed. When that happens the dir is listed again and the newer files pulled
    too (ROTATION_ROUNDS at most). The outcome's listing is the first one plus those newer files, each
    with the sha256 the remote computed during the pull ("" for a file that vanished first).

    A file of at least 2 × spans.STRIPE_MIN is fetched as up to `stripes` spans at once (default
    GPUJOB_PULL_STRIPES, else DEFAULT_STRIPES), over `remote` and the extra connections in `lanes`.

    `only`: pull just the names it accepts (an outputs glob; gpujob.outputs); the rest is not listed."""
    from gpujob import verify as verify_cmd

    remote_dir = remote_path(remote_dir)
    listing = (await list_remote(remote, remote_dir, hashes=False)).selected(only)  # hashed as it streams
    outcome = PullOutcome(listing=listing, unpullable=dict(listing.unpullable))
    local = LocalDir(Path(local_dir))
    seen: dict[str, RemoteFile] = {}
    total = done = 0

    ways = stripe_count(stripes)

    def present(name: str, want: RemoteFile) -> int:
        try:
            dfd, base = local.parent(name)
        except UnsafeLocalPath:
            return 0
        if local.regular_size(dfd, base) == want.size:
            return want.size
        return spans.present(local, dfd, base, want.size)

    def on_bytes(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    try:
        for round_ in range(ROTATION_ROUNDS):
            if round_:
                listing = (await list_remote(remote, remote_dir, hashes=False)).selected(only)
                outcome.unpullable.update(listing.unpullable)
            files = sorted((n, f) for n, f in listing.files.items() if n not in seen)
            needed = sum(f.size - present(n, f) for n, f in files)
            await _room(remote, remote_dir, local.root, dict(files), needed)  # before any byte is written
            seen.update(files)
            total += needed
            rotated = False
            for name, want in files:
                try:
                    got = await _pull_one(
                        [remote, *lanes], f"{remote_dir}/{name}", name, want, local, on_bytes, ways
                    )
                except UnsafeLocalPath as exc:
                    outcome.unpullable[name] = f"local path not writable safely: {exc}"
                    now = await remote_state(remote, f"{remote_dir}/{name}", want.size)
                    seen[name] = now or want
                    continue
                if got is None:
                    outcome.vanished.append(name)
                    rotated = True
                    continue
                seen[name] = RemoteFile(size=got.size, sha256=got.remote_sha256)
                if verify:
                    ok, text = await verify_cmd.run_async(verify, local.root / name, cwd)
                    got = got.model_copy(update={"verified": ok, "verify_output": text})
                outcome.files.append(got)
            if not rotated:
                break
    finally:
        local.close()
    first = outcome.listing
    first = must_be(first, "the pull's first listing")
    outcome.listing = first.model_copy(update={"files": {**first.files, **seen}})
    return outcome


async def _room(
    remote: Remote, remote_dir: str, local_root: Path, files: dict[str, RemoteFile], needed: int
) -> None:
    """The claimed sizes fit the remote disk and the bytes still to fetch fit here (gpujob.ssh.space)."""
    if not files:
        return
    from gpujob.ssh import space

    answer = await remote.run(
        space.DISK_COMMAND.format(dir=q(remote_dir)),
        check=False,
        what=f"the size of the disk of {remote_dir}",
    )
    space.check(
        {n: f.size for n, f in files.items()},
        needed=needed,
        free=space.local_free(local_root),
        disk=space.parse_disk(answer.stdout),
        local_dir=local_root,
        remote_dir=remote_dir,
        where=remote.where,
    )


async def _pull_one(
    lanes: list[Remote],
    path: str,
    name: str,
    want: RemoteFile,
    local: LocalDir,
    on_bytes: Callable[[int], None],
    stripes: int,
) -> PulledCheckpoint | None:
    """One file; None when it vanished from the remote before it was fetched whole.

    The listing gave names and sizes only: the remote hashes the file at rest on a second channel while
    it streams (or while the local copy is hashed), so that pass overlaps the transfer instead of
    preceding it. The `.part` is promoted only when its sha256 equals that remote sha256."""
    remote = lanes[0]
    dfd, base = local.parent(name)
    if local.regular_size(dfd, base) == want.size:
        hashing = _remote_hash(remote, path, want.size)
        local_sum = await _cancelling(hashing, asyncio.to_thread(local.sha256, dfd, base))
        now = await hashing
        if now is None:
            return None
        if local_sum == now.sha256:
            return PulledCheckpoint(
                name=name, size=want.size, sha256=local_sum, remote_sha256=now.sha256,
                verified=None, verify_output="",
            )  # fmt: skip
    transferred, resumed = 0, 0
    for attempt in (1, 2):
        hashing = _remote_hash(remote, path, want.size)
        fetch = _fetch(lanes, path, local, dfd, base, want.size, on_bytes, local.root / name, stripes)
        try:
            local_sum, got, offset = await _cancelling(hashing, fetch, keep=RemoteCommandError)
        except RemoteCommandError:
            if await hashing is None:
                spans.discard(local, dfd, base)
                return None  # rotated away while we read it
            raise
        now = await hashing
        if now is None:  # gone by the time it was hashed: what arrived cannot be checked
            spans.discard(local, dfd, base)
            return None
        transferred += got
        resumed = resumed or offset
        if now.size == want.size and local_sum == now.sha256:
            local.promote(dfd, base)
            local.discard(dfd, spans.journal_name(base))
            return PulledCheckpoint(
                name=name, size=want.size, sha256=local_sum, remote_sha256=now.sha256,
                verified=None, verify_output="", bytes_transferred=transferred, resumed_from=resumed,
            )  # fmt: skip
        spans.discard(local, dfd, base)  # never promote a mismatching file
        if attempt == 2:
            raise ChecksumMismatch(
                f"checksum mismatch pulling {path}: local sha256 {local_sum}, remote {now.sha256}",
                hint="the remote file may have been rewritten during the pull; run pull again",
            )
        want = now  # rewritten since the listing: fetch it whole against its current checksum
    raise AssertionError("unreachable")


def _remote_hash(remote: Remote, path: str, size: int) -> asyncio.Task[RemoteFile | None]:
    return asyncio.create_task(remote_state(remote, path, size))


async def _cancelling(
    hashing: asyncio.Task[RemoteFile | None],
    work: Awaitable[T],
    keep: type[BaseException] | tuple[type[BaseException], ...] = (),
) -> T:
    """Await `work`; if it fails (other than with `keep`), the concurrent remote hash is ended too,
    its channel closed, before the failure propagates."""
    try:
        return await work
    except keep:
        raise
    except BaseException:
        hashing.cancel()
        await asyncio.wait([hashing])
        raise
