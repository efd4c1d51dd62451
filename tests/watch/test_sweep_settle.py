"""Watch and a sweep's queues: the rebalance's settle expands the whole sweep again each tick, and a
queue this watch already finished (its cells pulled, its machine stopped) must stay finished."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.apply.sshapi import SSHApi
from gpujob.live import LiveState
from gpujob.state.local import LocalStore
from gpujob.watch.jobs import Options
from gpujob.watch.loop import Watcher

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_queue_watch_finished_is_not_reconciled_again_when_settle_expands_the_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in the simulator: q2 drained and was stopped; a cell of q1 then stayed on q1 (a new version
    of every queue file on the shared volume), settle returned q2 again, the tick started its pod,
    and watch ended once q1 finished with q2's pod running and billing."""
    store = LocalStore(tmp_path / "state")
    job = tmp_path / "job.yaml"
    clock = SimpleNamespace(now=lambda: NOW)
    w = Watcher(
        [(job, "abl--q1", store), (job, "abl--q2", store)],
        {},
        clock=clock,  # type: ignore[arg-type]
        ssh=SSHApi.default(),
        env={},
        emit=lambda event, sdir: None,
        options=Options(),
    )
    w.jobs["abl--q2"].done = True
    queues = [SimpleNamespace(path=job, spec=SimpleNamespace(name=f"abl--q{n}")) for n in (1, 2)]

    async def settle(loaded: Any, live: Any, providers: Any, **kw: Any) -> list[Any]:
        return queues  # every queue of the sweep, as gpujob.sweep.transit.settle expands it

    monkeypatch.setattr("gpujob.sweep.transit.settle", settle)
    got = asyncio.run(w._settle([queues[0]], LiveState(read_at=NOW, resources=[], quotes=[])))
    assert [ls.spec.name for ls in got] == ["abl--q1"]
    assert w.jobs["abl--q1"].loaded is queues[0]
    assert w.jobs["abl--q2"].loaded is None  # not handed the new expansion either
