"""The rebalance of a sweep's cells not yet started (gpujob.sweep.rebalance): which cells leave (phase
1), when one lands (phase 2: only on proof read from the origin machine; every unknown waits), the
placement record, and the wrapper side with real bash processes, including a queue caught between
cells at the moment its new version is placed."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob.jobfile.cells import Cell, expand
from gpujob.jobfile.sweep import SweepSpec
from gpujob.layout.isolation import CellRecord
from gpujob.layout.wrapper import place, place_command, queue_command
from gpujob.sweep.assign import Assignment, Leaving, read_record
from gpujob.sweep.evidence import Evidence, Seen, decide, evidence_command, parse_evidence
from gpujob.sweep.rebalance import (
    LANDS,
    LEAVES,
    STAYS,
    WAITS,
    arrange,
    note_leaving,
    propose,
)
from tests.e2e.e2e_support import poll
from tests.sweep.test_sweep_unit import run


def cell(name: str, est: float = 600) -> Cell:
    return Cell(name, (("N", name),), est)


SIX = [cell(x) for x in "abcdef"]
PLACED = {"a": 1, "c": 1, "e": 1, "b": 2, "d": 2, "f": 2}  # machines: 2, split by count


# --- phase 1: which cells leave ------------------------------------------------------------------


def test_more_machines_move_the_last_cells_of_the_loaded_queues_to_the_new_one() -> None:
    got = propose(SIX, 3, PLACED, transit={}, done=[])
    assert got == {"e": (1, 3), "f": (2, 3)}  # 3,3,0 -> 2,2,2: each queue's last cell
    assert propose(SIX, 2, PLACED, transit={}, done=[]) == {}  # balanced: nothing moves
    # four machines: still one cell each (a queue keeps the first cell it has left: likely in flight)
    four = propose(SIX, 4, PLACED, transit={}, done=[])
    assert set(four.values()) <= {(1, 3), (1, 4), (2, 3), (2, 4)} and len(four) == 2, four


def test_a_cell_done_started_or_first_in_its_queue_never_leaves() -> None:
    # done (a pulled record) cells weigh nothing and never move: q1 has only e left, which is its first
    assert propose(SIX, 3, PLACED, transit={}, done=["a", "c"]) == {"f": (2, 3)}
    # a cell seen started where it is never moves again
    assert propose(SIX, 3, PLACED, transit={}, done=[], started=["e", "f"]) == {"c": (1, 3), "d": (2, 3)}
    assert propose(SIX, 3, PLACED, transit={}, done=[], started=["c", "e", "d", "f"]) == {}
    # one queue of one cell: nothing to move (its first cell stays)
    assert propose([cell("a")], 3, {"a": 1}, transit={}, done=[]) == {}


def test_a_finished_queue_and_a_queue_above_machines_never_get_cells() -> None:
    cells = [*SIX, cell("g"), cell("h")]
    placed = {**PLACED, "g": 3, "h": 3}
    # q3 finished (both its cells done and pulled): the moves go to no queue but q1 and q2's own
    assert propose(cells, 3, placed, transit={}, done=["g", "h"]) == {}
    # q3 not finished but above machines (2): not a target either, though it is the least loaded
    few = {**PLACED, "g": 3}
    got = propose([*SIX, cell("g")], 2, few, transit={}, done=["g"])
    assert all(to != 3 for _, to in got.values()), got
    # ...while a queue with no cells at all within machines is one (the new machine), and a queue
    # with a cell not known done is one too
    assert set(propose(cells, 4, placed, transit={}, done=["g", "h"]).values()) == {(1, 4), (2, 4)}
    assert set(propose(cells, 4, placed, transit={}, done=["g"]).values()) == {(1, 4), (2, 3)}


def test_cells_in_transit_weigh_on_their_target_so_a_second_plan_proposes_nothing_more() -> None:
    first = propose(SIX, 3, PLACED, transit={}, done=[])
    assert propose(SIX, 3, PLACED, transit=first, done=[]) == {}
    # estimates count, not numbers: a long cell left on q2 is worth moving two short ones for
    cells = [cell("a", 600), cell("b", 600), cell("c", 3600), cell("d", 600), cell("e", 600)]
    got = propose(cells, 2, {"a": 1, "b": 2, "c": 2, "d": 2, "e": 2}, transit={}, done=[])
    assert got == {"e": (2, 1), "d": (2, 1)}, got


# --- phase 2: lands only on proof ----------------------------------------------------------------

PROOF = Evidence(running="v2", pointer="v2", cells={"e": Seen(listed=False, starts=0, exit="-")})


def _with(**seen: object) -> Evidence:
    base = {"listed": False, "starts": 0, "exit": "-"}
    return Evidence(running="v2", pointer="v2", cells={"e": Seen(**{**base, **seen})})  # type: ignore[arg-type]


def test_a_cell_lands_only_when_its_origin_runs_the_version_without_it_and_never_started_it() -> None:
    state, why = decide("e", 1, machine_running=True, evidence=PROOF)
    assert state == LANDS and "never started it" in why


@pytest.mark.parametrize(
    ("running", "evidence", "says"),
    [
        (False, PROOF, "machine is not running"),  # stopped/preempted: only its disk knows
        (True, None, "was not read"),  # the SSH read failed
        (True, Evidence(running=None, pointer="v2", cells=PROOF.cells), "has not said which version"),
        (True, Evidence(running="v2", pointer=None, cells=PROOF.cells), "no version pointer"),
        (True, Evidence(running="v1", pointer="v2", cells=PROOF.cells), "not yet v2"),  # between cells
        (True, Evidence(running="v2", pointer="v2", cells={}), "records on q1 were not read"),
        (True, _with(starts=None), "records on q1 were not read"),
        (True, _with(exit=None), "records on q1 were not read"),
        (True, _with(listed=None), "queue file of version v2 was not read"),
        (True, _with(listed=True), "still lists it"),
    ],
)
def test_every_unknown_waits(running: bool, evidence: Evidence | None, says: str) -> None:
    state, why = decide("e", 1, machine_running=running, evidence=evidence, why_unread="timeout")
    assert state == WAITS and says in why, why


@pytest.mark.parametrize("seen", [{"starts": 1}, {"exit": "0"}, {"exit": "1", "listed": True}])
def test_a_cell_its_origin_started_stays_there(seen: dict[str, object]) -> None:
    state, why = decide("e", 1, machine_running=True, evidence=_with(**seen))
    assert state == STAYS and "started it" in why


def test_the_machines_answer_is_checked_not_trusted() -> None:
    ev = parse_evidence(
        "running=v2 pointer=v2\ncell=e listed=0 starts=0 exit=-\ncell=f listed=1 starts=2 exit=0\n"
        "cell=g listed=? starts=x exit=oops\n"
    )
    assert ev.running == "v2" and ev.cells["e"] == Seen(False, 0, "-") and ev.cells["f"] == Seen(True, 2, "0")
    assert ev.cells["g"] == Seen(None, None, None)
    odd = parse_evidence("running=../../etc pointer=- \n")
    assert odd.running is None and odd.pointer is None and odd.cells == {}
    assert decide("g", 1, machine_running=True, evidence=ev)[0] == WAITS


# --- the record and the arrangement --------------------------------------------------------------


def _record(**kw: object) -> Assignment:
    return Assignment(job="abl", cells=dict(PLACED), at=datetime.now(UTC), **kw)  # type: ignore[arg-type]


def test_arrange_applies_the_verdicts_and_a_verdictless_cell_in_transit_waits_on_no_queue() -> None:
    rec = _record(leaving={"e": Leaving(origin=1, to=3), "f": Leaving(origin=2, to=3)})
    none = {c.name: None for c in SIX}
    waiting = arrange(SIX, 3, record=rec, pulled=none)
    assert waiting.transit == {"e": (1, 3), "f": (2, 3)} and waiting.placed["e"] == 1
    assert {m.state for m in waiting.moves} == {WAITS}  # and nothing new is proposed on top of them
    got = arrange(SIX, 3, record=rec, pulled=none, verdicts={"e": (LANDS, "proof"), "f": (STAYS, "ran")})
    assert got.placed["e"] == 3 and got.placed["f"] == 2 and "f" in got.started
    assert "e" not in got.transit and "f" not in got.transit
    # f stayed on q2 (started there): the next cell of q2 is proposed instead
    assert [(m.cell, m.state) for m in got.moves] == [("e", LANDS), ("f", STAYS), ("d", LEAVES)]
    # a cell with a pulled record ran: it is where its record says, not in transit
    ran = {**none, "e": CellRecord("e", 0, 1, queue=1)}
    assert "e" not in arrange(SIX, 3, record=rec, pulled=ran).transit


def test_note_leaving_marks_only_cells_still_on_their_origin_and_placing_a_cell_ends_its_move(
    tmp_path: Path,
) -> None:
    from gpujob.state import open_store
    from gpujob.sweep.assign import note_placed
    from gpujob.sweep.rebalance import Move

    store = open_store(tmp_path / "job.yaml")
    note_placed(store, "abl", 1, ["a", "c", "e"])
    at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    note_leaving(store, "abl", [Move("e", 1, 3, LEAVES), Move("c", 2, 3, LEAVES)], at)  # c is not on q2
    rec = read_record(store, "abl")
    assert rec is not None and rec.leaving == {"e": Leaving(origin=1, to=3, since=at)} and rec.cells["e"] == 1
    # marked again (a later apply's phase 1 of the same move): it keeps the time it first left
    note_leaving(store, "abl", [Move("e", 1, 3, WAITS)], datetime(2026, 12, 1, 13, 0, tzinfo=UTC))
    assert read_record(store, "abl").leaving["e"].since == at  # type: ignore[union-attr]
    note_placed(store, "abl", 3, ["e"])  # it landed: apply places q3's version holding it
    rec = read_record(store, "abl")
    assert rec is not None and rec.leaving == {} and rec.cells["e"] == 3


def test_watch_keeps_a_proven_outcome_at_once_and_only_for_a_cell_still_in_transit(tmp_path: Path) -> None:
    from gpujob.state import open_store
    from gpujob.sweep.assign import note_placed
    from gpujob.sweep.rebalance import Move
    from gpujob.sweep.transit import note_verdicts

    store = open_store(tmp_path / "job.yaml")
    note_placed(store, "abl", 1, ["a", "c", "e"])
    note_placed(store, "abl", 2, ["b", "d", "f"])
    at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    note_leaving(
        store, "abl", [Move("e", 1, 3, LEAVES), Move("f", 2, 3, LEAVES), Move("c", 1, 3, LEAVES)], at
    )
    note_verdicts(
        store,
        "abl",
        [Move("e", 1, 3, LANDS), Move("f", 2, 3, STAYS), Move("c", 1, 3, WAITS), Move("a", 1, 3, LANDS)],
    )
    rec = read_record(store, "abl")
    assert rec is not None
    assert rec.cells["e"] == 3 and rec.cells["f"] == 2 and rec.started == ["f"]
    assert rec.leaving == {"c": Leaving(origin=1, to=3, since=at)}  # waits: untouched
    assert rec.cells["a"] == 1  # a was never leaving: a stray verdict moves nothing


# --- the wrapper side: real bash, the origin caught between cells --------------------------------

# The cell named in $HOLDS/<V> waits for $HOLDS/<V>.go (bounded), so the test can act while it is
# in flight; every start is counted in the cell's dir.
CELL = r"""echo run >> "$GPUJOB_CELL_DIR/runs"
if [ -e "$HOLDS/$V" ]; then
  touch "$GPUJOB_CELL_DIR/holding"
  i=0; while [ ! -e "$HOLDS/$V.go" ] && [ "$i" -lt 600 ]; do sleep 0.05; i=$((i+1)); done
