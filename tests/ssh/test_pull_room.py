"""A pull checks for room before it writes a byte, against a real sshd: a sparse file that claims more
than the remote disk holds, and a pull larger than the local free space (with its margin), are refused
naming both numbers, and nothing is written; a pull that fits goes ahead."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpujob.ssh import space
from gpujob.ssh.testing import SSHD
from tests.ssh.ssh_kit import pull

pytestmark = pytest.mark.ssh


def test_a_sparse_file_larger_than_its_disk_is_refused_before_any_byte(
    sshd: SSHD, state: Path, tmp_path: Path
) -> None:
    rdir, ldir = tmp_path / "remote", tmp_path / "local"
    rdir.mkdir()
    (rdir / "a-step-1.pt").write_bytes(b"real checkpoint")
    disk = shutil.disk_usage(rdir).total
    subprocess.run(["truncate", "-s", str(disk * 4), str(rdir / "b-step-2.pt")], check=True)
    with pytest.raises(space.NoRoom) as refused:
        pull(sshd, state, rdir, ldir)
    text = str(refused.value)
    assert "b-step-2.pt" in text and f"({disk * 4} bytes), more than the remote disk holds" in text
    assert "nothing was written" in (refused.value.hint or "")
    assert not ldir.exists() or list(ldir.iterdir()) == []  # not even the small file before it


def test_a_pull_larger_than_the_local_free_space_is_refused_naming_both(
    sshd: SSHD, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rdir, ldir = tmp_path / "remote", tmp_path / "local"
    rdir.mkdir()
    (rdir / "step-1.pt").write_bytes(os.urandom(200_000))
    real = shutil.disk_usage

    def tight(path: object) -> object:  # this disk with 50 MB free: less than 200 kB + the 64 MiB margin
        u = real(path)  # type: ignore[arg-type]
        return type(u)(u.total, u.total - 50_000_000, 50_000_000)

    monkeypatch.setattr(space.shutil, "disk_usage", tight)
    with pytest.raises(space.NoRoom) as refused:
        pull(sshd, state, rdir, ldir)
    text = str(refused.value)
    assert "pulling 200.0 kB into" in text and "needs 67.3 MB with the margin" in text
    assert "only 50.0 MB is free there" in text
    assert not ldir.exists() or list(ldir.iterdir()) == []

    monkeypatch.setattr(space.shutil, "disk_usage", real)
    [got] = pull(sshd, state, rdir, ldir)
    assert got.size == 200_000 and (ldir / "step-1.pt").stat().st_size == 200_000
