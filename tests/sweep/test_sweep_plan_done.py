"""The plan's sweep line counts what is left: a cell whose record is pulled shows 'done' with no cost,
and the sweep says what the cells not done yet cost beside the whole estimate (appending cells to a
finished sweep once priced every done cell again)."""

from __future__ import annotations

from pathlib import Path

from gpujob.spec.load import load_specs
from gpujob.sweep.plan import sweep_plan
from tests.sweep.test_sweep_unit import JOB, write


def _done(tmp_path: Path, cell: str) -> None:
    d = tmp_path / "outputs" / cell
    d.mkdir(parents=True)
    (d / "gpujob-cell.txt").write_text(f"cell={cell}\nexit=0\nstarts=1\nqueue=q1\n")


def test_done_cells_cost_nothing_more_and_the_sweep_says_what_is_left(tmp_path: Path) -> None:
    loaded = load_specs([write(tmp_path, JOB)])
    q1 = loaded[0].sweep
    fresh = sweep_plan(loaded[0], usd_per_hour=0.6)
    assert fresh is not None and fresh.todo_usd is None and "not done yet" not in fresh.summary
    _done(tmp_path, q1.cells[0].name)
    p = sweep_plan(loaded[0], usd_per_hour=0.6)
    assert p is not None and p.done == 1 and [c.done for c in p.cells] == [True, False, False]
    assert abs(p.total_usd - 1.2) < 1e-9 and p.todo_usd is not None and abs(p.todo_usd - 1.0) < 1e-9
    assert "est. $1.20 in all, $1.00 for the 5 not done yet" in p.summary, p.summary
    assert f"queue q1: 3 cells (1 done), $0.40 to go: {q1.cells[0].name} done, " in p.summary, p.summary
    for c in q1.cells[1:]:
        _done(tmp_path, c.name)
    p = sweep_plan(loaded[0], usd_per_hour=0.6)
    assert p is not None and "queue q1: 3 cells, all done" in p.summary, p.summary
    q2 = sweep_plan(loaded[1], usd_per_hour=0.6)
    assert q2 is not None and "$0.60 for the 3 not done yet; queue q2: 3 cells, $0.60:" in q2.summary


def test_more_machines_than_cells_says_why_fewer_run(tmp_path: Path) -> None:
    loaded = load_specs([write(tmp_path, JOB.replace("machines: 2", "machines: 9"))])
    assert len(loaded) == 6
    p = sweep_plan(loaded[0], usd_per_hour=0.6)
    assert (
        p is not None
        and "6 cells on 6 machines (sweep.machines is 9: a machine runs at least one cell)" in p.summary
    )
