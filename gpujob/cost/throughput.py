"""profiles/throughput.yaml: the estimates the forecast falls back on before a job has history of its
own (relative GPU throughput, interruptions per hour, recovery time), each with its source and date."""

from __future__ import annotations

from datetime import date
from functools import cache

from pydantic import Field

from gpujob.model import Model
from gpujob.profile_files import profiles_dir

FILE = "throughput.yaml"


class Relative(Model):
    alias: str
    relative: float = Field(gt=0)
    source: str


class Tiers(Model):
    spot: float = Field(ge=0)
    on_demand: float = Field(ge=0)
    source: str


class Seconds(Model):
    seconds: float = Field(ge=0)
    source: str


class Table(Model):
    reference: str
    as_of: date
    gpus: list[Relative]
    preemptions_per_hour: dict[str, Tiers]
    recovery_s: dict[str, Seconds]

    def relative(self, alias: str) -> Relative | None:
        return next((g for g in self.gpus if g.alias.lower() == alias.lower()), None)

    def where(self) -> str:
        return f"profiles/{FILE} as of {self.as_of}"


@cache
def table() -> Table:
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load((profiles_dir() / FILE).read_text(encoding="utf-8"))
    return Table.model_validate(data)


def scale(step_s: float, measured_on: str, runs_on: str) -> tuple[float, str] | None:
    """Seconds per step on `runs_on` from a measurement on `measured_on`, and the figures used; None
    when the table has either GPU not (the forecast then says it cannot scale)."""
    if measured_on.lower() == runs_on.lower():
        return step_s, ""
    t = table()
    a, b = t.relative(measured_on), t.relative(runs_on)
    if a is None or b is None:
        return None
    return step_s * a.relative / b.relative, f"{runs_on} {b.relative:g}× / {measured_on} {a.relative:g}× A100"
