"""A loaded sweep job file becomes one loaded spec per queue, its cells arranged by what the project's
state says they already did (gpujob.sweep.rebalance); the pure split into queues is gpujob.layout.queues."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpujob.layout.queues import expand, queue_spec, queues


def expand_loaded(
    loaded: Any, verdicts: Mapping[str, tuple[str, str]] | None = None, closed: Iterable[int] = ()
) -> list[Any]:
    """A LoadedSpec with a sweep -> one LoadedSpec per queue (same file, positions and project); any
    other -> itself. `verdicts`: phase 2 of gpujob.sweep.rebalance for cells in transit (cell ->
    (state, why)); without them such a cell waits. `closed`: queues no new move lands on."""
    if getattr(loaded.spec, "sweep", None) is None:
        return [loaded]
    from gpujob.sweep.rebalance import arrange_loaded

    arranged = arrange_loaded(loaded, expand(loaded.spec.sweep), verdicts, closed)
    out = []
    for q in queues(loaded.spec, arranged=arranged):
        q = replace(q, origin=loaded)
        one = replace(loaded, spec=queue_spec(loaded.spec, q))
        one.sweep = q
        out.append(one)
    return out


def first_of_group(ls: Any, loaded: Sequence[Any], done: set[tuple[str, str]]) -> list[Any] | None:
    """The queues of `ls`'s sweep (same file, same sweep job) among `loaded`, the first time one of
    them is met (noted in `done`); None for each later one, whose group was already taken."""
    key = (str(ls.path), ls.sweep.sweep_job)
    if key in done:
        return None
    done.add(key)
    return [
        o for o in loaded if getattr(o, "sweep", None) is not None and (str(o.path), o.sweep.sweep_job) == key
    ]
