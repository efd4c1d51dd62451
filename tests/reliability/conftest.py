"""Fixtures for the reliability catalogue tests (helpers live in reliability_kit.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.reliability_kit import SECRET_CANARY, FastClock, RecordingSim, recording_simulator
from tests.ssh.ssh_kit import sshd, state  # noqa: F401  (fixtures: a real sshd, a state dir it accepts)


@pytest.fixture
def rsim(tmp_path: Path) -> Iterator[RecordingSim]:
    with recording_simulator(tmp_path / "sim") as rec:
        yield rec


@pytest.fixture
def env(rsim: RecordingSim, tmp_path: Path) -> dict[str, str]:
    """The simulator's variables (canary API keys), the canary secret, and a private state dir."""
    return {**rsim.env, "HF_TOKEN": SECRET_CANARY, "GPUJOB_STATE_DIR": str(tmp_path / "project" / ".gpujob")}


@pytest.fixture
def fast_clock(monkeypatch: pytest.MonkeyPatch) -> type[FastClock]:
    """Providers built by the CLI sleep on virtual time (retry loops finish at once, sleeps recorded)."""
    FastClock.sleeps = []
    monkeypatch.setattr("gpujob.providers.registry.SystemClock", FastClock)
    return FastClock
