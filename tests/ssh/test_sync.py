from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from gpujob.errors import SSHError
from gpujob.ssh.sync import MANIFEST, STAGE, SyncStats, sync_tree
from gpujob.ssh.testing import SSHD
from tests.ssh.drops import CutAt, own_sshd
from tests.ssh.ssh_kit import session


def make_tree(src: Path) -> None:
    (src / "pkg" / "sub").mkdir(parents=True)
    (src / "data").mkdir()
    (src / "build").mkdir()
    (src / ".gpujob").mkdir()
    (src / "weird dir $x").mkdir()
    (src / "train.py").write_text("print('train')\n")
    (src / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(src / "run.sh", 0o755)
    for i in range(10):
        (src / "pkg" / f"m{i}.py").write_text(f"x = {i}\n" * (i + 1))
    (src / "pkg" / "sub" / "deep.txt").write_text("deep\n")
    (src / "debug.log").write_text("ignored by .gitignore\n")
    (src / "keep.log").write_text("re-included by negation\n")
    (src / "build" / "out.o").write_bytes(b"\0" * 100)
    (src / "data" / "a.csv").write_text("ignored by nested .gitignore\n")
    (src / "data" / "b.json").write_text("{}\n")
    (src / "model.ckpt").write_bytes(b"spec exclude")
    (src / ".env").write_text("TOKEN=never-uploaded\n")
    (src / ".gpujob" / "id_ed25519").write_text("private key never uploaded\n")
    (src / "weird dir $x" / "it's; `odd`.txt").write_text("odd names survive\n")
    (src / ".gitignore").write_text("*.log\n!keep.log\nbuild/\n")
    (src / "data" / ".gitignore").write_text("*.csv\n")
    (src / "link.py").symlink_to("train.py")


EXPECTED = {
    "train.py",
    "run.sh",
    *(f"pkg/m{i}.py" for i in range(10)),
    "pkg/sub/deep.txt",
    "keep.log",
    "data/b.json",
    "data/.gitignore",
    ".gitignore",
    "weird dir $x/it's; `odd`.txt",
    "link.py",
}


def remote_files(dest: Path) -> set[str]:
    out = set()
    for root, _dirs, files in os.walk(dest):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), dest)
            if rel != MANIFEST:
                out.add(rel)
    return out


def same_content(src: Path, dest: Path, rel: str) -> bool:
    a, b = src / rel, dest / rel
    if a.is_symlink():
        return b.is_symlink() and os.readlink(a) == os.readlink(b)
    return a.read_bytes() == b.read_bytes() and int(a.stat().st_mtime) == int(b.stat().st_mtime)


async def _sync(
    sshd: SSHD, state: Path, src: Path, dest: Path, exclude: list[str], **kw: object
) -> SyncStats:
    async with session(sshd, state) as remote:
        return await sync_tree(remote, src, str(dest), exclude, **kw)  # type: ignore[arg-type]


