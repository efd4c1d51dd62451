"""The moves settle keeps (gpujob.sweep.transit): each one read on its origin, and under watch none onto
a queue whose machine exists. Seen in the simulator (tests/e2e/test_sweep_change.py, more machines and
cells after some cells finished): a finished cell not pulled yet was proposed in place of a started one
without being read, weighed on the new queue as if it would land there, and a later plan moved the new
queue's own last cell onto a queue that drained before it could land: that cell never ran."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from gpujob.spec.load import load_specs
from gpujob.state import open_store
from gpujob.sweep.assign import note_placed
from gpujob.sweep.rebalance import LEAVES
from gpujob.sweep.transit import settle
from tests.sweep.test_sweep_rebalance import _SSH, _live, _Provider
from tests.sweep.test_sweep_unit import JOB, write


def _loaded(tmp_path: Path, placed: dict[int, list[int]] | None, text: str) -> tuple[list, Path]:  # type: ignore[type-arg]
    """The sweep placed as `placed` says (queue -> cell indexes; None: as its own split), then loaded
    from `text`, with the project the live pods carry and a project key the fake SSH layer never reads."""
    job = write(tmp_path, JOB)
    store = open_store(job)
    first = load_specs([job])
    names = [c.name for c in first[0].sweep.all_cells]
    for ls in first:
        cells = [c.name for c in ls.sweep.cells] if placed is None else [names[i] for i in placed[ls.sweep.n]]
        note_placed(store, "abl", ls.sweep.n, cells)
    if placed is not None:
        for n in set(placed) - {ls.sweep.n for ls in first}:
            note_placed(store, "abl", n, [names[i] for i in placed[n]])
    key = store.root / "id_ed25519"  # type: ignore[attr-defined]
    key.write_text("not a key\n")
    key.chmod(0o600)
    loaded = [dataclasses.replace(ls, project="eus6m65n") for ls in load_specs([write(tmp_path, text)])]
    return loaded, job


def test_the_cell_proposed_in_place_of_a_started_one_is_read_too_and_a_finished_one_never_leaves(
    tmp_path: Path,
) -> None:
    loaded, _ = _loaded(tmp_path, None, JOB.replace("machines: 2", "machines: 3"))
    q1, q2 = ([c.name for c in ls.sweep.cells] + list(ls.sweep.leaving) for ls in loaded[:2])
    assert {m.cell for m in loaded[0].sweep.moves if m.state == LEAVES} == {q1[-1], q2[-1]}
    state = tmp_path / "mnt" / ".gpujob" / "abl.sweep" / "state"
    state.mkdir(parents=True)
    # each queue runs its last cell; the one before it finished (its record not pulled: no watch ran)
    for q in (q1, q2):
        (state / f"{q[-1]}.starts").write_text("1\n")
        (state / f"{q[-2]}.starts").write_text("1\n")
        (state / f"{q[-2]}.exit").write_text("0\n")
    ssh = _SSH(tmp_path / "mnt")
    got = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=ssh))
    assert [m for m in got[0].sweep.moves if m.state == LEAVES] == [], got[0].sweep.moves
    assert ssh.commands == 4  # one read per origin for each round of proposals
    by_n = {ls.sweep.n: ls.sweep for ls in got}
    assert [c.name for c in by_n[1].cells] == q1 and [c.name for c in by_n[2].cells] == q2
    assert set(by_n[1].started) == set(q1[-2:]) and set(by_n[2].started) == set(q2[-2:])


def test_watch_moves_no_cell_onto_a_queue_whose_machine_exists(tmp_path: Path) -> None:
    # q1 holds one cell, q2 five: plan and apply move q2's last cells onto q1
    loaded, _ = _loaded(tmp_path, {1: [0], 2: [1, 2, 3, 4, 5]}, JOB)
    ssh = _SSH(tmp_path / "mnt")
    (tmp_path / "mnt").mkdir()
    planned = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=ssh))
    leaving = [m for m in planned[0].sweep.moves if m.state == LEAVES]
    assert leaving and all((m.origin, m.to) == (2, 1) for m in leaving), planned[0].sweep.moves
    # watch lands no cell on q1 (its machine exists): a move there would wait while q1 drains
    watched = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=ssh, keep=True))
    assert [m for m in watched[0].sweep.moves if m.state == LEAVES] == [], watched[0].sweep.moves
    assert len(next(ls for ls in watched if ls.sweep.n == 2).sweep.cells) == 5
    # ...while a queue with no machine yet is one it creates with the cells landing there
    fresh = asyncio.run(settle(loaded, _live(2), {"runpod": _Provider()}, ssh=ssh, keep=True))
    assert {(m.origin, m.to) for m in fresh[0].sweep.moves if m.state == LEAVES} == {(2, 1)}
