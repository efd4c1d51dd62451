"""The `sweep:` block: queues (machines), cells (a matrix or a list) and optional estimates."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator, Field, PlainSerializer, WithJsonSchema, field_validator, model_validator

from gpujob.jobfile.rules import DURATION_PATTERN, ENV_NAME_PATTERN, format_duration, parse_duration
from gpujob.model import Model

_Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"type": "string", "pattern": DURATION_PATTERN, "examples": ["20m", "2h"]}),
]
MAX_CELLS = 1000
MAX_MACHINES = 64


class SweepSpec(Model):
    """A sweep: every cell runs run.command once with its values in the environment, the cells split
    over `machines` queues by estimated cost (docs/sweeps.md)."""

    machines: int = Field(
        ge=1,
        le=MAX_MACHINES,
        description="Queues, one per machine (gpujob-<job>--q<N>--<project>), run at once.",
    )
    min_machines: int | None = Field(
        None,
        ge=1,
        le=MAX_MACHINES,
        description="With budget.max_hourly_usd: `machines` is the most, and the sweep runs the most queues "
        "from min_machines up whose running rate fits the cap (the plan says how many and why). Unset: "
        "exactly `machines`, and a sum over the cap is an error.",
    )
    matrix: dict[str, list[str]] | None = Field(
        None, description="Name -> values (strings); the cartesian product is the set of cells."
    )
    cells: list[dict[str, str]] | None = Field(
        None, description="The cells as a list of name -> value maps (instead of matrix)."
    )
    est: _Duration | None = Field(
        None, description="Estimated run time of one cell (for the split over queues and the plan's cost)."
    )
    est_by: dict[str, dict[str, _Duration]] = Field(
        default_factory=dict,
        description="Per matrix value: name -> value -> estimate; a cell takes the largest that matches, else est.",
    )

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, value: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
        for key, values in (value or {}).items():
            _name(key)
            if not values:
                raise ValueError(f"[{key}] has no values: list at least one")
            twice = sorted({v for v in values if values.count(v) > 1})
            if twice:
                raise ValueError(
                    f"[{key}] lists {', '.join(twice)} twice: a cell is one combination of values"
                )
        return value

    @field_validator("cells")
    @classmethod
    def _cells(cls, value: list[dict[str, str]] | None) -> list[dict[str, str]] | None:
        for i, cell in enumerate(value or []):
            if not cell:
                raise ValueError(f"cell {i + 1} has no values")
            for key in cell:
                try:
                    _name(key)
                except ValueError as exc:  # a list entry, not a key of the mapping: say which cell
                    raise ValueError(f"cell {i + 1}, {key}: {str(exc).removeprefix(f'[{key}] ')}") from None
        return value

    @model_validator(mode="after")
    def _one_source(self) -> SweepSpec:
        if (self.matrix is None) == (self.cells is None):
            raise ValueError("a sweep needs exactly one of matrix or cells")
        if self.min_machines is not None and self.min_machines > self.machines:
            raise ValueError(f"min_machines {self.min_machines} is more than machines {self.machines}")
        from gpujob.jobfile.cells import expand

        n = len(expand(self))  # refuses duplicate cells
        if n > MAX_CELLS:
            raise ValueError(f"{n} cells; at most {MAX_CELLS}")
        return self


def _name(key: str) -> None:
    import re

    if not re.match(ENV_NAME_PATTERN, key):
        raise ValueError(f"[{key}] is not a valid environment variable name (letters, digits, _)")
    if key.upper().startswith("GPUJOB_"):
        raise ValueError(
            f"[{key}] GPUJOB_* names are gpujob's own (GPUJOB_CELL, GPUJOB_CELL_DIR, ...): name it otherwise"
        )
