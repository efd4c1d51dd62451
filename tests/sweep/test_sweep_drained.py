"""A sweep queue whose every cell has its record pulled has nothing left to run: plan (and so apply
and watch) never starts its stopped machine again, even when a new version of the sweep's files (another
queue's cells changed) gives its job a new digest. Seen in the simulator: a drained queue was started
and launched again, ran nothing, and billed until something stopped it."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path

import pytest

from gpujob.apply.runfacts import read_run_facts
from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.render import render_plan
from gpujob.spec.load import load_specs
from tests.owners import PROJECT, machine
from tests.plan.plan_helpers import NOW, live, pod
from tests.sweep.test_sweep_unit import IMAGE, JOB, write

K = ActionKind


@pytest.fixture(autouse=True)
def _local_state(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in [k for k in os.environ if k.startswith("GPUJOB_STATE")]:
        monkeypatch.delenv(k)


def _record(tmp_path: Path, cell: str, code: int, queue: int) -> None:
    d = tmp_path / "outputs" / cell
    d.mkdir(parents=True, exist_ok=True)
    (d / "gpujob-cell.txt").write_text(f"cell={cell}\nexit={code}\nstarts=1\nversion=vabc\nqueue=q{queue}\n")


def _plan(tmp_path: Path):  # type: ignore[no-untyped-def]
    loaded = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([write(tmp_path, JOB)])]
    pods = [
        pod(machine(f"abl--q{n}"), status="stopped", raw_status="EXITED", gpu_id="NVIDIA GeForce RTX 4090",
            image=IMAGE, spot=True, volume_gb=10)
        for n in (1, 2)
    ]  # fmt: skip
    state = live(*pods)
    facts = asyncio.run(read_run_facts(loaded, state, {}))
    return loaded, build_plan(loaded, live(*pods, runs=facts), now=NOW, env={})


def test_a_queue_with_every_cell_pulled_is_not_started_again_and_the_plan_says_why(tmp_path: Path) -> None:
    loaded = load_specs([write(tmp_path, JOB)])
    q1, q2 = (ls.sweep for ls in loaded)
    for c in q2.cells:  # q2 ran all its cells (one failed: it is never retried either)
        _record(tmp_path, c.name, 1 if c is q2.cells[0] else 0, 2)
    _record(tmp_path, q1.cells[0].name, 0, 1)  # q1 still has cells to run
    _, plan = _plan(tmp_path)
    kinds = {jp.job: [a.kind for a in jp.actions] for jp in plan.jobs}
    assert K.START in kinds["abl--q1"] and K.LAUNCH in kinds["abl--q1"]
    assert kinds["abl--q2"] == [K.NOOP]
    text = render_plan(plan, "text", color=False)
    assert "queue q2 has nothing left to run: every one of its 3 cells has its record pulled" in text, text


def test_a_cell_not_pulled_yet_keeps_its_queue_wanted(tmp_path: Path) -> None:
    loaded = load_specs([write(tmp_path, JOB)])
    q2 = loaded[1].sweep
    for c in q2.cells[:-1]:
        _record(tmp_path, c.name, 0, 2)
    (tmp_path / "outputs" / q2.cells[-1].name).mkdir(parents=True)  # results, but no record: not done
    _, plan = _plan(tmp_path)
    q2_actions = next(jp.actions for jp in plan.jobs if jp.job == "abl--q2")
    assert [a.kind for a in q2_actions] == [K.START, K.LAUNCH]


def test_a_drained_running_queue_stops_and_the_reason_names_the_queue_not_on_finish(tmp_path: Path) -> None:
    """The job file says teardown.on_finish: keep (read as stop for a sweep): 'teardown.on_finish is
    stop' contradicted it."""
    loaded = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([write(tmp_path, JOB)])]
    for c in loaded[1].sweep.cells:
        _record(tmp_path, c.name, 0, 2)
    up = pod(machine("abl--q2"), gpu_id="NVIDIA GeForce RTX 4090", image=IMAGE, spot=True, volume_gb=10)
    facts = asyncio.run(read_run_facts(loaded[1:], live(up), {}, refresh=False))
    plan = build_plan(loaded[1:], live(up, runs=facts), now=NOW, env={})
    (stop,) = plan.all_actions()
    assert stop.kind is K.STOP, stop
    assert "queue q2 of sweep abl drained (its run exited 0): a drained queue's machine stops" in stop.reasons
    assert not any("teardown.on_finish is" in r for r in stop.reasons)


def test_the_sweep_line_prices_cells_only_where_they_run(tmp_path: Path) -> None:
    """A destroy plan once showed 'est. $0.00 in all … 20m $0.00' (the running rate after it is 0)."""
    for text, shown in ((JOB, True), (JOB + "state: absent\n", False), (JOB + "state: stopped\n", False)):
        loaded = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs([write(tmp_path, text)])]
        plan = build_plan(loaded, live(), now=NOW, env={})
        assert [jp.sweep is not None for jp in plan.jobs] == [shown, shown], text
        if shown:
            assert all(jp.sweep.total_usd > 0 for jp in plan.jobs)  # type: ignore[union-attr]
