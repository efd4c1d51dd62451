"""The cells of a `sweep:` block: the expansion of its matrix or list, each cell's stable readable name
(GPUJOB_CELL) and its estimate, and where a cell lives on the machine (GPUJOB_CELL_DIR, the sweep's
own dir, a cell's checkpoints). What the job file means, no behaviour: the split over queues is
gpujob.sweep.expand's, the wrapper that runs them gpujob.layout.wrapper's."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

from gpujob.naming import sweep_of
from gpujob.quote import remote_path

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


def sweep_dir(mount: str, job: str) -> str:
    return remote_path(f"{mount}/.gpujob/{job}.sweep")


def cell_dir(mount: str, job: str, cell: str) -> str:
    """GPUJOB_CELL_DIR: the cell's results, always an output of its queue."""
    return remote_path(f"{mount}/sweeps/{job}/{cell}")


def cell_checkpoint_dir(ck_dir: str, cell: str) -> str:
    return remote_path(f"{ck_dir}/{cell}")


def cell_of_dir(spec: Any, path: str) -> str | None:
    """The cell whose GPUJOB_CELL_DIR `path` is, when `spec` is a queue of a sweep; else None."""
    of = sweep_of(spec.name)
    if of is None:
        return None
    parent, _, cell = path.rstrip("/").rpartition("/")
    return cell if cell and parent == cell_dir(spec.storage.mount, of[0], "x").rpartition("/")[0] else None


def queue_cells(spec: Any) -> list[str] | None:
    """The cells whose dirs a sweep queue's job covers (its own and those leaving it), from its
    outputs; None for a job that is not a sweep queue."""
    if sweep_of(spec.name) is None or spec.outputs is None:
        return None
    return [c for p in spec.outputs.paths if (c := cell_of_dir(spec, p)) is not None]
