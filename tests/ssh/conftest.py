"""A real OpenSSH sshd on 127.0.0.1 (one per test session and xdist worker), plus helpers."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpujob.ssh.keys import ensure_project_key
from gpujob.ssh.testing import SSHD, running_sshd

pytestmark = pytest.mark.ssh


def _require_sshd() -> None:
    if not Path("/usr/sbin/sshd").exists():
        pytest.fail("tests/ssh need /usr/sbin/sshd (openssh-server; make install brings it)")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHD]:
    _require_sshd()
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def state(tmp_path: Path, sshd: SSHD) -> Path:
    """A project state dir whose generated key is authorised on the session sshd."""
    d = tmp_path / "state"
    _, line = ensure_project_key(d)
    sshd.authorize(line)
    return d


@pytest.fixture
def no_tmux_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH holding every usual command except tmux and apt-get (a minimal image)."""
    farm = tmp_path_factory.mktemp("notmux") / "bin"
    farm.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if name in ("tmux", "apt-get", "apt") or (farm / name).exists():
                continue
            src = os.path.join(d, name)
            if os.path.isfile(src) and os.access(src, os.X_OK):
                (farm / name).symlink_to(src)
    assert shutil.which("tmux", path=str(farm)) is None
    return str(farm)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)
