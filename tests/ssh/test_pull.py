from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from pathlib import Path

import pytest

from gpujob.errors import SSHError
from gpujob.ssh import pull as pull_mod
from gpujob.ssh.pull import ChecksumMismatch
from gpujob.ssh.testing import SSHD
from tests.ssh.drops import CutAt, own_sshd
from tests.ssh.ssh_kit import pull_async

VERIFY = f"{sys.executable} -c \"import sys; sys.exit(0 if open(sys.argv[1],'rb').read(4) == b'CKPT' else 3)\" {{file}}"


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def make_remote(rdir: Path) -> None:
    (rdir / "sub").mkdir(parents=True)
    (rdir / ".hidden").mkdir()
    (rdir / "step-100.pt").write_bytes(b"CKPT" + os.urandom(300_000))
    (rdir / "step-200.pt").write_bytes(b"CKPT" + os.urandom(200_000))
    (rdir / "sub" / "shard 0 $x.bin").write_bytes(b"BAD!" + os.urandom(1000))
    (rdir / "step-300.pt.tmp").write_bytes(b"half written")
    (rdir / ".partial").write_bytes(b"dotfile")
    (rdir / ".hidden" / "x.pt").write_bytes(b"in a dot dir")


def test_pull_verify_and_repull(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    rdir, ldir = tmp_path / "remote ckpt $dir", tmp_path / "local"
    make_remote(rdir)
    seen: list[tuple[int, int]] = []
    got = asyncio.run(
        pull_async(sshd, state, rdir, ldir, verify=VERIFY, progress=lambda d, t: seen.append((d, t)))
    )
    by = {p.name: p for p in got}
    assert set(by) == {"step-100.pt", "step-200.pt", "sub/shard 0 $x.bin"}
    for name, p in by.items():
        assert p.sha256 == p.remote_sha256 == sha(rdir / name) == sha(ldir / name)
        assert p.size == (rdir / name).stat().st_size == p.bytes_transferred
    assert by["step-100.pt"].verified is True
    assert by["sub/shard 0 $x.bin"].verified is False
    assert not list(ldir.rglob("*.part")) and not (ldir / "step-300.pt.tmp").exists()
    total = sum(p.size for p in got)
    assert seen[-1] == (total, total)

    again = asyncio.run(pull_async(sshd, state, rdir, ldir, verify=None))
    assert [p.bytes_transferred for p in again] == [0, 0, 0]
    assert all(p.verified is None and p.sha256 == p.remote_sha256 for p in again)

    # A newer checkpoint under an old name replaces the local copy.
    (rdir / "step-200.pt").write_bytes(b"CKPT new content")
    newer = {p.name: p for p in asyncio.run(pull_async(sshd, state, rdir, ldir, verify=VERIFY))}
    assert (ldir / "step-200.pt").read_bytes() == b"CKPT new content"
    assert newer["step-200.pt"].bytes_transferred == len(b"CKPT new content")


def test_verify_failure_reports_output(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    rdir = tmp_path / "r"
    rdir.mkdir()
    (rdir / "model.pt").write_bytes(b"junk")
    verify = "echo cannot load {file} >&2; exit 4"
    [p] = asyncio.run(pull_async(sshd, state, rdir, tmp_path / "l", verify=verify))
    assert p.verified is False
    assert "cannot load" in p.verify_output and str(tmp_path / "l" / "model.pt") in p.verify_output


def test_checksum_mismatch_is_refused(
    sshd: SSHD, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rdir, ldir = tmp_path / "r", tmp_path / "l"
    rdir.mkdir()
    (rdir / "model.pt").write_bytes(b"CKPT" * 1000)

    real_list = pull_mod.list_remote

    async def lying_list(remote: object, rdir: str, **kw: bool) -> pull_mod.RemoteListing:  # sums lie
        got = await real_list(remote, rdir, **kw)  # type: ignore[arg-type]
        fake = {n: f.model_copy(update={"sha256": "0" * 64}) for n, f in got.files.items()}
        return got.model_copy(update={"files": fake})

    async def lying_state(remote: object, path: str, size: int = 0) -> pull_mod.RemoteFile:
        return pull_mod.RemoteFile(size=4000, sha256="0" * 64)

    monkeypatch.setattr(pull_mod, "list_remote", lying_list)
    monkeypatch.setattr(pull_mod, "remote_state", lying_state)
    with pytest.raises(ChecksumMismatch) as err:
        asyncio.run(pull_async(sshd, state, rdir, ldir, verify=None))
    assert "model.pt" in str(err.value)
    assert not (ldir / "model.pt").exists() and not (ldir / "model.pt.part").exists()


def test_corrupt_partial_is_never_promoted(sshd: SSHD, state: Path, tmp_path: Path) -> None:
    rdir, ldir = tmp_path / "r", tmp_path / "l"
    rdir.mkdir()
    ldir.mkdir()
    data = os.urandom(100_000)
    (rdir / "model.pt").write_bytes(data)
    (ldir / "model.pt.part").write_bytes(b"\0" * 40_000)  # same length as a real prefix, wrong bytes
    [p] = asyncio.run(pull_async(sshd, state, rdir, ldir, verify=None))
    assert (ldir / "model.pt").read_bytes() == data
    assert p.resumed_from == 40_000
    assert p.bytes_transferred == 60_000 + 100_000  # the resumed tail, then one full re-fetch


def test_interrupted_pull_resumes_without_resending(tmp_path: Path) -> None:
    rdir, ldir = tmp_path / "r", tmp_path / "l"
    rdir.mkdir()
    size = 40 * 1024 * 1024
    (rdir / "big.pt").write_bytes(os.urandom(size))
    with own_sshd(tmp_path) as (server, state):
        cut = CutAt(server, 0.4)
        with pytest.raises(SSHError):
            asyncio.run(pull_async(server, state, rdir, ldir, verify=None, progress=cut))
        assert cut.fired
        part = ldir / "big.pt.part"
        arrived = part.stat().st_size
        assert 0 < arrived < size
        assert not (ldir / "big.pt").exists()
        assert (rdir / "big.pt").read_bytes()[:arrived] == part.read_bytes()
        [p] = asyncio.run(pull_async(server, state, rdir, ldir, verify=None))
        assert p.resumed_from == arrived
        assert p.bytes_transferred == size - arrived
        assert p.sha256 == sha(rdir / "big.pt") == sha(ldir / "big.pt")
        assert not part.exists()


def test_a_checkpoint_rotated_away_during_the_pull_is_skipped_and_the_newer_one_pulled(
    sshd: SSHD, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running job keeps its newest N: between our listing and the fetch it deletes the oldest and
    writes a newer one. The pull skips the deleted file (no error) and still gets the new one."""
    rdir, ldir = tmp_path / "remote", tmp_path / "local"
    rdir.mkdir()
    (rdir / "step_1.pt").write_bytes(b"CKPT1")
    (rdir / "step_2.pt").write_bytes(b"CKPT2")
    real = pull_mod.list_remote
    rotated: list[str] = []

    async def list_then_rotate(remote, d, **kw):  # type: ignore[no-untyped-def]
        listing = await real(remote, d, **kw)
        if not rotated:  # the job rotates right after our first listing
            (rdir / "step_1.pt").unlink()
            (rdir / "step_3.pt").write_bytes(b"CKPT3")
            rotated.append(d)
        return listing

    monkeypatch.setattr(pull_mod, "list_remote", list_then_rotate)
    got = asyncio.run(pull_async(sshd, state, rdir, ldir, verify=VERIFY))
    assert rotated and got.vanished == ["step_1.pt"]
    assert sorted(p.name for p in got) == ["step_2.pt", "step_3.pt"]
    assert got.listing is not None and sorted(got.listing.files) == ["step_1.pt", "step_2.pt", "step_3.pt"]
    assert all(p.verified and p.sha256 == sha(rdir / p.name) for p in got)
    assert not list(ldir.glob("step_1.pt*"))  # no partial left of the deleted one


@pytest.mark.parametrize("openssl", ["real", "absent", "wrong"])
def test_the_remote_hasher_is_openssl_only_when_it_gives_the_right_digest(
    tmp_path: Path, openssl: str
) -> None:
    """The remote sha256 comes from `openssl dgst` when it hashes correctly (it is several times
    faster than coreutils' sha256sum), else from sha256sum; either way the digest of the file at rest."""
    import shutil
    import subprocess

    from gpujob.ssh.listing import HASHER

    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("sh", "cut", "sha256sum"):
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    if openssl == "real":
        real = shutil.which("openssl")
        assert real is not None, "the test machine needs openssl"
        (tools / "openssl").symlink_to(real)
    elif openssl == "wrong":  # an openssl that prints something else than the digest
        (tools / "openssl").write_text("#!/bin/sh\necho 'SHA2-256(stdin)= 00'\n")
        (tools / "openssl").chmod(0o755)
    data = tmp_path / "ckpt.bin"
    data.write_bytes(os.urandom(300_000))
    out = subprocess.run(
        [str(tools / "sh"), "-c", f'{HASHER}; printf "%s|" "$H"; $H < "$1" | cut -c1-64', "sh", str(data)],
        env={"PATH": str(tools)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    chosen, _, digest = out.strip().partition("|")
    assert chosen == ("openssl dgst -sha256 -r" if openssl == "real" else "sha256sum")
    assert digest == sha(data)
