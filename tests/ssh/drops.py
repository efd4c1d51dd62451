"""A test's own sshd (so killing its connections touches no other test), and a progress callback that
cuts them once a transfer is part-way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpujob.ssh.keys import ensure_project_key
from gpujob.ssh.testing import SSHD, running_sshd


@contextmanager
def own_sshd(tmp_path: Path) -> Iterator[tuple[SSHD, Path]]:
    """A fresh sshd and a state dir whose project key it accepts."""
    state = tmp_path / "state"
    _, line = ensure_project_key(state)
    with running_sshd(tmp_path / "own") as server:
        server.authorize(line)
        yield server, state


class CutAt:
    """Progress callback: kills every connection of `server` once more than `fraction` of the bytes
    moved. `killed` holds how many it killed (empty: it never fired)."""

    def __init__(self, server: SSHD, fraction: float) -> None:
        self.server, self.fraction = server, fraction
        self.killed: list[int] = []

    def __call__(self, done: int, total: int) -> None:
        if not self.killed and done > total * self.fraction:
            self.killed.append(self.server.kill_connections())

    @property
    def fired(self) -> bool:
        return bool(self.killed) and self.killed[0] >= 1
