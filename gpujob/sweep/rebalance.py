"""Rebalance: a placed cell that has not started moves to a less loaded queue, in two phases, and only
when it is proven it can never start on the queue it leaves (a cell run on two machines is the one
thing a sweep must never do: each queue's "never run again" guard is its own machine's disk).

Phase 1 ("leaves"): the origin queue gets a new version of its files without the cell (placed beside
the old, picked up by its wrapper between cells: gpujob.sweep.wrapper), and the project's placement
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

Computing here; the reads are one command per origin machine (settle), the rendering is the plan's.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpujob.sweep.cells import Cell
from gpujob.sweep.wrapper import RUNNING, VERSION_POINTER, sweep_dir

LEAVES, WAITS, LANDS, STAYS = "leaves", "waits", "lands", "stays"


@dataclass(frozen=True)
class Move:
    cell: str
    origin: int
    to: int
    state: str  # LEAVES (phase 1 now), WAITS (in transit), LANDS (proven: on `to` now), STAYS (started on origin)
    why: str = ""


@dataclass(frozen=True)
class Seen:
    """One cell on its origin machine, as read there (None: not read, or not readable)."""

    listed: bool | None  # listed in the queue file of the version the wrapper runs
    starts: int | None
    exit: str | None  # '-' when there is no exit record


@dataclass(frozen=True)
class Evidence:
    running: str | None  # state/running.q<N>
    pointer: str | None  # state/version.q<N>
    cells: dict[str, Seen] = field(default_factory=dict)


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
) -> dict[str, tuple[int, int]]:
    """New moves, cell -> (origin, to): while moving the last movable cell of the most loaded queue
    onto the least loaded open queue lowers the most loaded one, move it. A queue's load is its cells
    not known done (pulled records) plus the cells in transit to it. Movable: placed, not done, not
    seen started, not the first cell its queue has left (likely in flight). Open: queues 1..machines
    that did not finish (a queue whose cells are all done never gets cells back)."""
    done, started = set(done), set(started)
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
    open_ = [q for q in range(1, machines + 1) if q not in finished]
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


# --- phase 2: is it proven that the origin never starts the cell?


def decide(
    cell: str, origin: int, *, machine_running: bool, evidence: Evidence | None, why_unread: str = ""
) -> tuple[str, str]:
    """(LANDS | STAYS | WAITS, why) for a cell in transit from queue `origin`; anything unknown waits."""
    q = f"q{origin}"
    if not machine_running:
        return WAITS, (
            f"{q}'s machine is not running: only its disk knows whether it started the cell; it lands once "
            f"{q} runs and shows it never did"
        )
    if evidence is None:
        return WAITS, f"{q}'s state was not read ({why_unread or 'no answer'}): it waits for the next read"
    if evidence.running is None:
        return (
            WAITS,
            f"{q}'s wrapper has not said which version it runs (not started yet, or from an older gpujob)",
        )
    if evidence.pointer is None:
        return WAITS, f"{q} has no version pointer: no version was placed for it"
    if evidence.running != evidence.pointer:
        return WAITS, (
            f"{q} runs version {evidence.running}, not yet {evidence.pointer} (placed without the cell): "
            "it picks that up before its next cell"
        )
    seen = evidence.cells.get(cell)
    if seen is None or seen.starts is None or seen.exit is None:
        return WAITS, f"the cell's records on {q} were not read"
    if seen.starts > 0 or seen.exit != "-":
        return STAYS, f"{q} started it (starts={seen.starts}, exit {seen.exit}): it stays there"
    if seen.listed is None:
        return WAITS, f"{q}'s queue file of version {evidence.running} was not read"
    if seen.listed:
        return (
            WAITS,
            f"{q}'s version {evidence.running} still lists it: the version without it is not placed yet",
        )
    return LANDS, f"{q} runs version {evidence.running}, which does not list it, and never started it"


def started_there(evidence: Evidence | None, cell: str) -> bool:
    """The origin's records show the cell started (or ran): it is not proposed to leave."""
    seen = evidence.cells.get(cell) if evidence is not None else None
    return seen is not None and ((seen.starts or 0) > 0 or seen.exit not in (None, "-"))


