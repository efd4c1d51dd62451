"""The code sync's parallel upload against a real sshd: files split across data channels land whole,
a stream that fails or a connection dropped mid-upload places nothing, the next sync converges, and an
unchanged tree costs one remote command."""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.errors import SSHError
from gpujob.ssh import sync, tarstream
from gpujob.ssh.ignore import LocalEntry, walk
from gpujob.ssh.session import Remote
from gpujob.ssh.sync import MANIFEST, STAGE, SyncStats, sync_tree
from gpujob.ssh.testing import SSHD
from tests.ssh.drops import CutAt, own_sshd
from tests.ssh.ssh_kit import session
from tests.ssh.test_sync import remote_files, same_content


def many_dirs_tree(src: Path) -> set[str]:
    """Files of every size sharing nested directories, so both streams need the same directories."""
    names = set()
    for i in range(120):
        rel = f"pkg{i % 4}/sub{i % 3}/deep{i % 2}/m{i}.py"
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(os.urandom(1000 + 997 * i))
        names.add(rel)
    (src / "pkg0" / "weights.bin").write_bytes(os.urandom(3_000_000))
    (src / "pkg0" / "link.py").symlink_to("sub0/deep0/m0.py")
    return names | {"pkg0/weights.bin", "pkg0/link.py"}


@pytest.fixture
def split_always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tarstream, "SPLIT_MIN", 0)


async def _sync(sshd: SSHD, state: Path, src: Path, dest: Path, **kw: object) -> SyncStats:
    async with session(sshd, state) as remote:
        return await sync_tree(remote, src, str(dest), [], **kw)  # type: ignore[arg-type]


def test_every_stream_names_its_directories_before_their_files(tmp_path: Path) -> None:
    src = tmp_path / "src"
    many_dirs_tree(src)
    entries = sorted(walk(src, []), key=lambda e: e.rel)
    shares = tarstream.split(entries, 2)
    assert len(shares) == 2 and all(shares)
    for share in shares:
        data = b"".join(chunk for chunk, _ in tarstream.tar_blocks(share, []))
        seen: set[str] = set()
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for m in tar:
                parent = m.name.rpartition("/")[0]
                # Another tar may create the same directory meanwhile: only an explicit member of its
                # own makes GNU tar accept that; an implied one makes it fail the file.
                assert not parent or parent in seen, m.name
                if m.isdir():
                    seen.add(m.name)


def test_split_balances_bytes_and_file_count_and_keeps_small_uploads_whole() -> None:
    def entry(rel: str, size: int) -> LocalEntry:
        return LocalEntry(rel, rel, size, 0, 0o644)

    big = [entry("weights.bin", 400 << 20)]
    small = [entry(f"pkg/m{i}.py", 50 << 10) for i in range(2000)]
    shares = tarstream.split(big + small, 2)
    assert sorted(len(s) for s in shares)[0] >= 1
    cost = [sum(e.size + tarstream.FILE_COST for e in s) for s in shares]
    assert max(cost) / min(cost) < 1.05
    assert all(s == sorted(s, key=lambda e: e.rel) for s in shares)
    assert tarstream.split(small[:10], 2) == [small[:10]]  # 500 KB: one stream
    assert tarstream.split([], 2) == []


def test_a_split_upload_lands_whole_and_an_unchanged_tree_is_one_command(
    sshd: SSHD, state: Path, tmp_path: Path, split_always: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dest = tmp_path / "src", tmp_path / "remote" / "code"
    wanted = many_dirs_tree(src)
    commands: list[str] = []
    exchange = Remote.exchange

    async def counted(self: Remote, cmd: str, *a: object, **kw: object) -> object:
        commands.append(cmd)
        return await exchange(self, cmd, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Remote, "exchange", counted)
    seen: list[tuple[int, int]] = []
    st = asyncio.run(_sync(sshd, state, src, dest, progress=lambda d, t: seen.append((d, t))))
    assert st.streams == 2 and len(commands) == 4  # listing, place and two data channels
    assert remote_files(dest) == wanted and all(same_content(src, dest, r) for r in wanted)
    assert not (dest / STAGE).exists()
    counts = [d for d, _ in seen]
    assert counts == sorted(counts) and seen[-1] == (st.bytes_sent, st.bytes_sent)

    commands.clear()
    st = asyncio.run(_sync(sshd, state, src, dest))
    assert (st.files_sent, st.streams, len(commands)) == (0, 0, 1)
    assert not (dest / STAGE).exists()


def test_a_failed_stream_places_nothing_and_the_next_sync_converges(
    sshd: SSHD, state: Path, tmp_path: Path, split_always: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dest = tmp_path / "src", tmp_path / "remote" / "code"
    wanted = many_dirs_tree(src)
    asyncio.run(_sync(sshd, state, src, dest))
    before = (dest / MANIFEST).read_bytes()
    for rel in sorted(wanted - {"pkg0/link.py"})[:40]:
        (src / rel).write_bytes(b"v2 " + (src / rel).read_bytes())
        os.utime(src / rel, (2_000_000_000, 2_000_000_000))
    (src / "pkg3" / "new.py").write_text("new\n")
    real = tarstream.tar_blocks
    calls: list[int] = []

    def second_fails(
        entries: list[LocalEntry], extra: list[tuple[str, bytes]]
    ) -> Iterator[tuple[bytes, int]]:
        calls.append(len(calls))
        for i, block in enumerate(real(entries, extra)):
            if len(calls) == 2 and i == 1:
                raise OSError("disk read failed")
            yield block

    monkeypatch.setattr(sync, "tar_blocks", second_fails)
    with pytest.raises(SSHError, match="disk read failed"):
        asyncio.run(_sync(sshd, state, src, dest))
    assert len(calls) == 2
    # The other stream may have arrived whole, but nothing was placed: old files, old manifest.
    assert not (dest / "pkg3" / "new.py").exists()
    assert (dest / MANIFEST).read_bytes() == before
    assert not any(same_content(src, dest, r) for r in sorted(wanted - {"pkg0/link.py"})[:40])

    monkeypatch.setattr(sync, "tar_blocks", real)
    st = asyncio.run(_sync(sshd, state, src, dest))
    assert st.files_sent == 41
    assert remote_files(dest) == wanted | {"pkg3/new.py"}
    assert all(same_content(src, dest, r) for r in wanted | {"pkg3/new.py"})
    assert not (dest / STAGE).exists()


def test_a_connection_dropped_during_a_split_upload_places_nothing(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "remote" / "code"
    (src / "data").mkdir(parents=True)
    (src / "data" / "big.bin").write_bytes(os.urandom(40 * 1024 * 1024))
    for i in range(300):
        (src / "data" / f"f{i}.bin").write_bytes(os.urandom(30_000))
    with own_sshd(tmp_path) as (server, state):
        cut = CutAt(server, 1 / 3)
        with pytest.raises(SSHError):
            asyncio.run(_sync(server, state, src, dest, progress=cut))
        assert cut.fired
        # Placement waits for every stream: whatever a stream got through stays in the stage.
        placed = {r for r in remote_files(dest) if not r.startswith(STAGE)} if dest.exists() else set()
        assert placed == set()
        st = asyncio.run(_sync(server, state, src, dest))
        assert st.streams == 2 and st.files_sent == 301
        wanted = {"data/big.bin"} | {f"data/f{i}.bin" for i in range(300)}
        assert remote_files(dest) == wanted and all(same_content(src, dest, r) for r in wanted)
        assert not (dest / STAGE).exists()
        assert asyncio.run(_sync(server, state, src, dest)).files_sent == 0
