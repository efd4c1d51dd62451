"""Striped pulls: a large checkpoint fetched as several spans at once (one channel each, over one or
more connections), written in place, hashed in file order, and resumable after a kill -9 at any point
with only the missing bytes sent again. Real sshd, real files, real processes killed for real."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from gpujob.errors import SSHError
from gpujob.ssh import spans
from gpujob.ssh.confined import LocalDir
from gpujob.ssh.pull import PulledCheckpoint, pull_checkpoints
from gpujob.ssh.session import CHUNK, connect
from gpujob.ssh.testing import SSHD
from tests.ssh.drops import CutAt, own_sshd

MB = 1 << 20
SIZE = 24 * MB + 12345  # not a multiple of anything the spans use


@pytest.fixture
def small_stripes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stripes of a few MB (the product stripes files of 2 × 64 MB and more), recorded every 1 MB."""
    monkeypatch.setattr(spans, "STRIPE_MIN", MB)
    monkeypatch.setattr(spans, "JOURNAL_EVERY", MB)


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def make_checkpoint(rdir: Path, size: int = SIZE) -> Path:
    rdir.mkdir(parents=True, exist_ok=True)
    path = rdir / "model.pt"
    path.write_bytes(os.urandom(size))
    return path


async def _pull(
    server: SSHD, state: Path, rdir: Path, ldir: Path, *, lanes: int = 0, **kw: object
) -> list[PulledCheckpoint]:
    async with AsyncExitStack() as stack:
        remotes = [
            await stack.enter_async_context(
                connect(
                    server.endpoint,
                    key_path=state / "id_ed25519",
                    known_hosts=state / "kh.json",
                    resource_id="pod",
                )
            )
            for _ in range(1 + lanes)
        ]
        outcome = await pull_checkpoints(remotes[0], str(rdir), ldir, verify=None, lanes=remotes[1:], **kw)  # type: ignore[arg-type]
        return list(outcome)


def leftovers(ldir: Path) -> list[str]:
    return sorted(p.name for p in ldir.iterdir() if p.name != "model.pt")


class HeldFirstSpan(queue.Queue):  # type: ignore[type-arg]
    """The writer's chunk queue, holding the first span's second chunk until a chunk of another span
    is queued: spans fetched one after another never get past it (the hold ends after HOLD_S, noted),
    spans fetched at once do. What the pull proves about concurrency then no longer depends on which
    channel the event loop happens to serve first on a busy machine."""

    HOLD_S = 30.0

    def __init__(self, maxsize: int) -> None:
        super().__init__(maxsize)
        self.first_chunks = 0
        self.other = threading.Event()
        self.held_in_vain = False

    def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
        if isinstance(item, tuple):
            span = item[0]
            if span.start != 0:
                self.other.set()
            elif self.first_chunks >= 1 and not self.other.is_set():
                if not block:  # the pull's put_nowait: it then waits in a thread, so the event loop runs on
                    raise queue.Full
                self.held_in_vain = not self.other.wait(self.HOLD_S)
            if span.start == 0:
                self.first_chunks += 1
        super().put(item, block, timeout)


@pytest.mark.parametrize("lanes", [0, 1])
def test_a_striped_pull_reassembles_the_file_in_place(
    sshd: SSHD, state: Path, tmp_path: Path, small_stripes: None, lanes: int
) -> None:
    src = make_checkpoint(tmp_path / "r")
    ldir = tmp_path / "l"
    written: list[tuple[int, int]] = []
    held: list[HeldFirstSpan] = []
    real_init, real_write = spans.SpanWriter.__init__, spans.SpanWriter._write

    def init(self: spans.SpanWriter, *args: Any, **kw: Any) -> None:
        real_init(self, *args, **kw)
        self.chunks = HeldFirstSpan(spans.QUEUED_CHUNKS)
        held.append(self.chunks)

    def record(self: spans.SpanWriter, span: spans.Span, chunk: bytes) -> None:
        written.append((span.start, span.filled))
        real_write(self, span, chunk)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(spans.SpanWriter, "__init__", init)
        mp.setattr(spans.SpanWriter, "_write", record)
        [p] = asyncio.run(_pull(sshd, state, tmp_path / "r", ldir, stripes=4, lanes=lanes))
    assert len({start for start, _ in written}) == 4  # four spans really were filled
    # ... at once: with the first span held after one chunk, another span's bytes still came
    [queued] = held
    assert not queued.held_in_vain, "the other spans waited for the first one: fetched one after another"
    starts = [start for start, _ in written]
    assert starts != sorted(starts)  # some span received bytes before an earlier one was complete
    assert p.sha256 == p.remote_sha256 == sha(src) == sha(ldir / "model.pt")
    assert p.bytes_transferred == SIZE and p.resumed_from == 0
    assert leftovers(ldir) == []  # neither the .part nor its span record is left