fi
"""

# A `head` first on PATH that, once armed, pauses the wrapper right after it read its version pointer
# (between two cells, before it starts the next one): the window where a new version can be placed
# after the wrapper looked.
HEAD_SHIM = r"""#!/bin/bash
for a in "$@"; do
  case "$a" in */state/version.q*)
    out=$(/usr/bin/head "$@")
    if [ -e "$HOLDS/arm" ]; then
      rm -f "$HOLDS/arm"; touch "$HOLDS/paused"
      i=0; while [ ! -e "$HOLDS/paused.go" ] && [ "$i" -lt 600 ]; do sleep 0.05; i=$((i+1)); done
    fi
    [ -n "$out" ] && printf '%s\n' "$out"; exit 0 ;;
  esac
done
exec /usr/bin/head "$@"
"""


def _setup(tmp_path: Path) -> tuple[Path, Path, list[Cell], dict[str, Cell], dict[str, str]]:
    mount, holds = tmp_path / "ws", tmp_path / "holds"
    holds.mkdir()
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "head").write_text(HEAD_SHIM)
    (shim / "head").chmod(0o755)
    cells = expand(SweepSpec.model_validate({"machines": 1, "matrix": {"V": ["a", "b", "c"]}}))
    by = {c.env["V"]: c for c in cells}
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "HOLDS": str(holds)}
    return mount, holds, cells, by, env


def _evidence(mount: Path, cell: str, cwd: Path) -> Evidence:
    return parse_evidence(run(evidence_command(str(mount), "abl", 1, [cell]), cwd).stdout)


def _runs(mount: Path, c: Cell) -> int:
    f = mount / "sweeps" / "abl" / c.name / "runs"
    return len(f.read_text().split()) if f.exists() else 0


def _start(cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["bash", "-c", cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_a_version_placed_while_the_queue_is_between_cells_never_lets_a_started_cell_land(
    tmp_path: Path,
) -> None:
    """The race: the wrapper read its pointer (old), then the new version without b is placed, then
    the wrapper starts b under the old one. The proof must never say b lands: while b runs the origin
    runs the old version (waits); after it, b's start record is there (stays)."""
    mount, holds, cells, by, env = _setup(tmp_path)
    v1 = place(job="abl", mount=str(mount), ck_dir=None, command=CELL, queues=[cells])
    v2 = place(job="abl", mount=str(mount), ck_dir=None, command=CELL, queues=[[by["a"], by["c"]]])
    for v in ("a", "b"):
        (holds / v).touch()
    queue = _start(queue_command(v1, 1), tmp_path, env)
    try:
        poll("cell a in flight", lambda: (mount / "sweeps/abl" / by["a"].name / "holding").exists(), 30, 0.02)
        (holds / "arm").touch()
        (holds / "a.go").touch()
        poll("the wrapper between a and b, its pointer read", lambda: (holds / "paused").exists(), 30, 0.02)
        run(place_command(v2, 1), tmp_path)  # phase 1 lands right now: after the wrapper looked
        (holds / "paused.go").touch()
        poll("cell b in flight", lambda: (mount / "sweeps/abl" / by["b"].name / "holding").exists(), 30, 0.02)
        during = _evidence(mount, by["b"].name, tmp_path)
        assert (during.running, during.pointer) == (v1.version, v2.version)
        assert decide(by["b"].name, 1, machine_running=True, evidence=during)[0] == WAITS
        (holds / "b.go").touch()
        out, _ = queue.communicate(timeout=60)
    finally:
        if queue.poll() is None:
            queue.kill()
    assert queue.returncode == 0, out
    assert f"picks up version {v2.version}" in out and _runs(mount, by["b"]) == 1, out  # b did start
    after = _evidence(mount, by["b"].name, tmp_path)
    assert after.running == after.pointer == v2.version
    assert decide(by["b"].name, 1, machine_running=True, evidence=after)[0] == STAYS


