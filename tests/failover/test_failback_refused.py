"""A failback home refused (gpujob.failover.failback): the job runs on where it is, the next failback
waits RETRY_S, after TRIES refusals in a row it is held for a person (`gpujob apply --adopt`), watch
says so in a failback-refused event, and a failed move stops what it started at home."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.failover.failback import RETRY_S, TRIES, stop_half_started
from gpujob.live import LiveResource, LiveState
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.project.placement import Move, Placement, read_placement, write_placement
from gpujob.spec.load import load_specs
from tests.failover.jobs import FALLBACK, job_text

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
K = ActionKind


@pytest.fixture(autouse=True)
def _local_state(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [k for k in os.environ if k.startswith("GPUJOB_STATE")]:
        monkeypatch.delenv(k)


def _refused(at: datetime) -> Move:
    return Move(
        at=at, from_entry=0, to_entry=-1, from_platform="paperspace", to_platform="runpod",
        why="runpod can serve again (failback: auto)", outcome="failed: no capacity on any of 2 candidate(s)",
    )  # fmt: skip


def _job(tmp_path: Path, moves: list[Move], status: str = "stopped") -> tuple[Any, LiveState]:
    from gpujob.naming import machine_name
    from gpujob.project import with_projects
    from gpujob.state import open_store

    p = tmp_path / "job.yaml"
    p.write_text(job_text(mode="auto", fallback=FALLBACK + "failback: auto\n"))
    write_placement(
        open_store(p), Placement(job="bert", entry=0, platform="paperspace", since=NOW, moves=moves)
    )
    (ls,) = with_projects(load_specs([p]), create=True)
    machine = LiveResource(platform="paperspace", kind="machine", id="ps1", name=machine_name("bert", ls.project),
                           status=status, gpu_id="A4000", gpu_count=1, region="ny2")  # fmt: skip
    return ls, LiveState(read_at=NOW, resources=[machine], quotes=[])


def _failover(jp: Any) -> Any:
    return next(f for f in jp.findings if f.code == "failover")


def test_a_refused_failback_waits_and_the_job_starts_again_where_it_is(tmp_path: Path) -> None:
    """Home refused the start two minutes ago: no move home is planned; the stopped machine on the
    fallback is started and the run launched there, the finding says when the next failback is tried."""
    ls, live = _job(tmp_path, [_refused(NOW - timedelta(minutes=2))])
    jp = build_plan([ls], live, now=NOW, env={}).jobs[0]
    kinds = [a.kind for a in jp.actions]
    assert K.MOVE not in kinds and K.START in kinds, jp.actions
    f = _failover(jp)
    assert f.severity == "info", f
    assert f.summary.startswith("runs on paperspace (fallback[0]), no move home: failback waits: runpod refused "
                                "the start 1 time(s) in a row (last at 11:58 UTC: no capacity on any of 2"), f  # fmt: skip
    assert "tried again after 12:08 UTC (1 of 3 before it is held)" in f.summary, f


def test_after_the_wait_the_failback_is_tried_again(tmp_path: Path) -> None:
    ls, live = _job(tmp_path, [_refused(NOW - timedelta(seconds=RETRY_S + 1))])
    jp = build_plan([ls], live, now=NOW, env={}).jobs[0]
    assert [a.kind for a in jp.actions] == [K.MOVE], jp.actions
    assert "failback: auto" in jp.actions[0].reasons[0]


def test_tries_refusals_in_a_row_hold_the_failback_until_adopt_clears_it(tmp_path: Path) -> None:
    from gpujob.failover.adopt import adopt
    from gpujob.state import open_store

    long_ago = NOW - timedelta(hours=5)
    ls, live = _job(
        tmp_path, [_refused(long_ago + timedelta(minutes=11 * i)) for i in range(TRIES)], "running"
    )
    jp = build_plan([ls], live, now=NOW, env={}).jobs[0]
    assert K.MOVE not in [a.kind for a in jp.actions], jp.actions
    f = _failover(jp)
    assert f.severity == "warning", f
    assert "failback held: runpod refused the start 3 time(s) in a row" in f.summary, f
    assert f.fix == "`gpujob apply --adopt paperspace` (or set failback: never to stay)", f
    # The way on: adopting where it runs ends the row of refusals; the next plan moves it home again.
    lines = adopt([ls], live, "paperspace", now=NOW)
    assert "the failback hold is cleared (3 refusal(s) home)" in lines[0], lines
    assert read_placement(open_store(ls.path), "bert").moves[-1].outcome == "adopted"  # type: ignore[union-attr]
    (ls2,) = _reload(ls)
    jp = build_plan([ls2], live, now=NOW, env={}).jobs[0]
    assert [a.kind for a in jp.actions] == [K.MOVE], jp.actions


def _reload(ls: Any) -> list[Any]:
    from gpujob.project import with_projects

    return with_projects(load_specs([ls.path]), create=True)


def test_a_failed_move_stops_what_it_started_where_it_failed(tmp_path: Path) -> None:
    """No half-started home billing: a pod the failed move created (running or starting) is stopped; one
    that ran before the move, or a stopped one, is left as it is."""
    from gpujob.naming import machine_name

    ls, _ = _job(tmp_path, [])
    name = machine_name("bert", ls.project)
    pods = [
        LiveResource(
            platform="runpod",
            kind="pod",
            id=i,
            name=name,
            status=s,
            gpu_id="NVIDIA GeForce RTX 4090",
            gpu_count=1,
            attributes={"project": ls.project},
        )
        for i, s in [("new", "running"), ("booting", "pending"), ("old", "running"), ("off", "stopped")]
    ]
    live = LiveState(read_at=NOW, resources=pods, quotes=[])
    stopped: list[str] = []
    said: list[str] = []

    async def stop(r: LiveResource) -> None:  # the one stop, gpujob.apply.quiesce.stop, in move.py
        stopped.append(r.id)

    done = asyncio.run(stop_half_started(live, "bert", ls.project, "runpod", ["old"], stop, said.append))
    assert stopped == ["new", "booting"], stopped
    assert done == said and "which the failed move had started" in said[0], said


class _Watcher:
    def __init__(self) -> None:
        self.said: list[tuple[str, str, str]] = []
        self.clock = SimpleNamespace(now=lambda: NOW)
        self.opt = SimpleNamespace(approvals=set(), rerun="gpujob watch")
        self.env: dict[str, str] = {}
        self.acted = False
        self.pulls = SimpleNamespace(settle=_nothing)
        self.probe = SimpleNamespace(drop=_nothing)
        self.providers: dict[str, Any] = {}
        self.spy = SimpleNamespace(api=None)

    def say(self, j: Any, event: str, happened: str, did: str = "", **kw: Any) -> None:
        self.said.append((event, happened, did))


async def _nothing(*_a: Any) -> None:
    return None


def test_watch_says_failback_refused_and_the_job_runs_on_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Watch's move home fails (home refuses the start): a failback-refused event names the refusal and
    what follows; the next tick hands the job back to watch's usual recovery there (None), no retry."""
    from gpujob.failover import move as move_mod
    from gpujob.failover.move import MoveOutcome
    from gpujob.failover.watching import ERROR, on_move
    from gpujob.state import open_store

    ls, live = _job(tmp_path, [], "stopped")

    async def refused(ls: Any, choice: Any, live: Any, providers: Any, **kw: Any) -> MoveOutcome:
        rec = read_placement(open_store(ls.path), "bert")
        assert rec is not None
        write_placement(open_store(ls.path), rec.model_copy(update={"moves": [*rec.moves, _refused(NOW)]}))
        return MoveOutcome(False, "move failed: no capacity; the job stays parked on paperspace (fallback[0])",
                           "paperspace (fallback[0])", "runpod", choice.why)  # fmt: skip

    monkeypatch.setattr(move_mod, "move_job", refused)
    jp = build_plan([ls], live, now=NOW, env={}).jobs[0]
    assert [a.kind for a in jp.actions] == [K.MOVE]
    w = _Watcher()
    ledger = SimpleNamespace(recoveries=[], recovered=lambda *a: None)
    j = SimpleNamespace(loaded=ls, name="bert", ledger=ledger)
    assert asyncio.run(on_move(w, j, jp, live)) == ERROR
    event, happened, did = w.said[-1]
    assert event == "failback-refused", w.said
    assert happened.startswith(
        "runpod refused the start (no capacity on any of 2 candidate(s)): failback 1 of 3"
    )
    assert did.startswith("the job runs on paperspace (fallback[0]): its machine there is started again"), did
    assert "tried again after 12:10 UTC" in did, did
    # The next tick: the plan has no move home, and watch recovers the job where it is.
    (ls2,) = _reload(ls)
    jp2 = build_plan([ls2], live, now=NOW, env={}).jobs[0]
    assert K.MOVE not in [a.kind for a in jp2.actions]
    w2 = _Watcher()
    j2 = SimpleNamespace(loaded=ls2, name="bert", ledger=ledger)
    assert asyncio.run(on_move(w2, j2, jp2, live)) is None
    assert w2.said == []