def test_plan_spans_covers_the_file_exactly() -> None:
    for size in (0, 1, spans.STRIPE_MIN - 1, 2 * spans.STRIPE_MIN + 7, 10 * spans.STRIPE_MIN + 3):
        for prefix in {0, size // 3, size}:
            for stripes in (1, 2, 4, 7):
                got = spans.plan_spans(size, None, prefix, stripes)
                assert got[0].start == 0 and got[-1].end == size
                assert all(a.end == b.start for a, b in itertools.pairwise(got))
                assert sum(s.filled - s.start for s in got) == prefix
                fetch = [s for s in got if s.missing]
                assert len(fetch) <= max(1, stripes)
                assert len(fetch) == 1 or all(s.missing >= spans.STRIPE_MIN for s in fetch)


# The child pulls with 3 stripes and kills itself (SIGKILL, no cleanup of any kind) at one point:
# before any byte of data, after `at` bytes were written, or with every byte in but before the promote.
CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from gpujob.ssh import confined, spans
    from gpujob.ssh.pull import pull_checkpoints
    from gpujob.ssh.session import connect
    from gpujob.live import SSHEndpoint

    host, port, user, key, known, rdir, ldir, point, at = sys.argv[1:]
    spans.STRIPE_MIN = spans.JOURNAL_EVERY = 1 << 20
    written = 0
    real_pwrite = os.pwrite

    def pwrite(fd, data, offset):  # the writer's only way to the disk: die inside it
        global written
        if point == "start" or (point == "data" and written + len(data) > int(at)):
            real_pwrite(fd, bytes(data[: int(at) - written]), offset)  # part of it lands first
            os.kill(os.getpid(), signal.SIGKILL)
        written += len(data)
        return real_pwrite(fd, data, offset)

    def promote(self, dfd, base):
        os.kill(os.getpid(), signal.SIGKILL)

    os.pwrite = pwrite
    if point == "promote":
        confined.LocalDir.promote = promote

    async def main():
        ep = SSHEndpoint(host=host, port=int(port), user=user)
        async with connect(ep, key_path=Path(key), known_hosts=Path(known), resource_id="pod") as r:
            await pull_checkpoints(r, rdir, Path(ldir), verify=None, stripes=3)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize(
    "point,at",
    [("start", 0), ("data", 1), ("data", SIZE // 3), ("data", SIZE - 5), ("promote", 0)],
    ids=["before-any-data", "first-bytes", "a-third", "all-but-5-bytes", "before-promote"],
)
def test_a_striped_pull_killed_anywhere_resumes_sending_only_the_missing_bytes(
    sshd: SSHD, state: Path, tmp_path: Path, small_stripes: None, point: str, at: int
) -> None:
    src = make_checkpoint(tmp_path / "r")
    ldir = tmp_path / "l"
    ep = sshd.endpoint
    args = [ep.host, str(ep.port), ep.user, str(state / "id_ed25519"), str(state / "kh.json")]
    child = subprocess.run(
        [sys.executable, "-c", CHILD, *args, str(tmp_path / "r"), str(ldir), point, str(at)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert not (ldir / "model.pt").exists()
    local = LocalDir(ldir)
    try:
        dfd, base = local.parent("model.pt")
        present = spans.present(local, dfd, base, SIZE)
        record = json.loads((ldir / spans.journal_name("model.pt")).read_text())
    finally:
        local.close()
    assert len(record["spans"]) == 3  # it was striped, and the record survived the kill
    # The record never vouches for a byte that is not the remote's ...
    data, part = src.read_bytes(), (ldir / "model.pt.part").read_bytes()
    for start, _, filled in record["spans"]:
        assert part[start:filled] == data[start:filled]
    # ... and lags the written bytes by at most one record interval per the whole file
    if point == "data":
        # (the chunk being written when it died is not recorded: at most one read of CHUNK bytes)
        assert at - spans.JOURNAL_EVERY - CHUNK <= present <= at
    elif point == "promote":
        assert present == SIZE
    else:
        assert present == 0

    [p] = asyncio.run(_pull(sshd, state, tmp_path / "r", ldir, stripes=3))
    assert p.resumed_from == present
    assert p.bytes_transferred == SIZE - present
    assert p.sha256 == p.remote_sha256 == sha(src) == sha(ldir / "model.pt")
    assert leftovers(ldir) == []


def test_a_dropped_connection_mid_stripe_resumes_from_the_record(tmp_path: Path, small_stripes: None) -> None:
    src = make_checkpoint(tmp_path / "r", 40 * MB)
    ldir = tmp_path / "l"
    with own_sshd(tmp_path) as (server, state):
        cut = CutAt(server, 0.4)
        with pytest.raises(SSHError):
            asyncio.run(_pull(server, state, tmp_path / "r", ldir, stripes=4, progress=cut))
        assert cut.fired
        local = LocalDir(ldir)
        try:
            dfd, base = local.parent("model.pt")
            present = spans.present(local, dfd, base, src.stat().st_size)
        finally:
            local.close()
        assert 0 < present < src.stat().st_size
        [p] = asyncio.run(_pull(server, state, tmp_path / "r", ldir, stripes=4))
        assert p.resumed_from == present
        assert p.bytes_transferred == src.stat().st_size - present
        assert p.sha256 == sha(src) == sha(ldir / "model.pt")
        assert leftovers(ldir) == []


def _plant_record(ldir: Path, spans_: list[list[int]], part: bytes, size: int = SIZE) -> None:
    ldir.mkdir(parents=True, exist_ok=True)
    (ldir / "model.pt.part").write_bytes(part)
    record = {"version": 1, "size": size, "spans": spans_}
    (ldir / spans.journal_name("model.pt")).write_text(json.dumps(record))


def _repull(server: SSHD, state: Path, tmp_path: Path, ldir: Path, stripes: int) -> PulledCheckpoint:
    """Pull tmp_path/r/model.pt into ldir; it must arrive whole, with nothing of the pull left beside it."""
    [p] = asyncio.run(_pull(server, state, tmp_path / "r", ldir, stripes=stripes))
    assert sha(ldir / "model.pt") == sha(tmp_path / "r" / "model.pt") == p.sha256
    assert leftovers(ldir) == []
    return p


@pytest.mark.parametrize(
    "record,why",
    [
        ("{not json", "garbage"),
        (json.dumps({"version": 1, "size": SIZE + 1, "spans": [[0, SIZE + 1, 0]]}), "another size"),
        (json.dumps({"version": 1, "size": SIZE, "spans": [[0, 10, 10], [20, SIZE, 20]]}), "a gap"),
        (json.dumps({"version": 1, "size": SIZE, "spans": [[0, SIZE, SIZE]]}), "more than the .part"),
        # 2,000 contiguous empty spans: it fits the file, but no pull makes more than 17; a pull that
        # trusted it would open 2,000 channels (and fail, and keep the record)
        (
            json.dumps(
                {
                    "version": 1,
                    "size": SIZE,
                    "spans": [
                        [i * SIZE // 2000, (i + 1) * SIZE // 2000, i * SIZE // 2000] for i in range(2000)
                    ],
                }
            ),
            "implausibly many spans",
        ),
    ],
    ids=["garbage", "another-size", "a-gap", "past-the-part", "2000-spans"],
)
def test_a_record_that_does_not_fit_is_dropped_with_its_part(
    sshd: SSHD, state: Path, tmp_path: Path, small_stripes: None, record: str, why: str
) -> None:
    make_checkpoint(tmp_path / "r")
    ldir = tmp_path / "l"
    ldir.mkdir()
    (ldir / "model.pt.part").write_bytes(b"\0" * 1000)
    (ldir / spans.journal_name("model.pt")).write_text(record)
    p = _repull(sshd, state, tmp_path, ldir, stripes=2)
    assert p.resumed_from == 0 and p.bytes_transferred == SIZE, why


def test_a_lying_record_costs_a_refetch_never_a_bad_file(
    sshd: SSHD, state: Path, tmp_path: Path, small_stripes: None
) -> None:
    make_checkpoint(tmp_path / "r")
    ldir = tmp_path / "l"
    half = SIZE // 2
    # It fits the file, but the bytes it vouches for are not the remote's.
    _plant_record(ldir, [[0, half, half], [half, SIZE, half]], b"\xff" * half)
    p = _repull(sshd, state, tmp_path, ldir, stripes=2)
    assert p.resumed_from == half
    assert p.bytes_transferred == (SIZE - half) + SIZE  # the rest, then the whole file once more


def test_a_link_or_fifo_planted_as_the_record_is_never_followed(
    sshd: SSHD, state: Path, tmp_path: Path, small_stripes: None
) -> None:
    src = make_checkpoint(tmp_path / "r")
    outside = tmp_path / "outside.json"
    outside.write_text("precious")
    for plant in ("link", "fifo"):
        ldir = tmp_path / f"l-{plant}"
        ldir.mkdir()
        (ldir / "model.pt.part").write_bytes(src.read_bytes()[:1000])  # so the record is read
        record = ldir / spans.journal_name("model.pt")
        if plant == "link":
            record.symlink_to(outside)
        else:
            os.mkfifo(record)
        p = _repull(sshd, state, tmp_path, ldir, stripes=3)  # a FIFO would hang here
        assert p.resumed_from == 1000 and p.bytes_transferred == SIZE - 1000
        assert outside.read_text() == "precious"


MEMORY_CHILD = textwrap.dedent(
    """
    import asyncio, os, resource, sys, time
    from pathlib import Path
    from gpujob.ssh import spans
    from gpujob.ssh.pull import pull_checkpoints
    from gpujob.ssh.session import connect
    from gpujob.live import SSHEndpoint

    host, port, user, key, known, rdir, ldir = sys.argv[1:]
    spans.STRIPE_MIN = 16 << 20
    real_write = spans.SpanWriter._write

    def slow_disk(self, span, chunk):  # a disk slower than the link: the queue must hold the line
        time.sleep(len(chunk) / (400 << 20))
        real_write(self, span, chunk)

    spans.SpanWriter._write = slow_disk

    async def main():
        ep = SSHEndpoint(host=host, port=int(port), user=user)
        async with connect(ep, key_path=Path(key), known_hosts=Path(known), resource_id="pod") as r:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            [p] = await pull_checkpoints(r, rdir, Path(ldir), verify=None, stripes=4)
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(before, after, p.bytes_transferred)

    asyncio.run(main())
    """
)


def test_peak_memory_of_a_large_striped_pull_is_bounded(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    size = 384 * MB
    rdir = tmp_path / "r"
    rdir.mkdir()
    with open(rdir / "model.pt", "wb") as fh:  # random, so nothing on the way can compress it
        block = os.urandom(MB)
        for i in range(size // MB):
            fh.write(block[i % 7 :] + block[: i % 7])
    ep = sshd.endpoint
    args = [ep.host, str(ep.port), ep.user, str(state / "id_ed25519"), str(state / "kh.json")]
    child = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, *args, str(rdir), str(tmp_path / "l")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    before_kb, after_kb, sent = map(int, child.stdout.split())
    assert sent == size
    grew_mb = (after_kb - before_kb) / 1024
    # 16 queued chunks of at most 1 MB, the hasher's 4 MB step and asyncssh's window per channel:
    # far below the file's 384 MB, and independent of it.
    assert grew_mb < 96, f"peak RSS grew by {grew_mb:.0f} MB pulling {size // MB} MB"


FULL_DISK_CHILD = textwrap.dedent(
    """
    import asyncio, resource, signal, sys
    from pathlib import Path
    from gpujob.errors import GpujobError
    from gpujob.ssh import spans
    from gpujob.ssh.pull import pull_checkpoints
    from gpujob.ssh.session import connect
    from gpujob.live import SSHEndpoint

    host, port, user, key, known, rdir, ldir, stripes = sys.argv[1:]
    spans.STRIPE_MIN = spans.JOURNAL_EVERY = 1 << 20
    # The disk is "full" at 4 MB: writes past it fail with EFBIG instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))

    async def main():
        ep = SSHEndpoint(host=host, port=int(port), user=user)
        async with connect(ep, key_path=Path(key), known_hosts=Path(known), resource_id="pod") as r:
            await pull_checkpoints(r, rdir, Path(ldir), verify=None, stripes=int(stripes))

    try:
        asyncio.run(main())
    except GpujobError as exc:
        print(exc.render())
        sys.exit(3)
    """
)


@pytest.mark.parametrize("stripes", [1, 3])
def test_a_full_disk_stops_the_pull_with_a_clear_error_and_keeps_what_arrived(
    sshd: SSHD, state: Path, tmp_path: Path, small_stripes: None, stripes: int
) -> None:
    src = make_checkpoint(tmp_path / "r")
    ldir = tmp_path / "l"
    ep = sshd.endpoint
    args = [ep.host, str(ep.port), ep.user, str(state / "id_ed25519"), str(state / "kh.json")]
    child = subprocess.run(
        [sys.executable, "-c", FULL_DISK_CHILD, *args, str(tmp_path / "r"), str(ldir), str(stripes)],
        capture_output=True,
        text=True,
        timeout=120,  # a writer that died used to leave the transfer waiting on a full queue forever
    )
    assert child.returncode == 3, child.stdout + child.stderr
    assert f"cannot write {ldir / 'model.pt.part'}" in child.stdout
    assert "free space on the disk" in child.stdout and "Traceback" not in child.stderr
    assert not (ldir / "model.pt").exists()
    local = LocalDir(ldir)
    try:
        dfd, base = local.parent("model.pt")
        present = spans.present(local, dfd, base, SIZE)
    finally:
        local.close()
    # plain: the .part holds the 4 MB the limit let in; striped: what the record vouches for of it
    assert present == 4 * MB if stripes == 1 else 0 <= present <= 4 * MB
    [p] = asyncio.run(_pull(sshd, state, tmp_path / "r", ldir, stripes=stripes))
    assert p.resumed_from == present and p.bytes_transferred == SIZE - present
    assert sha(ldir / "model.pt") == sha(src)


def test_a_large_checkpoint_rotated_away_before_its_stripes_start_is_vanished_not_an_error(
    sshd: SSHD, state: Path, tmp_path: Path, small_stripes: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpujob.ssh import pull as pull_mod

    src = make_checkpoint(tmp_path / "r")
    newer = tmp_path / "r" / "model-2.pt"
    real = pull_mod.list_remote

    async def list_then_rotate(remote, d, **kw):  # type: ignore[no-untyped-def]
        listing = await real(remote, d, **kw)
        if src.exists():  # the run's keep rotation, right after the first listing
            newer.write_bytes(os.urandom(3 * MB))
            src.unlink()
        return listing

    monkeypatch.setattr(pull_mod, "list_remote", list_then_rotate)
    ldir = tmp_path / "l"

    async def go():  # type: ignore[no-untyped-def]
        async with connect(
            sshd.endpoint, key_path=state / "id_ed25519", known_hosts=state / "kh.json", resource_id="pod"
        ) as remote:
            return await pull_checkpoints(remote, str(tmp_path / "r"), ldir, verify=None, stripes=3)

    got = asyncio.run(go())
    # every stripe's `tail` found no file and `head` still exited 0: the short streams are a rotation
    assert got.vanished == ["model.pt"]
    assert [p.name for p in got] == ["model-2.pt"] and sha(ldir / "model-2.pt") == sha(newer)
    assert sorted(p.name for p in ldir.iterdir()) == ["model-2.pt"]  # no .part, no span record
