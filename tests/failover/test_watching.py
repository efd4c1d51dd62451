"""Watch's side of a move (gpujob.failover.watching.on_move), one tick at a time, on plans built from
live states made here: what it decides before any machine is touched."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.failover.watching import HEALTHY, HUMAN, on_move
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.spec.load import load_spec, load_specs
from tests.failover.jobs import FALLBACK, job_text

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class _Watcher:
    """What on_move reads of gpujob.watch.loop's Watcher; anything else it touched would raise."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str, str]] = []
        self.clock = SimpleNamespace(now=lambda: NOW)
        self.opt = SimpleNamespace(approvals=set(), rerun="gpujob watch")
        self.env: dict[str, str] = {}  # the env the cap chooser plans with (gpujob.failover.planning)

    def say(self, j: Any, event: str, happened: str, did: str = "", **kw: Any) -> None:
        self.said.append((event, happened, did))


def _tick(ls: Any, live: LiveState, jp: Any) -> tuple[int | None, _Watcher]:
    import asyncio

    w = _Watcher()
    j = SimpleNamespace(loaded=ls, name=ls.spec.name, ledger=SimpleNamespace(recoveries=[]))
    return asyncio.run(on_move(w, j, jp, live)), w


@pytest.fixture(autouse=True)
def _local_state(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [k for k in os.environ if k.startswith("GPUJOB_STATE")]:
        monkeypatch.delenv(k)


def test_spot_retired_with_ask_prints_the_approval_line_and_waits(tmp_path: Path) -> None:
    """RunPod has stock, but spot: true cannot resume there once its spot API is gone (what the live read
    found out): watch asks for the move."""
    p = tmp_path / "job.yaml"
    p.write_text(job_text(mode="ask"))
    ls = dataclasses.replace(load_spec(p), project="testproj")
    pod = LiveResource(platform="runpod", kind="pod", id="p1", name="gpujob-bert--testproj", status="stopped",
                       gpu_id="NVIDIA GeForce RTX 4090", gpu_count=1, attributes={"project": "testproj"})  # fmt: skip
    live = LiveState(read_at=NOW, resources=[pod], quotes=[], spot_unavailable={"runpod": "HTTP 410 Gone"})
    jp = build_plan([ls], live, now=NOW, env={}).jobs[0]
    assert [a.kind for a in jp.actions] == [ActionKind.MOVE]
    code, w = _tick(ls, live, jp)
    assert code == HUMAN, w.said
    (event, happened, did), *_ = w.said
    assert event == "needs-human" and "spot API is gone" in happened
    assert (
        did
        == "to move it there: stop this watch and run `gpujob watch --approve bert.move` (or `gpujob apply`)"
    )
    # Approvals it was started with are kept on the line (a new watch without them would hold those).
    w2 = _Watcher()
    w2.opt.approvals = {"bert.pod.terminate"}
    j = SimpleNamespace(loaded=ls, name="bert", ledger=SimpleNamespace(recoveries=[]))
    asyncio.run(on_move(w2, j, jp, live))
    assert "`gpujob watch --approve bert.pod.terminate --approve bert.move`" in w2.said[0][2], w2.said


@pytest.mark.parametrize("status", ["running", "stopped"])
def test_failback_waits_for_a_fresh_pull_only_while_the_run_goes_on(tmp_path: Path, status: str) -> None:
    """On Paperspace, with RunPod able to serve again and no checkpoint pulled lately: the plan shows
    the move back. A running job is held there (served; the move is not handed to the applier); a job
    whose machine there is stopped (a failed move back parked it) has nothing to wait for."""
    from gpujob.naming import machine_name
    from gpujob.project import with_projects
    from gpujob.project.placement import Placement, write_placement
    from gpujob.state import open_store

    p = tmp_path / "job.yaml"
    p.write_text(job_text(mode="ask", fallback=FALLBACK + "failback: auto\n"))
    write_placement(open_store(p), Placement(job="bert", entry=0, platform="paperspace", since=NOW))
    (ls,) = with_projects(load_specs([p]), create=True)
    assert ls.entry == 0
    machine = LiveResource(platform="paperspace", kind="machine", id="ps1", name=machine_name("bert", ls.project),
                           status=status, gpu_id="A4000", gpu_count=1, region="ny2")  # fmt: skip
    live = LiveState(read_at=NOW, resources=[machine], quotes=[])
    jp = build_plan([ls], live, now=NOW, env={}).jobs[0]
    assert [a.kind for a in jp.actions] == [ActionKind.MOVE], jp.actions
    assert "failback: auto" in jp.actions[0].reasons[0]
    code, w = _tick(ls, live, jp)
    if status == "running":
        assert code == HEALTHY and w.said == []  # not None: watch would hand the move to its applier
    else:
        assert code == HUMAN and [e for e, _, _ in w.said] == ["needs-human"], w.said  # ask: approve it
        assert "runpod can serve again (failback: auto)" in w.said[0][1]
