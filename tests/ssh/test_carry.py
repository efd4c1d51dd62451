"""Carrying checkpoints onto the disk the next run reads (real sshd): pushing verified local copies,
and moving them on one machine when checkpoint.dir changed. Nothing goes before its copy is read back."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from gpujob.ssh.carry import move_checkpoints, push_checkpoints
from gpujob.ssh.listing import list_remote
from gpujob.ssh.testing import SSHD
from tests.ssh.ssh_kit import session


def run(server: SSHD, state: Path, go):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        async with session(server, state) as remote:
            return await go(remote)

    return asyncio.run(main())


def test_move_reads_every_copy_back_then_removes_the_originals(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    old, new = tmp_path / "ckpt", tmp_path / "ckpt2"
    (old / "sub dir").mkdir(parents=True)
    (old / "step_1.pt").write_bytes(os.urandom(50_000))
    (old / "sub dir" / "shard $x.bin").write_bytes(b"shard")
    os.utime(old / "step_1.pt", (1_700_000_000, 1_700_000_000))
    want = {p.relative_to(old): p.read_bytes() for p in old.rglob("*") if p.is_file()}
    moved = run(sshd, state, lambda r: move_checkpoints(r, str(old), str(new)))
    assert moved is not None and sorted(moved.files) == ["step_1.pt", "sub dir/shard $x.bin"]
    assert {p.relative_to(new): p.read_bytes() for p in new.rglob("*") if p.is_file()} == want
    assert (new / "step_1.pt").stat().st_mtime == 1_700_000_000  # "newest" still means the same
    assert not [p for p in old.rglob("*") if p.is_file()]
    # A dir that already holds checkpoints is never written over; an empty old dir is nothing to do.
    (old / "step_9.pt").write_bytes(b"nine")
    assert run(sshd, state, lambda r: move_checkpoints(r, str(old), str(new))) is None
    assert (old / "step_9.pt").exists() and not (new / "step_9.pt").exists()


def test_push_places_files_whole_and_keeps_mtimes(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    local, remote_dir = tmp_path / "checkpoints", tmp_path / "remote" / "ckpt"
    (local / "a").mkdir(parents=True)
    (local / "step_2.pt").write_bytes(os.urandom(2_000_000))
    (local / "a" / "b.pt").write_bytes(b"b")
    (local / "not-listed.pt").write_bytes(b"an older pull's file")
    os.utime(local / "step_2.pt", (1_700_000_123, 1_700_000_123))
    seen: list[tuple[int, int]] = []

    async def go(r):  # type: ignore[no-untyped-def]
        sent = await push_checkpoints(
            r, local, ["a/b.pt", "step_2.pt"], str(remote_dir), progress=lambda d, t: seen.append((d, t))
        )
        return sent, await list_remote(r, str(remote_dir))

    sent, listing = run(sshd, state, go)
    assert sent == 2_000_001 and seen[-1] == (sent, sent)
    assert sorted(listing.files) == ["a/b.pt", "step_2.pt"]  # exactly the names given
    assert (remote_dir / "step_2.pt").read_bytes() == (local / "step_2.pt").read_bytes()
    assert (remote_dir / "step_2.pt").stat().st_mtime == 1_700_000_123
    assert not list(remote_dir.rglob(".*gpujob-push"))
