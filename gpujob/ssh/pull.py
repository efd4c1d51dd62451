"""Checkpoint pulls: resumable (a local `.part` continues from its size), checksummed on both ends,
then checked by the user's local verify command. A `.part` is only promoted once its sha256 matches
the remote file's."""

from __future__ import annotations

import asyncio
import hashlib
import os
import queue
import shlex
import threading
from collections.abc import Callable
from pathlib import Path

from gpujob.errors import RemoteCommandError, SSHError
from gpujob.model import Model
from gpujob.ssh.quote import q, remote_path
from gpujob.ssh.session import Remote

Progress = Callable[[int, int], object]
QUEUED_CHUNKS = 16  # at most this many received chunks wait for the disk writer
VERIFY_OUTPUT_MAX = 4000


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


async def list_checkpoints(remote: Remote, remote_dir: str) -> list[tuple[str, int]]:
    """(relative name, size) of complete checkpoint files; temp files of atomic writers are skipped."""
    d = q(remote_path(remote_dir))
    cmd = (
        f"[ -d {d} ] || exit 0; cd {d} && find . -mindepth 1 -name '.*' -prune -o -type f ! -name '*.tmp' "
        "-printf '%P\\0%s\\0'"
    )
    fields = (
        await remote.run(cmd, what=f"listing checkpoints in {remote_dir}", left="nothing was pulled yet")
    ).stdout.split("\0")
    out = []
    for i in range(0, len(fields) - 1, 2):
        name, size = fields[i], int(fields[i + 1])
        if name.startswith("/") or ".." in name.split("/"):
            raise SSHError(f"refusing remote checkpoint name {name!r}: it would escape the local directory")
        out.append((name, size))
    return sorted(out)


def _sha256_file(path: Path, upto: int | None = None) -> hashlib._Hash:
    h = hashlib.sha256()
    left = upto
    with open(path, "rb") as fh:
        while left is None or left > 0:
            block = fh.read(1 << 20 if left is None else min(1 << 20, left))
            if not block:
                break
            h.update(block)
            if left is not None:
                left -= len(block)
    return h


async def _remote_sha256(remote: Remote, path: str, size: int) -> str:
    # sha256sum prints nothing until it has read the whole file: its silence is sized from the data.
    bound = remote.limits.for_bytes(size)
    out = (
        await remote.run(
            f"sha256sum -- {q(path)}", timeout=bound, idle=bound, what=f"remote sha256 of {path}"
        )
    ).stdout
    return out.split()[0] if out.split() else ""


ROTATION_ROUNDS = 3


async def _exists(remote: Remote, path: str) -> bool:
    res = await remote.run(f"test -e {q(path)}", check=False, what=f"checking that {path} still exists")
    return res.exit_status == 0


async def _fetch(
    remote: Remote, path: str, part: Path, size: int, on_bytes: Callable[[int], None]
) -> tuple[str, int, int]:
    """Continue `part` from its current size; returns (sha256 hex, bytes transferred, resumed_from)."""
    offset = part.stat().st_size if part.exists() else 0
    if offset > size:  # the remote file was replaced by a smaller one: start over
        part.unlink()
        offset = 0
    h = _sha256_file(part) if offset else hashlib.sha256()
    got = 0
    # Writing and hashing run in a thread (both release the GIL on large buffers), so they overlap with
    # decryption on the event loop instead of taking turns with it. The queue is bounded: when the disk
    # is slower than the network, the transfer waits instead of buffering the checkpoint in memory.
    chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUED_CHUNKS)
    with open(part, "ab") as fh:

        def drain() -> None:
            while (chunk := chunks.get()) is not None:
                fh.write(chunk)
                h.update(chunk)

        writer = threading.Thread(target=drain, name="gpujob-pull-writer", daemon=True)
        writer.start()

        async def sink(chunk: bytes) -> None:
            nonlocal got
            try:
                chunks.put_nowait(chunk)
            except queue.Full:
                await asyncio.to_thread(chunks.put, chunk)
            got += len(chunk)
            on_bytes(len(chunk))

        try:
            if offset < size:
                await remote.stream_out(
                    f"tail -c +{offset + 1} -- {q(path)}",
                    sink,
                    size=size - offset,
                    what=f"pull of {path}",
                    left=f"the partial file {part} is kept; the next pull resumes it",
                )
        finally:
            await asyncio.to_thread(chunks.put, None)
            await asyncio.to_thread(writer.join)
    return h.hexdigest(), got, offset


