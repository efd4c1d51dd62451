"""Validation of `fallback:` entries: each one is checked as a whole job (schema, platform traps,
places), every problem pointed at the line inside the entry that causes it, or at the shared block
otherwise; and failover: auto's requirements."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpujob.jobfile.fallback import FAILOVER_KEYS, REPLACED, entry_key
from gpujob.jobfile.model import JobSpec
from gpujob.spec.checks import platform_problems
from gpujob.spec.errmap import validation_problems
from gpujob.spec.places import place_problems
from gpujob.spec.positions import Positions
from gpujob.spec.problem import SpecProblem


def _merged(data: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if k not in FAILOVER_KEYS and k not in REPLACED}
    out.update({k: entry[k] for k in REPLACED if k in entry})
    return out


def _entry_positions(positions: Positions, i: int) -> Positions:
    """Positions of the merged document: the entry's keys at their lines inside fallback[i]."""
    prefix = f"fallback[{i}]."
    out = Positions(
        keys={k: v for k, v in positions.keys.items() if not k.startswith(REPLACED)},
        values={k: v for k, v in positions.values.items() if not k.startswith(REPLACED)},
    )
    for table, dest in ((positions.keys, out.keys), (positions.values, out.values)):
        for k, v in table.items():
            if k.startswith(prefix):
                dest[k[len(prefix) :]] = v
    # A key missing from the entry points at the entry, not at the job's own block of the same name.
    at = positions.key(f"fallback[{i}]")
    for name in REPLACED:
        out.keys.setdefault(name, at)
    return out


def entry_problems(
    data: Mapping[str, Any],
    positions: Positions,
    path: Path,
    display: str,
    known: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
) -> list[SpecProblem]:
    """Every problem of every fallback entry as a whole job (those of the shared blocks that the job's
    own validation reported, `known` (key path, message), once only), and failover: auto's requirements."""
    entries = data.get("fallback")
    if not isinstance(entries, list):
        return []
    problems: list[SpecProblem] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            continue  # the model's own error says so
        extra = [k for k in entry if k not in REPLACED]
        for k in extra:
            line, col = positions.key(f"fallback[{i}].{k}")
            problems.append(
                SpecProblem(
                    display,
                    line,
                    col,
                    f"fallback[{i}].{k}",
                    f"a fallback entry holds only platform, machine and storage; {k} is the job's own",
                    f"move {k} to the top level (it is shared by every platform)",
                )
            )
        merged = _merged(data, entry)
        where = _entry_positions(positions, i)
        found: list[SpecProblem] = []
        try:
            JobSpec.model_validate(merged)
        except ValidationError as exc:
            found += validation_problems(exc, JobSpec, merged, where, display)
        except Exception as exc:  # a validator bug must not show a traceback for bad input
            found.append(
                SpecProblem(display, 1, 1, f"fallback[{i}]", f"cannot validate ({type(exc).__name__})")
            )
        for check in platform_problems(merged) + place_problems(merged, path):
            pos = where.key(check.key_path) if check.at_key else where.value(check.key_path)
            found.append(SpecProblem(display, pos[0], pos[1], check.key_path, check.message, check.hint))
        for p in found:
            if (p.key_path, p.message) not in known:  # the job's own check said it already
                problems.append(_renamed(p, entry_key(p.key_path, i), entry))
    return problems + _auto_problems(data, positions, display)


def _platform(entry: Mapping[str, Any]) -> str:
    return f"fallback on {entry.get('platform', '?')}"


def _renamed(p: SpecProblem, key: str, entry: Mapping[str, Any]) -> SpecProblem:
    return dataclasses.replace(p, key_path=key, message=f"as {_platform(entry)}: {p.message}")


def _auto_problems(data: Mapping[str, Any], positions: Positions, display: str) -> list[SpecProblem]:
    """failover: auto moves money and data unattended: only with checkpoints coming home as they are
    written, and with a price cap on every platform it may land on."""
    if data.get("failover") != "auto" or not data.get("fallback"):
        return []
    out: list[SpecProblem] = []
    line, col = positions.value("failover")

    def refuse(message: str, hint: str) -> None:
        out.append(SpecProblem(display, line, col, "failover", message, hint))

    ck = data.get("checkpoint")
    if not isinstance(ck, Mapping) or ck.get("pull") != "continuous":
        refuse(
            "auto needs checkpoint.pull: continuous (the move carries the newest checkpoint "
            "already pulled and verified here)",
            "set checkpoint.pull: continuous, or use failover: ask",
        )
    budget = data.get("budget")
    capped = isinstance(budget, Mapping) and budget.get("max_hourly_usd") is not None
    if not capped:
        machines = [("machine", data.get("machine"))] + [
            (f"fallback[{i}].machine", e.get("machine") if isinstance(e, Mapping) else None)
            for i, e in enumerate(data.get("fallback") or [])
        ]
        for key, m in machines:
            if not isinstance(m, Mapping) or m.get("max_price_per_hour") is None:
                refuse(
                    f"auto needs a price cap: {key}.max_price_per_hour or budget.max_hourly_usd",
                    "set budget.max_hourly_usd (it caps every platform), or use failover: ask",
                )
    return out
