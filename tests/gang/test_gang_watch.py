"""Node loss under watch (gpujob.gang): the living nodes are stopped through the quiesce at once, the
event names the lost node and the step the gang restarts from, a gang that stays broken is parked."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.apply.sshapi import SSHApi
from gpujob.gang.capability import GangWatch
from gpujob.gang.loss import WHOLE_TICKS, restart_step
from gpujob.live import LiveResource

from .specs import gang_spec, live_nodes


def _watcher(tmp_path: Path, stopped: list[str]) -> Any:
    @contextlib.asynccontextmanager
    async def connect(endpoint: Any, **kw: Any):
        yield kw["resource_id"]

    async def quiesce_run(remote: str, spec: Any, *, grace_s: float) -> Any:
        stopped.append(remote)
        return SimpleNamespace(state="stopped")

    api = SSHApi(
        ensure_project_key=lambda d: (tmp_path / "key", "pub"),
        connect=connect,
        sync_tree=None,  # type: ignore[arg-type]
        pull_checkpoints=None,  # type: ignore[arg-type]
        launch_run=None,  # type: ignore[arg-type]
        run_status=None,  # type: ignore[arg-type]
        quiesce_run=quiesce_run,
    )
    events: list[tuple[str, str, str]] = []

    async def park_job(j: Any, jp: Any, machine: Any, live: Any, reason: str) -> int:
        events.append(("parked", reason, ""))
        return 3

    return SimpleNamespace(
        park_job=park_job,
        spy=SimpleNamespace(api=api),
        providers={"runpod": None},
        say=lambda j, kind, happened, did="", **kw: events.append((kind, happened, did)),
        events=events,
    )


def test_a_lost_node_stops_the_others_once_and_a_gang_that_stays_broken_is_parked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes = live_nodes(2)
    nodes[1] = nodes[1].model_copy(update={"status": "stopped", "raw_status": "EXITED"})
    cluster = LiveResource(
        platform="runpod", kind="cluster", id="c1", name="gpujob-gang", status="stopped", nodes=nodes
    )
    monkeypatch.setattr("gpujob.watch.jobs.job_machine", lambda live, loaded: cluster)
    record = SimpleNamespace(remote_files={"step-4.pt": "a", "step-5.pt": "b", "node-1/step-4.pt": "c"})
    monkeypatch.setattr("gpujob.plan.records.load_pull_record", lambda state, job: record)
    stopped: list[str] = []
    w = _watcher(tmp_path, stopped)
    j = SimpleNamespace(
        name="gang",
        loaded=SimpleNamespace(spec=gang_spec(writers="all")),
        state_dir=tmp_path,
        path=tmp_path / "job.yaml",
    )
    hooks = GangWatch()
    assert asyncio.run(hooks.judge(w, j, None, None)) is None  # the plan goes on: it restarts the node
    assert stopped == ["pod0"]
    [(kind, happened, did)] = w.events
    assert kind == "node-lost" and "node 1 (gpujob-gang-1) is EXITED: the gang cannot go on" in happened
    assert "node 0: run stopped" in did and "restarts whole from step 4" in did  # node 1 has no step 5
    asyncio.run(hooks.judge(w, j, None, None))  # the same loss next tick: not stopped or said again
    assert stopped == ["pod0"] and len(w.events) == 1
    for _ in range(WHOLE_TICKS - 2):
        asyncio.run(hooks.judge(w, j, None, None))
    why = asyncio.run(hooks.park_reason(w, j, cluster, None))
    assert why is not None and "could not be made whole" in why
    # Parked by the judge itself: a tick that keeps restarting the nodes never reaches park_reason.
    assert w.events[-1][0] == "parked" and "could not be made whole" in w.events[-1][1]


def test_a_whole_gang_or_one_machine_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = LiveResource(
        platform="runpod", kind="cluster", id="c1", name="g", status="running", nodes=live_nodes(2)
    )
    monkeypatch.setattr("gpujob.watch.jobs.job_machine", lambda live, loaded: cluster)
    stopped: list[str] = []
    w = _watcher(tmp_path, stopped)
    for spec in (gang_spec(), gang_spec(nodes=1)):
        j = SimpleNamespace(name="g", loaded=SimpleNamespace(spec=spec), state_dir=tmp_path, path=tmp_path)
        assert asyncio.run(GangWatch().judge(w, j, None, None)) is None
    assert stopped == [] and w.events == []
    assert restart_step(None, "rank0", 2) is None
