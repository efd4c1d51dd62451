"""The local side of a pull: a `.part` file filled as byte spans, possibly several at once (striped over
parallel channels), written in place and hashed in file order while it fills.

A `.part` is either plain (its bytes are a prefix of the remote file: resume from its size) or striped:
then `.<name>.part-spans` beside it says, per span, how far the span is filled. That record is written
only after the bytes it vouches for, so after a kill -9 at any point it never claims bytes the `.part`
lacks; bytes written after its last update are fetched again. It is a dotfile because a pull never
fetches remote dotfiles, so no checkpoint can share its name. Whatever the record says, promotion still
needs the whole file's sha256 to equal the remote's: a wrong record costs a re-fetch, never a bad file.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import queue
import threading
from dataclasses import dataclass

from gpujob.errors import GpujobError
from gpujob.ssh.confined import PART, LocalDir

STRIPE_MIN = 64 * 1024 * 1024  # a file is striped only when each stripe would carry at least this much
JOURNAL_EVERY = 16 * 1024 * 1024  # bytes written between two updates of the span record (re-fetch bound)
HASH_STEP = 4 * 1024 * 1024  # bytes re-read per step when hashing what arrived out of order
QUEUED_CHUNKS = 16  # received chunks waiting for the writer: the pull's memory bound
MAX_STRIPES = 16  # spans fetched at once at most (gpujob.ssh.pull.stripe_count)
STRIPE_FLOOR = 1024 * 1024  # the least GPUJOB_PULL_STRIPE_MIN_MB can make a stripe


class LocalWriteError(GpujobError):
    """The local `.part` could not be written (disk full, file size limit, I/O error)."""


@dataclass
class Span:
    """Bytes [start, end) of the file; [start, filled) of them are on disk."""

    start: int
    end: int
    filled: int

    @property
    def missing(self) -> int:
        return self.end - self.filled


def stripe_min() -> int:
    """The least a stripe carries: GPUJOB_PULL_STRIPE_MIN_MB when set, else STRIPE_MIN."""
    raw = os.environ.get("GPUJOB_PULL_STRIPE_MIN_MB", "").strip()
    return max(1, int(raw)) * 1024 * 1024 if raw.isdigit() else STRIPE_MIN


def journal_name(base: str) -> str:
    return f".{base}{PART}-spans"


def plan_spans(size: int, have: list[Span] | None, prefix: int, stripes: int) -> list[Span]:
    """The spans of a file of `size` bytes: those of the record when there is one, else the plain
    prefix as one filled span and the rest split into at most `stripes` spans of STRIPE_MIN or more."""
    if have is not None:
        return have
    spans = [Span(0, prefix, prefix)] if prefix else []
    rest = size - prefix
    n = max(1, min(stripes, rest // stripe_min()))
    step = -(-rest // n) if rest else 0
    for i in range(n):
        lo, hi = prefix + i * step, min(size, prefix + (i + 1) * step)
        if hi > lo or not spans:
            spans.append(Span(lo, hi, lo))
    return spans


def max_spans(size: int) -> int:
    """The most spans plan_spans can give a file of `size` bytes: a plain prefix, then at most
    MAX_STRIPES stripes, each of at least STRIPE_FLOOR bytes when there are several."""
    return 1 + max(1, min(MAX_STRIPES, size // STRIPE_FLOOR))


def read_journal(local: LocalDir, dfd: int, base: str, size: int, part_size: int) -> list[Span] | None:
    """The spans a record vouches for; None when there is none. A record that does not fit this file
    (other size, gaps, spans past the `.part`, more spans than a pull of this file makes: a forged
    record of 2,000 spans would open 2,000 channels) is dropped with the `.part`, and the file is
    fetched again from its start: nothing in it is trusted."""
    raw = local.read_small(dfd, journal_name(base))
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        if not isinstance(data["spans"], list) or len(data["spans"]) > max_spans(size):
            raise ValueError("implausibly many spans")
        spans = [Span(int(a), int(b), int(c)) for a, b, c in data["spans"]]
        fits = data["size"] == size and spans and spans[0].start == 0 and spans[-1].end == size
        fits = fits and all(x.end == y.start for x, y in itertools.pairwise(spans))
        fits = fits and all(
            s.start <= s.filled <= s.end and (s.filled == s.start or s.filled <= part_size) for s in spans
        )  # a span not begun may start past the end of the .part
    except (ValueError, KeyError, TypeError):
        fits = False
    if not fits:
        discard(local, dfd, base)
        return []
    return spans


def discard(local: LocalDir, dfd: int, base: str) -> None:
    """Forget a partial file: the `.part` and its span record."""
    local.discard(dfd, base + PART)
    local.discard(dfd, journal_name(base))


def present(local: LocalDir, dfd: int, base: str, size: int) -> int:
    """Bytes of a file of `size` already on disk (in `.part` or its spans)."""
    part = local.regular_size(dfd, base + PART)
    if part is None:
        return 0
    raw = local.read_small(dfd, journal_name(base))
    if raw is None:
        return min(part, size)
    try:
        spans = json.loads(raw)["spans"]
        return min(size, sum(max(0, min(int(c), part) - int(a)) for a, _, c in spans))
    except (ValueError, KeyError, TypeError):
        return 0


class SpanWriter:
    """A thread that writes received chunks into the `.part` at their span's offset and hashes the file
    in order as far as it is contiguous: in-order bytes straight from the chunk, bytes that came early
    (a later stripe) re-read from the page cache once the gap before them is filled, never buffered.
    Writing and hashing release the GIL on large buffers, so they overlap with decryption on the event
    loop. The queue is bounded: when the disk is slower than the link, the transfer waits."""

    def __init__(self, local: LocalDir, dfd: int, base: str, fd: int, spans: list[Span], journal: bool):
        self.local, self.dfd, self.base, self.fd = local, dfd, base, fd
        self.spans = spans
        self.journal = journal
        self.hashed = 0
        self.hash = hashlib.sha256()
        self.chunks: queue.Queue[tuple[Span, bytes] | None] = queue.Queue(maxsize=QUEUED_CHUNKS)
        self.failure: BaseException | None = None
        self._unjournaled = 0
        self._thread = threading.Thread(target=self._run, name="gpujob-pull-writer", daemon=True)

    def start(self) -> None:
        try:
            if self.journal:
                self._write_journal()  # before any striped byte: a striped .part never lacks its record
        except OSError as exc:
            self.failure = exc
            self.check()
        self._thread.start()

    def join(self) -> None:
        if self._thread.ident is not None:
            self._thread.join()

    def check(self) -> None:
        """Raise LocalWriteError when the writer failed: the pull stops instead of sending on."""
        if self.failure is not None:
            where = self.local.root / f"{self.base}{PART}"
            raise LocalWriteError(
                f"cannot write {where}: {type(self.failure).__name__}: {self.failure}",
                hint=f"free space on the disk holding {self.local.root} (or fix what the error names), then "
                "pull again: the bytes already written are kept and not sent again",
            ) from self.failure

    @property
    def complete(self) -> bool:
        return self.hashed == self.spans[-1].end and all(s.missing == 0 for s in self.spans)

    def _run(self) -> None:
        try:
            while True:
                try:
                    item = self.chunks.get_nowait() if self._can_hash() else self.chunks.get()
                except queue.Empty:
                    self._hash_step()
                    continue
                if item is None:
                    break
                self._write(*item)
            while self._can_hash():
                self._hash_step()
            if self.journal:
                self._write_journal()
        except BaseException as exc:  # raised in the event loop by check(); keep draining so puts end
            self.failure = exc
            if self.journal:  # what did land is kept for the next pull, when the record still fits
                with contextlib.suppress(OSError):
                    self._write_journal()
            while self.chunks.get() is not None:
                pass

    def _write(self, span: Span, chunk: bytes) -> None:
        view, at = memoryview(chunk), span.filled
        while view:
            n = os.pwrite(self.fd, view, at)
            view, at = view[n:], at + n
        if self.hashed == span.filled:
            self.hash.update(chunk)
            self.hashed += len(chunk)
        span.filled = at
        self._unjournaled += len(chunk)
        if self.journal and self._unjournaled >= JOURNAL_EVERY:
            self._write_journal()

    def _frontier(self) -> int:
        """Where the contiguous, on-disk part of the file starting at `hashed` ends."""
        for s in self.spans:
            if s.start <= self.hashed < s.end or (self.hashed == s.start == s.end):
                return s.filled
        return self.hashed

    def _can_hash(self) -> bool:
        return self._frontier() > self.hashed

    def _hash_step(self) -> None:
        n = min(HASH_STEP, self._frontier() - self.hashed)
        block = os.pread(self.fd, n, self.hashed)
        if len(block) != n:
            raise OSError(f"{self.base}{PART} is shorter than the bytes written to it")
        self.hash.update(block)
        self.hashed += n

    def _write_journal(self) -> None:
        self._unjournaled = 0
        size = self.spans[-1].end
        data = {"version": 1, "size": size, "spans": [[s.start, s.end, s.filled] for s in self.spans]}
        self.local.write_small(self.dfd, journal_name(self.base), json.dumps(data).encode())


def open_spans(local: LocalDir, dfd: int, base: str, size: int, stripes: int) -> tuple[SpanWriter, int]:
    """The writer for `base`'s `.part` (not started), and the bytes of the file already present."""
    part = local.regular_size(dfd, base + PART)
    have = None
    if part is None:
        local.discard(dfd, journal_name(base))  # a record without its .part vouches for nothing
    else:
        have = read_journal(local, dfd, base, size, part) or None  # [] : dropped, with the .part
    fd, prefix = local.open_part(dfd, base, size)
    spans = plan_spans(size, have, prefix, stripes)
    journal = have is not None or sum(1 for s in spans if s.missing) > 1
    return SpanWriter(local, dfd, base, fd, spans, journal), sum(s.filled - s.start for s in spans)