def evidence_command(mount: str, job: str, n: int, cells: Iterable[str]) -> str:
    """One command for queue N's machine: 'running=<v|-> pointer=<v|->', then per cell
    'cell=<name> listed=<0|1|-> starts=<n> exit=<code|->'."""
    root = shlex.quote(sweep_dir(mount, job))
    names = " ".join(shlex.quote(c) for c in cells)
    ver = "head -n 1 {} 2>/dev/null | head -c 40 | tr -cd 'a-z0-9'"
    return f"""P={root}; S="$P/state"
r=$({ver.format(f'"$S/{RUNNING}q{n}"')}); p=$({ver.format(f'"$S/{VERSION_POINTER}q{n}"')})
echo "running=${{r:--}} pointer=${{p:--}}"
for c in {names}; do
  e=$(cat "$S/$c.exit" 2>/dev/null | tr -cd '0-9-'); n=$(cat "$S/$c.starts" 2>/dev/null | tr -cd '0-9')
  if [ -n "$r" ] && [ -f "$P/$r/q{n}.txt" ]; then grep -qxF -- "$c" "$P/$r/q{n}.txt" && l=1 || l=0; else l=-; fi
  echo "cell=$c listed=$l starts=${{n:-0}} exit=${{e:--}}"
done; true"""


def parse_evidence(out: str) -> Evidence:
    """The machine's answer (its text checked, never trusted: anything odd reads as unknown)."""
    running = pointer = None
    cells: dict[str, Seen] = {}
    for line in out.splitlines():
        kv = dict(part.partition("=")[::2] for part in line.split())
        if "running" in kv and "pointer" in kv:
            running, pointer = _version(kv["running"]), _version(kv["pointer"])
        elif "cell" in kv:
            listed = {"1": True, "0": False}.get(kv.get("listed", ""))
            starts = int(kv["starts"]) if kv.get("starts", "").isdigit() else None
            code = kv.get("exit")
            ok = code == "-" or (code is not None and code.lstrip("-").isdigit())
            cells[kv["cell"]] = Seen(listed=listed, starts=starts, exit=code if ok else None)
    return Evidence(running=running, pointer=pointer, cells=cells)


def _version(text: str) -> str | None:
    return text if text.startswith("v") and text[1:].isalnum() and len(text) > 1 else None


# --- where each cell is: the record, the pulled cell records, the verdicts of phase 2


def arrange(
    cells: Sequence[Cell],
    machines: int,
    *,
    record: Any,  # gpujob.sweep.assign.Assignment or None
    pulled: Mapping[str, Any],  # cell -> pulled CellRecord (gpujob.sweep.isolation) or None
    verdicts: Mapping[str, tuple[str, str]] | None = None,
) -> Arrangement:
    """The placements (the record's, a pulled record's queue over it), the cells in transit (the
    record's `leaving` with the verdicts of phase 2 applied, verdict-less ones waiting) and the new
    moves phase 1 proposes now."""
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
    fresh = propose(cells, machines, placed, transit=transit, done=done, started=started)
    for cell, (origin, to) in fresh.items():
        transit[cell] = (origin, to)
        moves.append(Move(cell, origin, to, LEAVES, f"q{origin} gets a version without it; it lands on q{to} "
                          f"once q{origin} is seen running that version without having started it"))  # fmt: skip
    return Arrangement(placed=placed, transit=transit, moves=tuple(moves), started=frozenset(started))


def arrange_loaded(
    loaded: Any, cells: Sequence[Cell], verdicts: Mapping[str, tuple[str, str]] | None = None
) -> Arrangement:
    from gpujob.outputs.roots import pull_to
    from gpujob.state import open_store
    from gpujob.sweep.assign import read_record
    from gpujob.sweep.isolation import local_records

    spec = loaded.spec
    record = read_record(open_store(loaded.path), spec.name)
    pulled = local_records(pull_to(spec, loaded.path), [c.name for c in cells])
    return arrange(cells, spec.sweep.machines, record=record, pulled=pulled, verdicts=verdicts)


