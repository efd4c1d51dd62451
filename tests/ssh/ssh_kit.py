"""The SSH tests' shared setup: a real OpenSSH sshd on 127.0.0.1, a project state dir whose key it
accepts, a connection to it, and a checkpoint pull through that connection. tests/ssh/conftest.py
serves the fixtures to tests/ssh; a test elsewhere imports them from here."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from gpujob.ssh.keys import ensure_project_key
from gpujob.ssh.pull import PullOutcome, pull_checkpoints
from gpujob.ssh.session import Remote, connect
from gpujob.ssh.testing import SSHD, running_sshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHD]:
    if not Path("/usr/sbin/sshd").exists():
        pytest.fail("these tests need /usr/sbin/sshd (openssh-server; make install brings it)")
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def state(tmp_path: Path, sshd: SSHD) -> Path:
    """A project state dir whose generated key is authorised on the session sshd."""
    d = tmp_path / "state"
    _, line = ensure_project_key(d)
    sshd.authorize(line)
    return d


def session(server: SSHD, state: Path, resource_id: str = "pod") -> AbstractAsyncContextManager[Remote]:
    """A connection to `server` with the project key in `state` (host key pinned beside it)."""
    return connect(
        server.endpoint, key_path=state / "id_ed25519", known_hosts=state / "kh.json", resource_id=resource_id
    )


async def pull_async(
    server: SSHD, state: Path, rdir: Path, ldir: Path, *, verify: str | None = None, **kw: Any
) -> PullOutcome:
    """`rdir` on the sshd pulled into `ldir` (no verify command unless given; pull_checkpoints'
    other keywords pass through)."""
    async with session(server, state) as remote:
        return await pull_checkpoints(remote, str(rdir), ldir, verify=verify, **kw)


def pull(server: SSHD, state: Path, rdir: Path, ldir: Path, **kw: Any) -> PullOutcome:
    return asyncio.run(pull_async(server, state, rdir, ldir, **kw))