def test_a_version_placed_before_the_queue_looks_drops_the_cell_for_good_and_the_proof_says_it_lands(
    tmp_path: Path,
) -> None:
    """The control: placed while a runs, the wrapper picks the new version up before b, so b never
    starts on this queue, and the proof (read while c runs, and after the queue drained) says it lands."""
    mount, holds, cells, by, env = _setup(tmp_path)
    v1 = place(job="abl", mount=str(mount), ck_dir=None, command=CELL, queues=[cells])
    v2 = place(job="abl", mount=str(mount), ck_dir=None, command=CELL, queues=[[by["a"], by["c"]]])
    for v in ("a", "c"):
        (holds / v).touch()
    queue = _start(queue_command(v1, 1), tmp_path, env)
    try:
        poll("cell a in flight", lambda: (mount / "sweeps/abl" / by["a"].name / "holding").exists(), 30, 0.02)
        early = _evidence(mount, by["b"].name, tmp_path)
        assert decide(by["b"].name, 1, machine_running=True, evidence=early)[0] == WAITS  # still listed
        run(place_command(v2, 1), tmp_path)
        placed = _evidence(mount, by["b"].name, tmp_path)  # placed, not yet picked up: still waits
        assert decide(by["b"].name, 1, machine_running=True, evidence=placed)[0] == WAITS
        (holds / "a.go").touch()
        poll("cell c in flight", lambda: (mount / "sweeps/abl" / by["c"].name / "holding").exists(), 30, 0.02)
        during = _evidence(mount, by["b"].name, tmp_path)
        assert decide(by["b"].name, 1, machine_running=True, evidence=during)[0] == LANDS
        (holds / "c.go").touch()
        out, _ = queue.communicate(timeout=60)
    finally:
        if queue.poll() is None:
            queue.kill()
    assert queue.returncode == 0, out
    assert _runs(mount, by["b"]) == 0 and _runs(mount, by["a"]) == _runs(mount, by["c"]) == 1, out
    after = _evidence(mount, by["b"].name, tmp_path)
    assert decide(by["b"].name, 1, machine_running=True, evidence=after)[0] == LANDS
    # the origin launched again (a relaunch after a preemption runs the version gpujob computes now,
    # without b) still never starts it
    run(queue_command(v2, 1), tmp_path)
    assert _runs(mount, by["b"]) == 0


