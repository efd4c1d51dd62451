"""A `fallback:` entry is a whole job of its platform: the job file with the entry's platform, machine
and storage in place of its own. Validation checks each one so (schema, platform traps, places) and
points every problem at the line inside the entry that causes it, or at the shared block otherwise."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpujob.spec.problem import SpecProblem

if TYPE_CHECKING:
    from gpujob.jobfile.model import JobSpec
    from gpujob.spec.yamlsafe import Positions

REPLACED = ("platform", "machine", "storage")  # what an entry may hold: all else is the job's own
FAILOVER_KEYS = ("fallback", "failover", "failover_after", "failback")


def effective_spec(spec: JobSpec, entry: int | None) -> JobSpec:
    """The job as it runs on entry `entry` (None or -1: its own platform)."""
    if entry is None or entry < 0:
        return spec
    fb = spec.fallback[entry]
    return spec.model_copy(update={"platform": fb.platform, "machine": fb.machine, "storage": fb.storage})


def chain(spec: JobSpec) -> list[tuple[int, JobSpec]]:
    """Every place the job may run, in order: (-1, its own), then (i, entry i)."""
    return [(-1, spec)] + [(i, effective_spec(spec, i)) for i in range(len(spec.fallback))]


def place_name(spec: JobSpec, entry: int) -> str:
    return spec.platform if entry < 0 else f"{spec.fallback[entry].platform} (fallback[{entry}])"


def _merged(data: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if k not in FAILOVER_KEYS and k not in REPLACED}
    out.update({k: entry[k] for k in REPLACED if k in entry})
    return out


def _entry_positions(positions: Positions, i: int) -> Positions:
    """Positions of the merged document: the entry's keys at their lines inside fallback[i]."""
    from gpujob.spec.yamlsafe import Positions

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


def entry_key(key_path: str, i: int) -> str:
    """Where a key of the job as it runs on entry `i` is written: platform, machine and storage inside
    fallback[i], the shared blocks at the top."""
    head = key_path.split(".", 1)[0].split("[", 1)[0]
    return f"fallback[{i}].{key_path}" if i >= 0 and head in REPLACED else key_path


_OWN_KEY = re.compile(r"(?<![\w.\[\]])((?:machine|storage)\.[a-z_])")


def entry_fixes(loaded: Any, jp: Any) -> Any:
    """The plan of a job placed on entry i, its findings' `fix:` naming the keys where they are written:
    `machine.auto_shutdown` is `fallback[i].machine.auto_shutdown` there (their `at` already is)."""
    i = getattr(loaded, "entry", -1)
    if i < 0:
        return jp

    def fixed(findings: list[Any]) -> list[Any]:
        return [f.model_copy(update={"fix": _OWN_KEY.sub(rf"fallback[{i}].\1", f.fix)}) for f in findings]

    actions = [a.model_copy(update={"findings": fixed(a.findings)}) for a in jp.actions]
    return jp.model_copy(update={"findings": fixed(jp.findings), "actions": actions})


def entry_problems(
    data: Mapping[str, Any],
    positions: Positions,
    path: Path,
    display: str,
    known: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
) -> list[SpecProblem]:
    """Every problem of every fallback entry as a whole job (those of the shared blocks that the job's
    own validation reported, `known` (key path, message), once only), and failover: auto's requirements."""
    from pydantic import ValidationError

    from gpujob.jobfile.model import JobSpec
    from gpujob.spec.checks import platform_problems
    from gpujob.spec.errmap import validation_problems
    from gpujob.spec.places import place_problems

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
    import dataclasses

    return dataclasses.replace(p, key_path=key, message=f"as {_platform(entry)}: {p.message}")


def _auto_problems(data: Mapping[str, Any], positions: Positions, display: str) -> list[SpecProblem]:
    """failover: auto moves money and data unattended: only with checkpoints coming home as they are
    written, and with a price cap on every platform it may land on."""
    if data.get("failover") != "auto" or not data.get("fallback"):
        return []
    out: list[SpecProblem] = []
    line, col = positions.value("failover")
    ck = data.get("checkpoint")
    if not isinstance(ck, Mapping) or ck.get("pull") != "continuous":
        out.append(
            SpecProblem(
                display,
                line,
                col,
                "failover",
                "auto needs checkpoint.pull: continuous (the move carries the newest checkpoint "
                "already pulled and verified here)",
                "set checkpoint.pull: continuous, or use failover: ask",
            )
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
                out.append(
                    SpecProblem(
                        display,
                        line,
                        col,
                        "failover",
                        f"auto needs a price cap: {key}.max_price_per_hour or budget.max_hourly_usd",
                        "set budget.max_hourly_usd (it caps every platform), or use failover: ask",
                    )
                )
    return out


def platforms_of(specs: Any) -> set[str]:
    """Every platform these jobs may run on: their own and their fallback entries'."""
    return {p for s in specs for p in [s.platform, *(f.platform for f in s.fallback)]}


def strays_read(loaded: Any, env: Mapping[str, str] | None = None) -> set[str]:
    """The platforms these jobs' failover records name that their job files no longer list
    (gpujob.failover.where.strays) and whose API key is set: read only for what the jobs left there.
    One without its key is not read (the plan says so) rather than failing the whole read."""
    import os

    from gpujob.config import API_KEY_ENV

    e = os.environ if env is None else env
    wanted = {p for ls in loaded for p in getattr(ls, "strays", ())}
    return {p for p in wanted if e.get(API_KEY_ENV.get(p, ""), "").strip()}


def platforms_read(loaded: Any, env: Mapping[str, str] | None = None) -> set[str]:
    """platforms_of the loaded jobs, plus strays_read."""
    loaded = list(loaded)
    return platforms_of(ls.spec for ls in loaded) | strays_read(loaded, env)
