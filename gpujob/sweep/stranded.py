"""A cell in transit whose origin never runs again (gpujob.sweep.rebalance, phase 2).

A cell on its way lands only when its origin machine, running, shows it never started it; while that
machine is not running the cell waits. An origin that never runs again (terminated, or stopped for good
outside gpujob) would leave it waiting for ever, run nowhere. So the wait is bounded: once the cell has
been in transit STRANDED_S (GPUJOB_SWEEP_STRANDED_AFTER seconds) with its origin not running, it is
**stranded**: the plan says so on both queues, `gpujob watch` says it in a `cell-stranded` event, and
both name the way on, a command a person runs:

    gpujob apply --land <sweep>.<cell>

which places the cell on the queue it was bound for (the person vouches that its origin never ran it:
only that machine's disk could have told), after which `gpujob apply` runs it there. Nothing lands by
itself: a cell run on two machines is the one thing a sweep must never do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from gpujob.errors import GpujobError
from gpujob.sweep.rebalance import STRANDED, WAITS

STRANDED_S = 1800.0
ENV = "GPUJOB_SWEEP_STRANDED_AFTER"  # seconds, overriding STRANDED_S
EVENT = "cell-stranded"


def stranded_after(env: Mapping[str, str]) -> float:
    try:
        return float(env.get(ENV, "") or STRANDED_S)
    except ValueError:
        return STRANDED_S


def land_command(job: str, cell: str) -> str:
    return f"gpujob apply --land {job}.{cell}"


def since_of(record: Any, cell: str) -> datetime | None:
    """When the cell was marked leaving (records from before `since` was kept: the record's last write)."""
    if record is None or cell not in record.leaving:
        return None
    return record.leaving[cell].since or record.at


def judge(
    verdicts: Mapping[str, tuple[str, str]],
    waiting: Sequence[Any],
    *,
    job: str,
    running: Mapping[int, bool],
    exists: Mapping[int, bool],
    record: Any,
    now: datetime,
    after_s: float = STRANDED_S,
) -> dict[str, tuple[str, str]]:
    """The verdicts with each waiting cell whose origin is not running, in transit for `after_s` or
    more, made STRANDED (why, and the command that is the way on)."""
    out = dict(verdicts)
    for m in waiting:
        if m.state != WAITS or out.get(m.cell, (WAITS, ""))[0] != WAITS or running.get(m.origin, True):
            continue
        since = since_of(record, m.cell)
        if since is None or now - since < timedelta(seconds=after_s):
            continue
        q = f"q{m.origin}"
        how = "is gone (terminated)" if not exists.get(m.origin, False) else "has not run since"
        age = _age((now - since).total_seconds())
        out[m.cell] = (
            STRANDED,
            f"in transit {age} (since {since:%Y-%m-%d %H:%M} UTC) and {q}'s machine {how}: only its disk could "
            f"prove {q} never started the cell, so it lands by itself only once {q} runs again. To run it on "
            f"q{m.to} (you vouch {q} never ran it): `{land_command(job, m.cell)}`, then `gpujob apply`",
        )
    return out


def _age(seconds: float) -> str:
    m = round(seconds / 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m"


def land(loaded: Sequence[Any], live: Any, addresses: Sequence[str], *, now: datetime) -> list[str]:
    """`gpujob apply --land <sweep>.<cell>`: each cell in transit placed on the queue it was bound for,
    when its origin's machine is not running now (a running origin proves or refuses it by itself).
    Refused, changing nothing, for an address that names no cell in transit of these job files."""
    from gpujob.naming import machines, queue_job
    from gpujob.state import open_store
    from gpujob.sweep.assign import read_record, update_assignment

    files: dict[str, Any] = {}
    for ls in loaded:
        q = getattr(ls, "sweep", None)
        if q is not None:
            files.setdefault(q.sweep_job, ls)
        elif getattr(ls.spec, "sweep", None) is not None:
            files.setdefault(ls.spec.name, ls)
    todo: list[tuple[Any, str, str, int, int]] = []
    for address in addresses:
        job, _, cell = address.partition(".")
        ls = files.get(job)
        record = read_record(open_store(ls.path), job) if ls is not None else None
        lv = record.leaving.get(cell) if record is not None else None
        if ls is None or lv is None:
            raise GpujobError(
                f"--land {address}: no cell {cell!r} of sweep {job!r} is in transit here; nothing was changed",
                hint="`gpujob plan` names each stranded cell with its --land address (<sweep>.<cell>)",
            )
        kind = "pod" if ls.spec.platform == "runpod" else "machine"
        alive = [
            r
            for r in machines(live.resources, queue_job(job, lv.origin), ls.project)
            if r.kind == kind and r.status in ("running", "pending")
        ]
        if alive:
            raise GpujobError(
                f"--land {address}: q{lv.origin}'s machine {alive[0].name} is {alive[0].status}: it proves by "
                "itself whether it started the cell (the next plan lands it or keeps it there); nothing was changed",
                hint="run `gpujob plan`",
            )
        todo.append((ls, job, cell, lv.origin, lv.to))
    lines = []
    for ls, job, cell, origin, to in todo:

        def change(rec: Any, cell: str = cell, origin: int = origin, to: int = to) -> None:
            lv = rec.leaving.get(cell)
            if lv is not None and (lv.origin, lv.to) == (origin, to):
                del rec.leaving[cell]
                rec.cells[cell] = to

        update_assignment(open_store(ls.path), job, change, now)
        lines.append(
            f"{job}: cell {cell} placed on q{to} (it left q{origin}, whose machine never proved it): "
            "`gpujob apply` runs it there"
        )
    return lines


async def land_live(
    loaded: Sequence[Any], providers: Mapping[str, Any], addresses: Sequence[str], *, now: datetime
) -> list[str]:
    from gpujob.apply.refresh import read_live_state

    live = await read_live_state([ls.spec for ls in loaded], providers)
    if live.read_errors:
        raise GpujobError(
            f"live state is incomplete ({'; '.join(live.read_errors)}); nothing was landed",
            hint="run it again once the platforms answer",
        )
    return land(loaded, live, addresses, now=now)