# --- settle: the read of each origin machine, with a fake platform and SSH (the command runs in bash)


class _Provider:
    def ssh_endpoint(self, machine: object) -> object:
        from gpujob.live import SSHEndpoint

        return SSHEndpoint(host="127.0.0.1", port=22)


class _SSH:
    """An SSH layer whose remote runs the command in bash on a local dir standing for the mount."""

    def __init__(self, mount: Path, fail: bool = False) -> None:
        self.mount, self.fail, self.commands = mount, fail, 0

    def open(self, endpoint: object, **kw: object) -> object:
        import contextlib

        outer = self

        class Remote:
            async def run(self, cmd: str, **kw: object) -> object:
                outer.commands += 1
                if outer.fail:
                    raise ConnectionError("connection refused")
                return run(cmd.replace("/workspace", str(outer.mount)), outer.mount)

        @contextlib.asynccontextmanager
        async def cm():  # type: ignore[no-untyped-def]
            yield Remote()

        return cm()


def _placed_and_leaving(tmp_path: Path) -> tuple[list, Path]:  # type: ignore[type-arg]
    """A 2-queue sweep whose cells were placed, then machines 3 and apply's phase 1 recorded."""
    import dataclasses

    from gpujob.spec.load import load_specs
    from gpujob.state import open_store
    from gpujob.sweep.assign import note_placed
    from tests.sweep.test_sweep_unit import JOB, write

    job = write(tmp_path, JOB)
    store = open_store(job)
    for ls in load_specs([job]):
        note_placed(store, "abl", ls.sweep.n, [c.name for c in ls.sweep.cells])
    three = load_specs([write(tmp_path, JOB.replace("machines: 2", "machines: 3"))])
    for ls in three:
        note_leaving(store, "abl", [m for m in ls.sweep.moves if m.origin == ls.sweep.n])
    again = [dataclasses.replace(ls, project="eus6m65n") for ls in load_specs([job])]
    assert {m.state for m in again[0].sweep.moves} == {WAITS} and len(again[0].sweep.moves) == 2
    return again, job


