"""Connect's retry waits go through the injected clock: a refused endpoint is retried with backoff until
the timeout on that clock, and no real time is spent sleeping."""

from __future__ import annotations

import asyncio
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpujob.errors import SSHConnectError
from gpujob.live import SSHEndpoint
from gpujob.ssh.keys import ensure_project_key
from gpujob.ssh.session import connect


class RecordingClock:
    def __init__(self) -> None:
        self._now = datetime(2026, 11, 29, tzinfo=UTC)
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self._now += timedelta(seconds=seconds)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again on exit: connects are refused


def test_refused_endpoint_backs_off_on_the_injected_clock(tmp_path: Path) -> None:
    key, _ = ensure_project_key(tmp_path / ".gpujob")
    clock = RecordingClock()
    endpoint = SSHEndpoint(host="127.0.0.1", port=_closed_port())

    async def attempt() -> None:
        async with connect(
            endpoint,
            key_path=key,
            known_hosts=tmp_path / "known.json",
            resource_id="p1",
            timeout=20,
            clock=clock,
        ):
            pass

    started = time.monotonic()
    with pytest.raises(SSHConnectError, match="within 20s"):
        asyncio.run(attempt())
    assert len(clock.sleeps) >= 5 and clock.sleeps == sorted(clock.sleeps)  # backoff grows
    assert sum(clock.sleeps) <= 20
    assert time.monotonic() - started < 10  # the waits were the fake clock's, not real ones
