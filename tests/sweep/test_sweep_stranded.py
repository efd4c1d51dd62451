"""A cell in transit whose origin never runs again (gpujob.sweep.stranded): it waits a bounded time,
then is stranded, said in the plan and by watch with the way on (`gpujob apply --land <sweep>.<cell>`),
which places it on the queue it was bound for; nothing lands by itself without proof."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpujob.errors import GpujobError
from gpujob.spec.load import load_specs
from gpujob.state import open_store
from gpujob.sweep.assign import note_placed, read_record
from gpujob.sweep.rebalance import STRANDED, WAITS, note_leaving
from gpujob.sweep.stranded import STRANDED_S, land
from gpujob.sweep.transit import settle
from tests.sweep.test_sweep_rebalance import _SSH, _live, _Provider, _states
from tests.sweep.test_sweep_unit import JOB, write

PROJECT = "eus6m65n"


def _leaving_since(tmp_path: Path, since: datetime) -> tuple[list[Any], Path]:
    """A 2-queue sweep placed, then machines 3: two cells marked leaving (q1 -> q3, q2 -> q3) at `since`."""
    tmp_path.mkdir(exist_ok=True)
    job = write(tmp_path, JOB)
    store = open_store(job)
    for ls in load_specs([job]):
        note_placed(store, "abl", ls.sweep.n, [c.name for c in ls.sweep.cells], since)
    three = load_specs([write(tmp_path, JOB.replace("machines: 2", "machines: 3"))])
    for ls in three:
        note_leaving(store, "abl", [m for m in ls.sweep.moves if m.origin == ls.sweep.n], since)
    return [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([job])], job


def _settle(loaded: list[Any], live: Any) -> list[Any]:
    (Path(str(loaded[0].path)).parent / "mnt").mkdir(exist_ok=True)
    return asyncio.run(settle(loaded, live, {"runpod": _Provider()}, ssh=_SSH(loaded[0].path.parent / "mnt")))


def test_a_cell_whose_origin_is_stopped_waits_then_is_stranded_naming_the_way_on(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    fresh, _ = _leaving_since(tmp_path / "a", now - timedelta(minutes=5))
    assert set(_states(_settle(fresh, _live(1, 2, status="stopped"))).values()) == {WAITS}  # within the bound
    old, _ = _leaving_since(tmp_path / "b", now - timedelta(seconds=STRANDED_S + 60))
    got = _settle(old, _live(1, 2, status="stopped"))
    assert set(_states(got).values()) == {STRANDED}, _states(got)
    m = got[0].sweep.moves[0]
    assert f"q{m.origin}'s machine has not run since" in m.why, m.why
    assert f"`gpujob apply --land abl.{m.cell}`, then `gpujob apply`" in m.why, m.why
    # the plan shows it on both queues it touches
    from gpujob.plan.sweep_model import _move
    from gpujob.sweep.plan import sweep_plan

    plan = sweep_plan(got[0], 1.0)
    assert plan is not None
    assert any(_move(c, 1).startswith(f"cell {c.cell} is stranded (q1 -> q3)") for c in plan.moves), (
        plan.moves
    )
    # a terminated origin (no machine at all) says so; a running one never strands anything
    gone = _settle(old, _live())
    assert all("is gone (terminated)" in m.why for m in gone[0].sweep.moves), gone[0].sweep.moves
    up = _settle(old, _live(1, 2))
    assert STRANDED not in set(_states(up).values())


def test_land_places_a_stranded_cell_on_its_new_queue_and_refuses_anything_else(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    loaded, job = _leaving_since(tmp_path, now - timedelta(hours=2))
    cell = loaded[0].sweep.moves[0].cell
    with pytest.raises(GpujobError, match="machine gpujob-abl--q1--eus6m65n is running: it proves by itself"):
        land(loaded, _live(1, 2), [f"abl.{cell}"], now=now)
    with pytest.raises(GpujobError, match="no cell 'nope' of sweep 'abl' is in transit here"):
        land(loaded, _live(), [f"abl.{cell}", "abl.nope"], now=now)
    assert cell in read_record(open_store(job), "abl").leaving  # type: ignore[union-attr]  # nothing changed
    lines = land(loaded, _live(1, 2, status="stopped"), [f"abl.{cell}"], now=now)
    assert lines == [f"abl: cell {cell} placed on q3 (it left q1, whose machine never proved it): `gpujob apply` "
                     "runs it there"], lines  # fmt: skip
    rec = read_record(open_store(job), "abl")
    assert rec is not None and cell not in rec.leaving and rec.cells[cell] == 3
    again = load_specs([job])
    q3 = next(ls for ls in again if ls.sweep.n == 3)
    assert cell in [c.name for c in q3.sweep.cells]


def test_watch_says_cell_stranded_once_with_the_command() -> None:
    from gpujob.sweep.rebalance import Move
    from gpujob.sweep.watching import _say_stranded

    said: list[tuple[str, str, str, str]] = []
    watcher = SimpleNamespace(
        say=lambda j, ev, happened, did, **kw: said.append((ev, happened, did, kw["topic"]))
    )
    move = Move("lr-1e-4", 1, 3, STRANDED, "in transit 2h00m ...")
    queues = [SimpleNamespace(sweep=SimpleNamespace(sweep_job="abl", moves=(move,))) for _ in range(2)]
    _say_stranded(watcher, queues)
    assert said == [("cell-stranded", "sweep abl: cell lr-1e-4 is stranded (q1 -> q3): in transit 2h00m ...",
                     "it runs nowhere until a person runs `gpujob apply --land abl.lr-1e-4` (then `gpujob apply`)",
                     "stranded:abl:lr-1e-4")]  # fmt: skip