def _live(*running: int, status: str = "running") -> object:
    from gpujob import naming
    from gpujob.live import LiveResource, LiveState

    pods = [
        LiveResource(platform="runpod", kind="pod", id=f"p{n}", name=naming.machine_name(f"abl--q{n}", "eus6m65n"),
                     status=status, attributes={"project": "eus6m65n"})  # type: ignore[arg-type]
        for n in running
    ]  # fmt: skip
    return LiveState(read_at=datetime.now(UTC), resources=pods)


def _states(loaded: list) -> dict[str, str]:  # type: ignore[type-arg]
    return {m.cell: m.state for m in loaded[0].sweep.moves}


def test_settle_waits_when_the_origin_is_not_running_has_no_key_or_cannot_be_read(tmp_path: Path) -> None:
    import asyncio

    from gpujob.sweep.transit import settle

    loaded, job = _placed_and_leaving(tmp_path)
    ssh = _SSH(tmp_path / "mnt")
    (tmp_path / "mnt").mkdir()
    stopped = asyncio.run(settle(loaded, _live(1, 2, status="stopped"), {"runpod": _Provider()}, ssh=ssh))
    assert set(_states(stopped).values()) == {WAITS} and ssh.commands == 0
    assert all("not running" in m.why for m in stopped[0].sweep.moves)
    nokey = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=ssh))
    assert set(_states(nokey).values()) == {WAITS} and ssh.commands == 0
    assert all("no project SSH key" in m.why for m in nokey[0].sweep.moves)
    from gpujob.state import open_store

    key = open_store(job).root / "id_ed25519"  # type: ignore[attr-defined]
    key.write_text("not a key: the fake SSH layer never reads it\n")
    key.chmod(0o600)
    broken = _SSH(tmp_path / "mnt", fail=True)
    failed = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=broken))
    assert set(_states(failed).values()) == {WAITS} and broken.commands == 2  # one command per machine
    assert all("connection refused" in m.why for m in failed[0].sweep.moves)
    empty = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=ssh))  # nothing on disk
    assert set(_states(empty).values()) == {WAITS}
    assert [ls.spec.name for ls in empty] == ["abl--q1", "abl--q2"]  # no q3 before a cell lands