def note_leaving(store: Any, job: str, moves: Iterable[Move], now: Any = None) -> None:
    """Phase 1, before the origin's version without them is placed: the cells are on their way."""
    from gpujob.sweep.assign import Leaving, update_assignment

    todo = [m for m in moves if m.state in (LEAVES, WAITS)]

    def change(rec: Any) -> None:
        for m in todo:
            if rec.cells.get(m.cell) == m.origin:
                rec.leaving[m.cell] = Leaving(origin=m.origin, to=m.to)

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


# --- the reads: one SSH command per origin machine, then the sweep expanded again with the verdicts


def note_verdicts(store: Any, job: str, moves: Iterable[Move], now: Any = None) -> None:
    """Phase 2's proven outcomes, kept at once (`watch`, which applies on its own): a landed cell is
    placed on its new queue, a started one stays on its origin for good. Either is a fact about the
    origin machine, true whatever happens next, so an origin that drains and stops before the new
    queue's version is placed cannot leave the cell in transit with no machine to prove it again."""
    from gpujob.sweep.assign import update_assignment

    todo = [m for m in moves if m.state in (LANDS, STAYS)]

    def change(rec: Any) -> None:
        for m in todo:
            if rec.cells.get(m.cell) != m.origin or m.cell not in rec.leaving:
                continue
            del rec.leaving[m.cell]
            if m.state == LANDS:
                rec.cells[m.cell] = m.to
            elif m.cell not in rec.started:
                rec.started.append(m.cell)

    if todo:
        update_assignment(store, job, change, now)


async def settle(
    loaded: Sequence[Any],
    live: Any,
    providers: Mapping[str, Any],
    *,
    ssh: Any = None,
    timeout: float = 8.0,
    keep: bool = False,
) -> list[Any]:
    """`loaded` with each sweep that has cells in transit, or cells proposed to leave, expanded again
    after reading their origin machines: a proven cell lands on its new queue, a started one stays (a
    proposed one its origin started is not proposed). No read when no cell moves.
    `keep`: the proven outcomes are written to the placement record at once (note_verdicts)."""
    import asyncio

    out: list[Any] = []
    done: set[tuple[str, str]] = set()
    for ls in loaded:
        q = getattr(ls, "sweep", None)
        if q is None:
            out.append(ls)
            continue
        key = (str(ls.path), q.sweep_job)
        if key in done:
            continue
        done.add(key)
        group = [
            o
            for o in loaded
            if getattr(o, "sweep", None) is not None and (str(o.path), o.sweep.sweep_job) == key
        ]
        # the cells in transit, and the cells proposed to leave now: one read tells whether each
        # origin started them (a proposed cell its origin started is not moved at all)
        waiting = [m for m in q.moves if m.state in (WAITS, LEAVES)]
        if not waiting or q.origin is None:
            out += group
            continue
        origins = sorted({m.origin for m in waiting})
        reads = await asyncio.gather(
            *(
                _read(ls, q, n, [m.cell for m in waiting if m.origin == n], live, providers, ssh, timeout)
                for n in origins
            )
        )
        verdicts: dict[str, tuple[str, str]] = {}
        for n, (running, ev, why) in zip(origins, reads, strict=True):
            for m in waiting:
                if m.origin != n:
                    continue
                if m.state == WAITS:
                    verdicts[m.cell] = decide(m.cell, n, machine_running=running, evidence=ev, why_unread=why)
                elif started_there(ev, m.cell):
                    verdicts[m.cell] = (STAYS, f"q{n} started it already")
        if keep:
            made = {m.to for m in waiting if _queue_exists(ls, q, m.to, live)}
            verdicts = held_for_watch(verdicts, waiting, made)
        from gpujob.sweep.expand import expand_loaded

        again = [replace(one, project=ls.project) for one in expand_loaded(q.origin, verdicts)]
        if keep and again:
            from gpujob.state import open_store

            note_verdicts(open_store(ls.path), q.sweep_job, again[0].sweep.moves)
        out += again
    return out


