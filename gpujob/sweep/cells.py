"""Cells: expansion of a matrix or a list, stable readable names, estimates, and the split over queues
by estimated cost (longest first onto the least loaded queue), so queues finish near-simultaneously."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_EST_S = 600.0  # a cell with no estimate counts as 10 min: the split is then by count
_SLUG = re.compile(r"[^a-z0-9.]+")


@dataclass(frozen=True)
class Cell:
    name: str  # GPUJOB_CELL: readable from the values, unique by a short hash of them
    values: tuple[tuple[str, str], ...]  # in the order written
    est_s: float

    @property
    def env(self) -> dict[str, str]:
        return dict(self.values)


def cell_name(values: dict[str, str]) -> str:
    """'lr-1e-3.seed-1.3f9a2c' — lower-case slugs of name and value, and 6 hex of their sha256 so two
    cells whose slugs meet ('1e-3' and '1E-3') still get distinct dirs."""
    digest = hashlib.sha256(json.dumps(sorted(values.items())).encode()).hexdigest()[:6]
    parts = [f"{_slug(k)}-{_slug(v)}" for k, v in values.items()]
    readable = ".".join(parts)[:60].strip(".-")
    return f"{readable}.{digest}" if readable else digest


def _slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-.") or "x"


def expand(sweep: Any) -> list[Cell]:
    """The cells of a SweepSpec, in matrix order (the last name varies fastest) or list order."""
    if sweep.matrix is not None:
        keys = list(sweep.matrix)
        rows = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*sweep.matrix.values())]
    else:
        rows = [dict(c) for c in sweep.cells or []]
    out: list[Cell] = []
    seen: dict[str, dict[str, str]] = {}
    for row in rows:
        name = cell_name(row)
        if name in seen:
            raise ValueError(f"two cells have the same values {row}")
        seen[name] = row
        out.append(Cell(name=name, values=tuple(row.items()), est_s=_est(sweep, row)))
    return out


def _est(sweep: Any, row: dict[str, str]) -> float:
    by = [
        d.total_seconds()
        for key, per in (sweep.est_by or {}).items()
        for value, d in per.items()
        if row.get(key) == value
    ]
    if by:
        return max(by)
    return sweep.est.total_seconds() if sweep.est is not None else DEFAULT_EST_S


def split(cells: list[Cell], queues: int, placed: Mapping[str, int] | None = None) -> list[list[Cell]]:
    """Cells over `queues` queues by estimated cost: longest first, each onto the queue with the least
    estimated time so far (ties: the lower queue). Each queue keeps its cells in the sweep's order, so a
    queue file reads like the matrix. Never more queues than cells.

    `placed` (cell -> queue number, gpujob.sweep.assign): cells already placed on a queue stay there,
    whatever `queues`, the estimates or the other cells now say: only that machine's state knows whether
    it ran them (the seed's "guard scope must contain the scheduling scope"), so a move could run a
    finished cell again. Only the cells never placed are split, over the `queues` queues, onto what the
    placed ones already weigh. A queue above `queues` that holds placed cells stays; queue N is
    list[N-1], empty when it holds nothing."""
    placed = placed or {}
    kept = {c.name: placed[c.name] for c in cells if placed.get(c.name, 0) >= 1}
    fresh = [c for c in cells if c.name not in kept]
    n = max(1, min(queues, len(fresh))) if not kept else max(1, queues)
    width = max(n, max(kept.values(), default=0))
    loads = [0.0] * width
    owner: dict[str, int] = {}
    by_name = {c.name: c for c in cells}
    for name, q in kept.items():
        owner[name] = q - 1
        loads[q - 1] += by_name[name].est_s
    order = {c.name: i for i, c in enumerate(cells)}
    for cell in sorted(fresh, key=lambda c: (-c.est_s, order[c.name])):
        q = min(range(n), key=lambda i: (loads[i], i))
        loads[q] += cell.est_s
        owner[cell.name] = q
    out = [[c for c in cells if owner[c.name] == q] for q in range(width)]
    while len(out) > 1 and not out[-1]:
        out.pop()
    return out