def test_settle_lands_a_proven_cell_on_the_new_queue_and_watch_keeps_it(tmp_path: Path) -> None:
    import asyncio

    from gpujob.state import open_store
    from gpujob.sweep.transit import settle

    loaded, job = _placed_and_leaving(tmp_path)
    key = open_store(job).root / "id_ed25519"  # type: ignore[attr-defined]
    key.write_text("not a key\n")
    key.chmod(0o600)
    mount = tmp_path / "mnt"
    # q1's machine runs the version placed without its leaving cell (both queues share one mount here:
    # the state dir keys each by its queue), q2's has not picked its new one up yet
    p = loaded[0].sweep.placement
    for n in (1, 2):
        run(place_command(p, n).replace("/workspace", str(mount)), tmp_path)
    state = Path(p.root.replace("/workspace", str(mount))).parent / "state"
    (state / "running.q1").write_text(p.version + "\n")
    (state / "running.q2").write_text("v000000000000\n")
    # plan and apply (which places the new queue's version with every cell it holds): the proven cell lands
    got = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=_SSH(mount)))
    by_origin = {m.origin: m for m in got[0].sweep.moves}
    assert by_origin[1].state == LANDS and by_origin[2].state == WAITS, got[0].sweep.moves
    assert [ls.spec.name for ls in got] == ["abl--q1", "abl--q2", "abl--q3"]
    assert [c.name for c in got[2].sweep.cells] == [by_origin[1].cell]
    # watch (applies no run change): q3 would start without q2's cell and never run it, so both wait
    held = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=_SSH(mount), keep=True))
    assert {m.state for m in held[0].sweep.moves} == {WAITS}, held[0].sweep.moves
    assert [ls.spec.name for ls in held] == ["abl--q1", "abl--q2"]
    rec = read_record(open_store(job), "abl")
    assert rec is not None and sorted(rec.leaving) == sorted(m.cell for m in by_origin.values()), rec
    # q2 picks its version up: watch lands both at once and keeps it
    (state / "running.q2").write_text(p.version + "\n")
    both = asyncio.run(settle(loaded, _live(1, 2), {"runpod": _Provider()}, ssh=_SSH(mount), keep=True))
    assert [ls.spec.name for ls in both] == ["abl--q1", "abl--q2", "abl--q3"]
    assert sorted(c.name for c in both[2].sweep.cells) == sorted(m.cell for m in by_origin.values())
    rec = read_record(open_store(job), "abl")
    assert rec is not None and not rec.leaving and all(rec.cells[m.cell] == 3 for m in by_origin.values())