def held_for_watch(
    verdicts: Mapping[str, tuple[str, str]], waiting: Sequence[Move], made: Iterable[int]
) -> dict[str, tuple[str, str]]:
    """Watch lands cells on a queue only when it can start that queue with all of them: watch applies no
    run change, so a cell landing on a queue whose machine exists already (its queue file placed
    without the cell) would sit there unrun; and a queue created for the first proven cell would be
    that case for the next one. Those cells wait, saying why (`gpujob apply` lands and places them)."""
    out = dict(verdicts)
    made = set(made)
    heading: dict[int, list[str]] = {}
    for m in waiting:
        if m.state == WAITS:
            heading.setdefault(m.to, []).append(m.cell)
    for to, cells in heading.items():
        landing = [c for c in cells if out.get(c, (WAITS, ""))[0] == LANDS]
        if not landing:
            continue
        if to in made:
            why = (
                f"q{to} has a machine already, with its queue file placed without the cell: `gpujob apply` "
                "lands it there and places the new version (watch applies no run change)"
            )
        elif any(out.get(c, (WAITS, ""))[0] == WAITS for c in cells):
            why = f"q{to} is created once every cell on its way there is proven (the others still wait)"
        else:
            continue
        for c in landing:
            out[c] = (WAITS, why)
    return out


def _queue_exists(ls: Any, q: Any, n: int, live: Any) -> bool:
    from gpujob.naming import machines
    from gpujob.sweep.expand import queue_job

    kind = "pod" if ls.spec.platform == "runpod" else "machine"
    return any(r.kind == kind for r in machines(live.resources, queue_job(q.sweep_job, n), ls.project))


async def _read(
    ls: Any,
    q: Any,
    n: int,
    cells: list[str],
    live: Any,
    providers: Mapping[str, Any],
    ssh: Any,
    timeout: float,
) -> tuple[bool, Evidence | None, str]:
    """(origin machine running, its evidence or None, why not read)."""
    import asyncio

    from gpujob.naming import machines
    from gpujob.sweep.expand import queue_job

    kind = "pod" if ls.spec.platform == "runpod" else "machine"
    found = [r for r in machines(live.resources, queue_job(q.sweep_job, n), ls.project) if r.kind == kind]
    machine = next((r for r in found if r.status == "running"), None)
    if machine is None:
        return False, None, "not running"
    provider = providers.get(ls.spec.platform)
    if provider is None:
        return True, None, f"no {ls.spec.platform} provider open"
    try:
        got = await asyncio.wait_for(_run(ls, machine, provider, ssh, q, n, cells, timeout), timeout)
    except Exception as exc:  # any failure of the read leaves the cell where it is: unknown waits
        return True, None, (str(exc).splitlines() or [type(exc).__name__])[0]
    return (True, None, got) if isinstance(got, str) else (True, got, "")


async def _run(
    ls: Any, machine: Any, provider: Any, ssh: Any, q: Any, n: int, cells: list[str], timeout: float
) -> Evidence | str:
    from gpujob.apply.sshapi import SSHApi
    from gpujob.ssh.keys import KEY_NAME
    from gpujob.state import open_store

    endpoint = provider.ssh_endpoint(machine)
    if endpoint is None:
        return f"{machine.name} has no SSH endpoint yet"
    store = open_store(ls.path)
    key_path = store.secret_file(KEY_NAME)
    if key_path is None:
        return f"no project SSH key in {store.location}"
    api = ssh or SSHApi.default()
    cmd = evidence_command(ls.spec.storage.mount, q.sweep_job, n, cells)
    async with api.open(
        endpoint, key_path=key_path, known_hosts=store, resource_id=machine.id, timeout=timeout
    ) as remote:
        got = await remote.run(
            cmd, what=f"reading whether q{n} of sweep {q.sweep_job} started the cells leaving it"
        )
    return parse_evidence(str(got.stdout))