def test_sync_first_noop_incremental_delete(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "remote" / "code"
    make_tree(src)
    seen: list[tuple[int, int]] = []
    st = asyncio.run(_sync(sshd, state, src, dest, ["*.ckpt"], progress=lambda d, t: seen.append((d, t))))
    assert remote_files(dest) == EXPECTED
    assert all(same_content(src, dest, rel) for rel in EXPECTED)
    assert os.stat(dest / "run.sh").st_mode & 0o777 == 0o755
    assert st.files_sent == len(EXPECTED)
    assert st.bytes_sent == sum((src / r).stat().st_size for r in EXPECTED if not (src / r).is_symlink())
    assert seen and seen[-1] == (st.bytes_sent, st.bytes_sent)
    assert not (dest / STAGE).exists()

    # Nothing changed: nothing sent, nothing deleted.
    st = asyncio.run(_sync(sshd, state, src, dest, ["*.ckpt"]))
    assert (st.files_sent, st.bytes_sent, st.files_deleted) == (0, 0, 0)

    # Touch three files (one with new content): exactly those are sent.
    later = time.time() + 5
    touched = ["pkg/m1.py", "pkg/sub/deep.txt", "weird dir $x/it's; `odd`.txt"]
    (src / "pkg/m1.py").write_text("changed = True\n")
    for rel in touched:
        os.utime(src / rel, (later, later))
    st = asyncio.run(_sync(sshd, state, src, dest, ["*.ckpt"]))
    assert st.files_sent == 3
    assert st.bytes_sent == sum((src / r).stat().st_size for r in touched)
    assert all(same_content(src, dest, rel) for rel in EXPECTED)

    # A file deleted locally is deleted remotely; a file the run wrote into dest is left alone.
    (dest / "outputs").mkdir()
    (dest / "outputs" / "result.txt").write_text("written by the run\n")
    (src / "pkg" / "m9.py").unlink()
    st = asyncio.run(_sync(sshd, state, src, dest, ["*.ckpt"]))
    assert (st.files_sent, st.files_deleted) == (0, 1)
    assert not (dest / "pkg" / "m9.py").exists()
    assert (dest / "outputs" / "result.txt").read_text() == "written by the run\n"

    # A file changed remotely (or lost with a fresh pod) is repaired on the next sync.
    (dest / "train.py").write_text("tampered\n")
    st = asyncio.run(_sync(sshd, state, src, dest, ["*.ckpt"]))
    assert st.files_sent == 1 and same_content(src, dest, "train.py")


def test_sync_dropped_connection_then_resync_converges(tmp_path: Path) -> None:
    src, dest = tmp_path / "src", tmp_path / "remote" / "code"
    make_tree(src)
    (src / "big.bin").write_bytes(os.urandom(48 * 1024 * 1024))
    (src / "zz").mkdir()
    for i in range(50):
        (src / "zz" / f"after{i}.bin").write_bytes(os.urandom(20_000))
    with own_sshd(tmp_path) as (server, state):
        cut = CutAt(server, 1 / 3)
        with pytest.raises(SSHError):
            asyncio.run(_sync(server, state, src, dest, [], progress=cut))
        assert cut.fired
        # Whatever arrived before the drop: no file under its real name is partial.
        for rel in remote_files(dest) if dest.exists() else set():
            if not rel.startswith(STAGE):
                assert same_content(src, dest, rel), rel
        st = asyncio.run(_sync(server, state, src, dest, []))
        assert st.files_sent >= 1
        wanted = {r for r in EXPECTED | {"big.bin"} | {f"zz/after{i}.bin" for i in range(50)}} | {
            "model.ckpt"
        }
        assert remote_files(dest) == wanted
        assert all(same_content(src, dest, rel) for rel in wanted)
        assert not (dest / STAGE).exists()
        st = asyncio.run(_sync(server, state, src, dest, []))
        assert st.files_sent == 0


@pytest.mark.parametrize(
    "manifest",
    ['["not", "an", "object"]', '{"files": "nope"}', '{"files": {"a.py": "x"}}', "{not json", "null"],
)
def test_malformed_remote_manifest_means_a_full_sync_with_a_warning(
    sshd: SSHD, state: Path, tmp_path: Path, manifest: str
) -> None:
    src, dest = tmp_path / "src", tmp_path / "remote" / "code"
    make_tree(src)
    first = asyncio.run(_sync(sshd, state, src, dest, ["*.ckpt"]))
    assert first.warnings == []
    (dest / MANIFEST).write_text(manifest)
    (dest / "outputs.txt").write_text("written by the run, never deleted on a broken manifest's word\n")
    st = asyncio.run(_sync(sshd, state, src, dest, ["*.ckpt"]))
    # Nothing about the remote tree is trusted: every file is sent again, nothing deleted.
    assert (st.files_sent, st.files_deleted) == (len(EXPECTED), 0)
    assert len(st.warnings) == 1 and "not a gpujob sync manifest" in st.warnings[0]
    assert (dest / "outputs.txt").exists() and all(same_content(src, dest, r) for r in EXPECTED)
    # The fresh manifest is a good one again: the next sync is a no-op without a warning.
    again = asyncio.run(_sync(sshd, state, src, dest, ["*.ckpt"]))
    assert (again.files_sent, again.files_deleted, again.warnings) == (0, 0, [])


@pytest.mark.parametrize("change", ["deleted", "became a directory"])
def test_a_file_that_changes_between_the_walk_and_its_read(
    sshd: SSHD, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """Deleted after the walk: not sent, the sync goes on and the next one converges. Unreadable
    (here: replaced by a directory): the sync stops naming the file, not a lost connection, and
    nothing is placed."""
    from gpujob.errors import GpujobError
    from gpujob.ssh import sync as sync_mod

    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    (src / "a.py").write_text("a\n")
    (src / "b.py").write_text("b\n")
    real_walk = sync_mod.walk

    def walk_then_change(root, exclude):  # type: ignore[no-untyped-def]
        entries = list(real_walk(root, exclude))
        (src / "b.py").unlink()
        if change == "became a directory":
            (src / "b.py").mkdir()
        return entries

    monkeypatch.setattr(sync_mod, "walk", walk_then_change)
    if change == "deleted":
        stats = asyncio.run(_sync(sshd, state, src, dest, []))
        assert remote_files(dest) == {"a.py"} and isinstance(stats, SyncStats)
        monkeypatch.setattr(sync_mod, "walk", real_walk)
        again = asyncio.run(_sync(sshd, state, src, dest, []))
        assert remote_files(dest) == {"a.py"} and again.files_sent == 0
        return
    with pytest.raises(GpujobError) as err:
        asyncio.run(_sync(sshd, state, src, dest, []))
    assert not isinstance(err.value, SSHError)
    assert f"cannot read {src / 'b.py'}" in str(err.value) and "run.sync.exclude" in (err.value.hint or "")
    assert not (dest / "a.py").exists()  # nothing placed
