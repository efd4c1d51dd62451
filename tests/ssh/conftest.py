"""A real OpenSSH sshd on 127.0.0.1 (one per test session and xdist worker; tests/ssh/ssh_kit.py), plus
helpers."""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from tests.ssh.ssh_kit import sshd, state  # noqa: F401  (fixtures)

pytestmark = pytest.mark.ssh


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
