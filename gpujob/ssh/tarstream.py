"""The code sync's upload streams: GNU tar archives of the files to send, cut into ~CHUNK blocks, read
and packed in a thread a few chunks ahead of the channel; and the split of the files into streams that
the remote extracts in parallel (one `tar` each)."""

from __future__ import annotations

import asyncio
import queue
import tarfile
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import suppress

from gpujob.errors import GpujobError
from gpujob.ssh.ignore import LocalEntry
from gpujob.ssh.session import CHUNK

READ_AHEAD = 8  # chunks packed ahead of the channel, per stream
# What creating one file costs the remote, in bytes of streaming: on the 2-core loopback machine a new
# inode costs 0.3-1 ms of kernel time, about what 256 KiB of data costs to move. Used only to balance.
FILE_COST = 256 * 1024
SPLIT_MIN = 8 * 1024 * 1024  # below this a second stream's extra remote command costs more than it saves

_BLOCK = tarfile.BLOCKSIZE


def split(entries: list[LocalEntry], streams: int) -> list[list[LocalEntry]]:
    """Up to `streams` non-empty shares of `entries` with about equal cost (largest first, each to the
    cheapest share), each in path order. One share when the whole is small."""
    if streams <= 1 or len(entries) < 2 or sum(e.size for e in entries) < SPLIT_MIN:
        return [entries] if entries else []
    shares: list[list[LocalEntry]] = [[] for _ in range(streams)]
    load = [0] * streams
    for e in sorted(entries, key=lambda e: e.size, reverse=True):
        i = load.index(min(load))
        shares[i].append(e)
        load[i] += e.size + FILE_COST
    return [sorted(s, key=lambda e: e.rel) for s in shares if s]


def _header(e: LocalEntry) -> bytes:
    ti = tarfile.TarInfo(e.rel)
    ti.mtime = e.mtime
    ti.mode = e.mode
    if e.link is not None:
        ti.type = tarfile.SYMTYPE
        ti.linkname = e.link
    else:
        ti.size = e.size
    return ti.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


def _dir_header(rel: str, mtime: int) -> bytes:
    ti = tarfile.TarInfo(rel)
    ti.type = tarfile.DIRTYPE
    ti.mode = 0o755
    ti.mtime = mtime
    return ti.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


def _parents(rel: str) -> Iterator[str]:
    parts = rel.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        yield "/".join(parts[:i])


class LocalReadError(GpujobError):
    """A file of the code tree could not be read while it was being sent."""


def _unreadable(e: LocalEntry, exc: OSError) -> LocalReadError:
    return LocalReadError(
        f"cannot read {e.path} for the code sync: {exc.strerror or exc}",
        hint="fix its permissions, or leave it out with run.sync.exclude; nothing was placed on the "
        "machine, and the next apply syncs again",
    )


def member(name: str, data: bytes) -> bytes:
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = int(time.time())
    ti.mode = 0o644
    return ti.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape") + data + b"\0" * (-len(data) % _BLOCK)


def tar_blocks(entries: list[LocalEntry], extra: list[tuple[str, bytes]]) -> Iterator[tuple[bytes, int]]:
    """A GNU tar stream of `entries` then `extra` (name, content) members, cut into ~CHUNK blocks (small
    files batched together), each with the file bytes it completes (for progress)."""
    buf = bytearray()
    done = 0
    # Every file's directories come first as members of their own: tars extracting other streams into
    # the same stage at the same time may create them too, and GNU tar treats an existing directory
    # member as fine but gives up on a file whose implied directory another tar made under it.
    made: set[str] = set()
    now = int(time.time())
    for e in entries:
        for d in _parents(e.rel):
            if d not in made:
                made.add(d)
                buf += _dir_header(d, now)
        if e.link is not None:
            buf += _header(e)
            continue
        try:
            fh = open(e.path, "rb")  # noqa: SIM115 (closed by the with below, after the header)
        except FileNotFoundError:
            done += e.size  # deleted since the walk (an editor's temp file): the next sync sees it gone
            continue
        except OSError as exc:
            raise _unreadable(e, exc) from exc
        buf += _header(e)
        remaining = e.size
        with fh:
            while remaining > 0:
                try:
                    chunk = fh.read(min(CHUNK, remaining))
                except OSError as exc:
                    raise _unreadable(e, exc) from exc
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
        buf += b"\0" * (-e.size % _BLOCK)
    for name, data in extra:
        buf += member(name, data)
    buf += b"\0" * (2 * _BLOCK)
    yield bytes(buf), done


async def read_ahead(
    blocks: Iterator[tuple[bytes, int]], progress: Callable[[int], object] | None = None
) -> AsyncGenerator[bytes, None]:
    """Read and pack files in a thread, a few chunks ahead, so disk reads overlap with encryption on the
    event loop; `progress(done)` is called on the loop. If the consumer stops (a dropped connection),
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
                progress(done)
    finally:
        stop.set()
        with suppress(queue.Full):  # wakes a getter thread still waiting, so the loop can shut down
            chunks.put_nowait(None)
