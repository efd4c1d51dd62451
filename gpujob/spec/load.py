"""Load job files: every problem in every file, each pinned to file:line:col and a key path.

    load_specs([Path("job.yaml")]) -> [LoadedSpec]     raises SpecError(problems) listing them all

Bad input never raises anything but SpecError: malformed YAML, duplicate keys, unknown keys, wrong
types, bad durations and sizes, platform options that do not exist, YAML bombs, object tags, huge or
non-UTF-8 files all become SpecProblems.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpujob.errors import SpecError
from gpujob.jobfile.fallback import entry_key
from gpujob.jobfile.model import JobSpec
from gpujob.model import SourceRef
from gpujob.spec.checks import platform_problems
from gpujob.spec.errmap import validation_problems
from gpujob.spec.fallback import entry_problems
from gpujob.spec.files import discover_job_files, no_job_files_hint
from gpujob.spec.followon import mark_follow_ons
from gpujob.spec.places import place_problems
from gpujob.spec.positions import Positions, parent_path
from gpujob.spec.problem import SpecProblem
from gpujob.spec.yamlsafe import parse_file

__all__ = [
    "LoadedSpec",
    "SpecProblem",
    "check_files",
    "discover_job_files",
    "load_spec",
    "load_specs",
    "resolve_job_files",
]


@dataclass(eq=False)  # plain attributes, so it satisfies the planner's SpecSource protocol
class LoadedSpec:
    spec: JobSpec
    path: Path
    digest: str  # sha256 of the file's bytes
    positions: Positions = field(default_factory=Positions, repr=False)
    # The id of the project (state dir) the job belongs to: gpujob.project.with_projects sets it;
    # None until then, or when no project was ever made for it (then it owns nothing live).
    project: str | None = None
    # Where the job runs now (gpujob.project.placement.placed, with the project): -1 its own platform, i its
    # fallback[i], when `spec` is that entry's whole job and `declared` the job file's own.
    entry: int = -1
    declared: JobSpec | None = field(default=None, repr=False)
    # Platforms the job's failover record names that the job file no longer lists (its fallback entry
    # was removed): read only for what the job left there, whose teardown alone is ever planned.
    strays: tuple[str, ...] = ()
    # A queue of a sweep (gpujob.layout.queues.Queue) when this spec is one; the file's own spec is not kept.
    sweep: Any = None
    # Set on a job the file no longer names whose resources still run or bill (gpujob.plan.unnamed): why
    # (renamed, turned into a sweep, ...); its spec is the file's with that name and state: absent.
    unnamed: str = ""

    def source(self, key_path: str) -> SourceRef | None:
        """Where key_path ("machine.spot", "machine.gpu[1]") is written; an absent key resolves to its
        closest written parent. None only when nothing of the path is in the file. A job placed on a
        fallback entry has its platform, machine and storage written inside that entry."""
        path = key_path.strip(".")
        if self.entry >= 0:
            path = entry_key(path, self.entry)
        probe = path
        while probe and probe not in self.positions.keys and probe not in self.positions.values:
            probe = parent_path(probe)
        if not probe:
            return None
        line, col = self.positions.key(probe)
        return SourceRef(file=str(self.path), line=line, column=col, key=path)


def _covered(path: str, taken: set[str]) -> bool:
    """A key with a model error already, or under one: a second complaint about it is noise."""
    probe = path
    while probe:
        if probe in taken:
            return True
        probe = parent_path(probe)
    return False


def _load_one(path: Path) -> tuple[LoadedSpec | None, list[SpecProblem]]:
    display = str(path)
    parsed = parse_file(path, display)
    if parsed.data is None:
        return None, parsed.problems
    problems = list(parsed.problems)
    spec: JobSpec | None = None
    try:
        spec = JobSpec.model_validate(parsed.data)
    except ValidationError as exc:
        problems += validation_problems(exc, JobSpec, parsed.data, parsed.positions, display)
    except Exception as exc:  # a validator bug must still not show a traceback for bad input
        problems.append(SpecProblem(display, 1, 1, "", f"cannot validate this file ({type(exc).__name__})"))
    if spec is not None:
        problems += _sweep_problems(spec, parsed.positions, display)
    taken = {p.key_path for p in problems}
    for check in platform_problems(parsed.data) + place_problems(parsed.data, path):
        if _covered(check.key_path, taken):
            continue
        pos = parsed.positions.key(check.key_path) if check.at_key else parsed.positions.value(check.key_path)
        problems.append(SpecProblem(display, pos[0], pos[1], check.key_path, check.message, check.hint))
    if isinstance(parsed.data, dict) and parsed.data.get("fallback"):
        known = {(p.key_path, p.message) for p in problems}
        problems += entry_problems(parsed.data, parsed.positions, path, display, known)
    if spec is None and not problems:  # a refusal that produced no message must still refuse the file
        problems.append(SpecProblem(display, 1, 1, "", "cannot validate this file"))
    problems.sort(key=lambda p: (p.line, p.col, p.key_path, p.message))
    problems = mark_follow_ons(problems)
    if problems or spec is None:
        return None, problems
    return LoadedSpec(spec=spec, path=path, digest=parsed.digest, positions=parsed.positions), []


def _sweep_problems(spec: JobSpec, positions: Any, display: str) -> list[SpecProblem]:
    """What a job file with `sweep:` (or a {cell} path) must hold beyond its schema (gpujob.layout.checks:
    the queues its cells make must fit), placed at the key it names, as a model validator's would be."""
    from gpujob.layout.checks import sweep_problem
    from gpujob.spec.errmap import MODEL_HINTS, split_key

    problem = sweep_problem(spec)
    if problem is None:
        return []
    key_path, message = split_key(problem, JobSpec.model_fields)  # `fallback: ...` at its key too
    line, col = positions.key(key_path) if key_path else positions.value(key_path)
    return [SpecProblem(display, line, col, key_path, message, MODEL_HINTS.get(key_path))]


