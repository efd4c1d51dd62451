"""The reads that settle a sweep's cells in transit (gpujob.sweep.rebalance): one SSH command per
origin machine, the verdicts of phase 2 (gpujob.sweep.evidence), then the sweep expanded again with
them; under `watch`, the proven outcomes are kept in the placement record at once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpujob.sweep.evidence import Evidence, decide, evidence_command, parse_evidence, started_there
from gpujob.sweep.expand import first_of_group
from gpujob.sweep.rebalance import LANDS, LEAVES, STAYS, WAITS, Move


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
    out: list[Any] = []
    done: set[tuple[str, str]] = set()
    for ls in loaded:
        q = getattr(ls, "sweep", None)
        if q is None:
            out.append(ls)
            continue
        group = first_of_group(ls, loaded, done)
        if group is None:
            continue
        # the cells in transit, and the cells proposed to leave now: one read tells whether each
        # origin started them (a proposed cell its origin started is not moved at all)
        if not any(m.state in (WAITS, LEAVES) for m in q.moves) or q.origin is None:
            out += group
            continue
        again = await _settled(ls, q, group, live, providers, ssh, timeout, keep)
        if keep and again:
            from gpujob.state import open_store

            note_verdicts(open_store(ls.path), q.sweep_job, again[0].sweep.moves)
        out += again
    return out


async def _settled(
    ls: Any, q: Any, group: Sequence[Any], live: Any, providers: Mapping[str, Any], ssh: Any, timeout: float,
    keep: bool,
) -> list[Any]:  # fmt: skip
    """The sweep expanded again with the verdicts of its origins' reads. A cell the origin started is
    not proposed, and the next cell proposed in its place is read in turn, until every move proposed
    was read: a proposed move nobody read could be a cell that ran already (its record not pulled yet),
    whose weight on its target then moves the target's own cells elsewhere. Under watch (`keep`) no move
    lands on a queue with a machine: watch would hold it there (held_for_watch) while that queue drains."""
    import asyncio

    from gpujob.sweep.expand import expand_loaded

    width = max([q.machines, q.queues, *(o.sweep.n for o in group)])
    closed = {n for n in range(1, width + 1) if _queue_exists(ls, q, n, live)} if keep else set()
    verdicts: dict[str, tuple[str, str]] = {}
    running: dict[int, bool] = {}
    seen: dict[str, Move] = {}
    moves, again = q.moves, list(group)
    for _ in range(len(q.all_cells) + 1):  # each round reads at least one more cell
        fresh = [m for m in moves if m.state in (WAITS, LEAVES) and m.cell not in seen]
        if not fresh:
            break
        seen.update({m.cell: m for m in fresh})
        origins = sorted({m.origin for m in fresh})
        reads = await asyncio.gather(
            *(
                _read(ls, q, n, [m.cell for m in fresh if m.origin == n], live, providers, ssh, timeout)
                for n in origins
            )
        )
        for n, (up, ev, why) in zip(origins, reads, strict=True):
            running[n] = running.get(n, False) or up
            for m in fresh:
                if m.origin != n:
                    continue
                if m.state == WAITS:
                    verdicts[m.cell] = decide(m.cell, n, machine_running=up, evidence=ev, why_unread=why)
                elif started_there(ev, m.cell):
                    verdicts[m.cell] = (STAYS, f"q{n} started it already")
        waiting = list(seen.values())
        shown = _bounded(ls, q, waiting, verdicts, running, live)
        if keep:
            made = {m.to for m in waiting if _queue_exists(ls, q, m.to, live)}
            shown = held_for_watch(shown, waiting, made)
        again = [replace(one, project=ls.project) for one in expand_loaded(q.origin, shown, closed)]
        moves = again[0].sweep.moves if again else ()
    return again


def _bounded(
    ls: Any, q: Any, waiting: Sequence[Move], verdicts: dict[str, tuple[str, str]], running: dict[int, bool],
    live: Any,
) -> dict[str, tuple[str, str]]:  # fmt: skip
    """The wait of a cell whose origin does not run is bounded (gpujob.sweep.stranded)."""
    import os

    from gpujob.state import open_store
    from gpujob.sweep.assign import read_record
    from gpujob.sweep.stranded import judge, stranded_after

    origins = {m.origin for m in waiting}
    exists = {n: _queue_exists(ls, q, n, live) for n in origins}
    record = read_record(open_store(ls.path), q.sweep_job)
    return judge(verdicts, waiting, job=q.sweep_job, running=running, exists=exists, record=record,
                 now=live.read_at, after_s=stranded_after(os.environ))  # fmt: skip


def held_for_watch(
    verdicts: Mapping[str, tuple[str, str]], waiting: Sequence[Move], made: Iterable[int]
) -> dict[str, tuple[str, str]]:
    """Watch lands cells on a queue only when it can start that queue with all of them: a cell landing on
    a queue whose machine exists already (its queue file placed without the cell) would sit there unrun
    until a version with it is placed, and a queue created for the first proven cell would be that case
    for the next one. Those cells wait, saying why (`gpujob apply` lands and places them); watch itself
    proposes no move onto a queue whose machine exists (`closed`)."""
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
    from gpujob.naming import machines, queue_job

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

    from gpujob.naming import machines, queue_job

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
