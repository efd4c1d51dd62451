"""Rebalance: a placed cell that has not started moves to a less loaded queue, in two phases, and only
when it is proven it can never start on the queue it leaves (a cell run on two machines is the one
thing a sweep must never do: each queue's "never run again" guard is its own machine's disk).

Phase 1 ("leaves"): the origin queue gets a new version of its files without the cell (placed beside
the old, picked up by its wrapper between cells: gpujob.layout.wrapper), and the project's placement
record (gpujob.sweep.assign, `leaving`) marks the cell on its way, before that version is placed. The
cell is then on no queue: no version gpujob computes lists it anywhere.

Phase 2 (a later plan or apply): the origin machine's state, read with one SSH command, must show
  - the version its wrapper runs (state/running.q<N>, the wrapper's first act) is the version last
    placed for it (state/version.q<N>): it picked that up, and no older wrapper runs (exec replaced it);
  - that version's queue file does not list the cell;
  - the cell has no start and no exit record there (a start is written before the cell runs, and an
    older wrapper that started it could pick up a newer version only after the cell ended).
Then the cell "lands" on its new queue. When it started there after all, it "stays" (back on its
origin for good: its record and checkpoint are there). Anything else (the machine is not running, the
read failed, a wrapper from before running.q<N> existed, the version not picked up yet) "waits": the
cell stays in transit and nothing runs it until the proof comes. A queue that finished (every cell it
holds done and pulled) never gets cells, nor does a queue above sweep.machines.

Computing here (the moves, phase 1, where each cell is); phase 2's evidence and verdicts are
gpujob.sweep.evidence, the reads (one command per origin machine) gpujob.sweep.transit.settle, the
rendering is the plan's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gpujob.jobfile.cells import Cell

LEAVES, WAITS, LANDS, STAYS = "leaves", "waits", "lands", "stays"
STRANDED = "stranded"  # waits no more: its origin has not run for too long (gpujob.sweep.stranded)


@dataclass(frozen=True)
class Move:
    cell: str
    origin: int
    to: int
    state: str  # LEAVES (phase 1 now), WAITS (in transit), LANDS (proven: on `to` now), STAYS (started on origin),
    # STRANDED (in transit, its origin not running for too long: a person's to land, gpujob.sweep.stranded)
    why: str = ""


@dataclass(frozen=True)
class Arrangement:
    """Where each cell of a sweep is now: placed on a queue, or in transit (on none)."""

    placed: dict[str, int]
    transit: dict[str, tuple[int, int]]  # cell -> (origin, to), every cell not on a queue now
    moves: tuple[Move, ...] = ()
    started: frozenset[str] = frozenset()

    def leaving(self, n: int) -> tuple[str, ...]:
        return tuple(c for c, (o, _) in self.transit.items() if o == n)


# --- phase 1: which placed cells leave


def propose(
    cells: Sequence[Cell],
    machines: int,
    placed: Mapping[str, int],
    *,
    transit: Mapping[str, tuple[int, int]],
    done: Iterable[str],
    started: Iterable[str] = (),
    closed: Iterable[int] = (),
) -> dict[str, tuple[int, int]]:
    """New moves, cell -> (origin, to): while moving the last movable cell of the most loaded queue
    onto the least loaded open queue lowers the most loaded one, move it. A queue's load is its cells
    not known done (pulled records) plus the cells in transit to it. Movable: placed, not done, not
    seen started, not the first cell its queue has left (likely in flight). Open: queues 1..machines
    that did not finish (a queue whose cells are all done never gets cells back) and are not `closed`
    (under watch: the queues with a machine already, which watch never lands a cell on)."""
    done, started, closed = set(done), set(started), set(closed)
    est = {c.name: c.est_s for c in cells}
    order = [c.name for c in cells]
    width = max([machines, *placed.values(), *(t for _, t in transit.values())], default=machines)
    remaining: dict[int, list[str]] = {q: [] for q in range(1, width + 1)}
    for name in order:
        q = placed.get(name)
        if q is not None and name not in done and name not in transit:
            remaining[q].append(name)
    load = {q: sum(est[c] for c in names) for q, names in remaining.items()}
    for name, (_, to) in transit.items():
        load[to] += est.get(name, 0.0)
    finished = {
        q for q in remaining if not remaining[q] and any(placed.get(c) == q for c in order)
        and not any(t == q for _, t in transit.values())
    }  # fmt: skip
    open_ = [q for q in range(1, machines + 1) if q not in finished and q not in closed]
    movable = {q: [c for c in names[1:] if c not in started] for q, names in remaining.items()}
    out: dict[str, tuple[int, int]] = {}
    while True:
        sources = [q for q in movable if movable[q]]
        if not sources:
            break
        src = max(sources, key=lambda q: (load[q], -q))
        targets = [q for q in open_ if q != src]
        if not targets:
            break
        dst = min(targets, key=lambda q: (load[q], q))
        cell = movable[src][-1]
        if load[dst] + est[cell] >= load[src]:
            break
        movable[src].pop()
        load[src] -= est[cell]
        load[dst] += est[cell]
        out[cell] = (src, dst)
    return out


# --- where each cell is: the record, the pulled cell records, the verdicts of phase 2


def arrange(
    cells: Sequence[Cell],
    machines: int,
    *,
    record: Any,  # gpujob.sweep.assign.Assignment or None
    pulled: Mapping[str, Any],  # cell -> pulled CellRecord (gpujob.layout.isolation) or None
    verdicts: Mapping[str, tuple[str, str]] | None = None,
    closed: Iterable[int] = (),
) -> Arrangement:
    """The placements (the record's, a pulled record's queue over it), the cells in transit (the
    record's `leaving` with the verdicts of phase 2 applied, verdict-less ones waiting) and the new
    moves phase 1 proposes now (onto no queue in `closed`)."""
    names = {c.name for c in cells}
    placed = {c: q for c, q in (record.cells if record is not None else {}).items() if c in names}
    for cell, rec in pulled.items():
        if rec is not None and rec.queue is not None:
            placed[cell] = rec.queue
    started = set(record.started if record is not None else ()) & names
    transit: dict[str, tuple[int, int]] = {}
    moves: list[Move] = []
    for cell, lv in (record.leaving if record is not None else {}).items():
        if cell not in names or placed.get(cell) != lv.origin or pulled.get(cell) is not None:
            continue  # it ran (a pulled record) or was placed again since: it is where it is
        state, why = (verdicts or {}).get(cell, (WAITS, f"q{lv.origin}'s state not read here"))
        if state == LANDS:
            placed[cell] = lv.to
        elif state == STAYS:
            started.add(cell)
        else:
            transit[cell] = (lv.origin, lv.to)
        moves.append(Move(cell, lv.origin, lv.to, state, why))
    # a cell proposed to leave that its machine shows started (settle read it): it stays, for good
    started |= {
        c for c, (st, _) in (verdicts or {}).items() if st == STAYS and c in placed and c not in transit
    }
    done = {c for c, rec in pulled.items() if rec is not None and rec.exit is not None}
    fresh = propose(cells, machines, placed, transit=transit, done=done, started=started, closed=closed)
    for cell, (origin, to) in fresh.items():
        transit[cell] = (origin, to)
        moves.append(Move(cell, origin, to, LEAVES, f"q{origin} gets a version without it; it lands on q{to} "
                          f"once q{origin} is seen running that version without having started it"))  # fmt: skip
    return Arrangement(placed=placed, transit=transit, moves=tuple(moves), started=frozenset(started))


def arrange_loaded(
    loaded: Any,
    cells: Sequence[Cell],
    verdicts: Mapping[str, tuple[str, str]] | None = None,
    closed: Iterable[int] = (),
) -> Arrangement:
    from gpujob.layout.isolation import local_records
    from gpujob.layout.outputs import pull_to
    from gpujob.state import open_store
    from gpujob.sweep.assign import read_record

    spec = loaded.spec
    record = read_record(open_store(loaded.path), spec.name)
    pulled = local_records(pull_to(spec, loaded.path), [c.name for c in cells])
    return arrange(cells, spec.sweep.machines, record=record, pulled=pulled, verdicts=verdicts, closed=closed)


def note_leaving(store: Any, job: str, moves: Iterable[Move], now: Any = None) -> None:
    """Phase 1, before the origin's version without them is placed: the cells are on their way."""
    from gpujob.sweep.assign import Leaving, update_assignment

    todo = [m for m in moves if m.state in (LEAVES, WAITS)]

    def change(rec: Any) -> None:
        for m in todo:
            if rec.cells.get(m.cell) == m.origin:
                was = rec.leaving.get(m.cell)
                since = was.since if was is not None and (was.origin, was.to) == (m.origin, m.to) else None
                rec.leaving[m.cell] = Leaving(
                    origin=m.origin, to=m.to, since=since or now or datetime.now(UTC)
                )

    if todo:
        update_assignment(store, job, change, now)


def note_started(store: Any, job: str, cells: Iterable[str], now: Any = None) -> None:
    """Cells seen started where they were placed: never proposed to move again."""
    from gpujob.sweep.assign import update_assignment

    names = list(cells)

    def change(rec: Any) -> None:
        rec.started.extend(c for c in names if c not in rec.started)

    if names:
        update_assignment(store, job, change, now)