async def _run_verify(verify: str, file: Path) -> tuple[bool, str]:
    cmd = verify.replace("{file}", shlex.quote(str(file)))
    proc = await asyncio.create_subprocess_shell(
        cmd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
    )
    out, _ = await proc.communicate()
    text = out.decode("utf-8", "replace")[-VERIFY_OUTPUT_MAX:]
    return proc.returncode == 0, text


async def pull_checkpoints(
    remote: Remote, remote_dir: str, local_dir: Path, *, verify: str | None, progress: Progress | None = None
) -> list[PulledCheckpoint]:
    """Pull every checkpoint under `remote_dir` into `local_dir`, resuming partial files, refusing a
    checksum mismatch (ChecksumMismatch), and recording the verify command's result per file.
    A running job keeps its newest N checkpoints: a file it deletes between the listing and its pull
    was superseded, so the listing is read again and the newer files pulled (a few rounds at most)."""
    remote_dir = remote_path(remote_dir)
    local_dir = Path(local_dir)
    local_dir.mkdir(parents=True, exist_ok=True)

    def present(name: str, size: int) -> int:
        final, part = local_dir / name, local_dir / f"{name}.part"
        if final.exists() and final.stat().st_size == size:
            return size
        return min(part.stat().st_size, size) if part.exists() else 0

    total = done = 0

    def on_bytes(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    results: list[PulledCheckpoint] = []
    seen: set[str] = set()
    for _ in range(ROTATION_ROUNDS):
        files = [(n, s) for n, s in await list_checkpoints(remote, remote_dir) if n not in seen]
        seen.update(n for n, _ in files)
        total += sum(s - present(n, s) for n, s in files)
        rotated = False
        for name, size in files:
            got = await _pull_one(remote, f"{remote_dir}/{name}", name, size, local_dir, verify, on_bytes)
            if got is None:
                rotated = True
            else:
                results.append(got)
        if not rotated:
            break
    return results


async def _pull_one(
    remote: Remote,
    path: str,
    name: str,
    size: int,
    local_dir: Path,
    verify: str | None,
    on_bytes: Callable[[int], None],
) -> PulledCheckpoint | None:
    """One file, resumed and checksummed; None when the job deleted it before we could read it."""
    final, part = local_dir / name, local_dir / f"{name}.part"
    final.parent.mkdir(parents=True, exist_ok=True)
    remote_sum = asyncio.create_task(_remote_sha256(remote, path, size))  # hashes while we transfer
    transferred, resumed, local_sum = 0, 0, ""
    try:
        if final.exists():
            if final.stat().st_size == size:
                local_sum = (await asyncio.to_thread(_sha256_file, final)).hexdigest()
            if local_sum != await remote_sum:
                final.unlink()  # an older file under the same name: the remote one replaced it
        if not final.exists():
            for attempt in (1, 2):
                local_sum, got, offset = await _fetch(remote, path, part, size, on_bytes)
                transferred += got
                resumed = resumed or offset
                if local_sum == await remote_sum:
                    break
                part.unlink()  # never promote a mismatching file
                if attempt == 2:
                    raise ChecksumMismatch(
                        f"checksum mismatch pulling {path}: local sha256 {local_sum}, remote {await remote_sum}",
                        hint="the remote file may have been rewritten during the pull; run pull again",
                    )
                remote_sum = asyncio.create_task(_remote_sha256(remote, path, size))
            os.replace(part, final)
    except RemoteCommandError:
        if await _exists(remote, path):
            raise
        part.unlink(missing_ok=True)  # rotated away after the listing: no checkpoint any more
        return None
    finally:
        if not remote_sum.done():
            remote_sum.cancel()
        elif not remote_sum.cancelled():
            remote_sum.exception()  # retrieved here: a failed hash is handled above, not logged later
    verified: bool | None = None
    verify_output = ""
    if verify:
        verified, verify_output = await _run_verify(verify, final)
    return PulledCheckpoint(
        name=name,
        size=size,
        sha256=local_sum,
        remote_sha256=remote_sum.result(),
        verified=verified,
        verify_output=verify_output,
        bytes_transferred=transferred,
        resumed_from=resumed,
    )