def _register_secrets(spec: JobSpec) -> None:
    """The values behind run.secrets are known from here on, so no message can show them."""
    import os

    from gpujob.redact import register

    for name in spec.run.secrets if spec.run else []:
        register(os.environ.get(name))


def load_spec(path: Path) -> LoadedSpec:
    """One job file, or SpecError with every problem in it."""
    return load_specs([path])[0]


def load_specs(paths: Iterable[Path]) -> list[LoadedSpec]:
    """Every file, in order; SpecError listing every problem across all of them when any has one."""
    loaded: list[LoadedSpec] = []
    problems: list[SpecProblem] = []
    names: dict[str, LoadedSpec] = {}
    for path in paths:
        spec, found = _load_one(Path(path))
        problems += found
        if spec is None:
            continue
        clash = _name_clash(spec, names)
        if clash is not None:
            problems.append(clash)
            continue
        loaded.append(spec)
    if problems:
        raise SpecError(problems)
    from gpujob.spec.expansion import expanded

    return [one for spec in loaded for one in expanded(spec)]


def check_files(paths: Iterable[Path]) -> list[SpecProblem]:
    """What `gpujob validate` reports: each file's own problems, and only when no file has any, the job
    names used twice. The same problems as load_specs of each file and then of all of them, but each
    file is read and validated once (that second pass doubled the cost of every file)."""
    loaded: list[LoadedSpec] = []
    problems: list[SpecProblem] = []
    for path in paths:
        spec, found = _load_one(Path(path))
        problems += found
        if spec is not None:
            loaded.append(spec)
    if problems:
        return problems
    names: dict[str, LoadedSpec] = {}
    return [clash for spec in loaded if (clash := _name_clash(spec, names)) is not None]


def _name_clash(spec: LoadedSpec, names: dict[str, LoadedSpec]) -> SpecProblem | None:
    """The problem when an earlier spec in names took this job name; else the spec joins names and its
    secrets are registered."""
    first = names.get(spec.spec.name)
    if first is not None:
        ref = spec.source("name")
        line, col = (ref.line, ref.column) if ref else (1, 1)
        return SpecProblem(
            str(spec.path),
            line,
            col,
            "name",
            f"job name '{spec.spec.name}' is also used by {first.path}",
            "each job needs its own name; resources are named after it",
        )
    names[spec.spec.name] = spec
    _register_secrets(spec.spec)
    return None


def resolve_job_files(paths: Sequence[Path], *, command: str = "plan") -> list[Path]:
    """The job files a command means: the paths given (a folder stands for the job files in it), else the
    ones discovered under the current directory. None at all is an error that says how to name one."""
    from gpujob.errors import GpujobError

    if paths:
        out: list[Path] = []
        for p in paths:
            out += discover_job_files(p) if p.is_dir() else [p]
        return out
    found = discover_job_files(Path.cwd())
    if not found:
        raise GpujobError(
            "no job files found here (job.yaml, *.job.yaml or jobs/*.yaml)", hint=no_job_files_hint(command)
        )
    return [p.relative_to(Path.cwd()) for p in found]