def test_settle_does_not_propose_a_cell_its_origin_already_started(tmp_path: Path) -> None:
    import asyncio
    import dataclasses

    from gpujob.spec.load import load_specs
    from gpujob.state import open_store
    from gpujob.sweep.assign import note_placed
    from gpujob.sweep.transit import settle
    from tests.sweep.test_sweep_unit import JOB, write

    job = write(tmp_path, JOB)
    store = open_store(job)
    for ls in load_specs([job]):
        note_placed(store, "abl", ls.sweep.n, [c.name for c in ls.sweep.cells])
    three = [dataclasses.replace(ls, project="eus6m65n") for ls in load_specs([write(tmp_path, JOB.replace("machines: 2", "machines: 3"))])]  # fmt: skip
    proposed = {m.origin: m.cell for m in three[0].sweep.moves if m.state == LEAVES}
    assert sorted(proposed) == [1, 2], three[0].sweep.moves
    key = store.root / "id_ed25519"  # type: ignore[attr-defined]
    key.write_text("not a key\n")
    key.chmod(0o600)
    mount = tmp_path / "mnt"
    state = mount / ".gpujob" / "abl.sweep" / "state"
    state.mkdir(parents=True)
    (state / f"{proposed[1]}.starts").write_text("1\n")  # q1 is already running its last cell
    got = asyncio.run(settle(three, _live(1, 2), {"runpod": _Provider()}, ssh=_SSH(mount)))
    leaving = {m.cell for m in got[0].sweep.moves if m.state == LEAVES}
    assert proposed[1] not in leaving and proposed[2] in leaving, got[0].sweep.moves
    q1 = next(ls.sweep for ls in got if ls.sweep.n == 1)
    assert proposed[1] in [c.name for c in q1.cells] and proposed[1] in q1.started  # apply keeps it started


def test_watch_lands_cells_only_on_a_queue_it_can_create_with_all_of_them() -> None:
    from gpujob.sweep.rebalance import LANDS, STAYS, WAITS, Move
    from gpujob.sweep.transit import held_for_watch

    waiting = [Move("a", 1, 3, WAITS), Move("b", 2, 3, WAITS), Move("c", 1, 4, WAITS)]
    proven = {"a": (LANDS, "proven"), "b": (WAITS, "q2 not read"), "c": (LANDS, "proven")}
    # q3 still waits for b: a waits with it; q4 has no other cell on its way and no machine: c lands
    held = held_for_watch(proven, waiting, made=set())
    assert held["a"][0] == WAITS and "every cell on its way" in held["a"][1]
    assert held["b"] == (WAITS, "q2 not read") and held["c"] == (LANDS, "proven")
    # every cell for q3 proven (or staying on its origin): they land together
    both = held_for_watch({"a": (LANDS, ""), "b": (STAYS, "started"), "c": (LANDS, "")}, waiting, made=set())
    assert both == {"a": (LANDS, ""), "b": (STAYS, "started"), "c": (LANDS, "")}
    # q4's machine exists: its queue file lacks c, so only apply (which places the version) lands it
    late = held_for_watch({"a": (LANDS, ""), "b": (LANDS, ""), "c": (LANDS, "")}, waiting, made={4})
    assert late["a"] == (LANDS, "") and late["b"] == (LANDS, "")
    assert late["c"][0] == WAITS and "gpujob apply" in late["c"][1]
