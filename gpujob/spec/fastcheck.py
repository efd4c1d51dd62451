"""`gpujob validate`'s fast path: decide without pydantic that every file is certainly valid, or say
"not sure" and leave every file to the full loader (gpujob.spec.load.check_files), which alone words
problems. So a valid set of files gets the same "ok" sooner, and every message stays the full path's.

    certainly_valid([Path("job.yaml")]) -> True   # what check_files would find: no problem at all

Sound by construction, never by imitation of messages: it reads each file as the full path's reader
does (yamlsafe.read_text, the same libyaml events and scalar resolution), but takes only a plain
document (scan.plain_document: no tag, anchor, alias, merge key, repeated key or second document), for
which yamlsafe.parse_file builds the same data and finds no problem; then it

- checks the data against fastrules.json, a table derived from the pydantic models (gpujob.spec.fastgen;
  the table carries the sha256 of the model sources, so an edited model switches the fast path off until
  the table is regenerated). Each rule accepts a subset of what pydantic accepts (exact types only: no
  "1" for 1, no 1 for true; finite numbers; text that is valid Unicode), and the models' own validators
  run as the same functions (gpujob.jobfile.rules). A validator the table names but this module does not
  implement, or whose source changed since (the hashes in FIELD_VALIDATORS and MODEL_VALIDATORS),
  switches the fast path off as well;
- runs the same platform checks (spec.checks) on the profile's facts (gpujob.profile_facts), and the
  same place checks (spec.places);
- requires every job name to be used once, and registers run.secrets exactly as check_files does.

Anything else (any problem, any error, an unusual shape) is "not sure". GPUJOB_VALIDATE_FULL=1 forces
the full path (the tests compare both).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from gpujob.jobfile import rules

ENV_FULL = "GPUJOB_VALIDATE_FULL"
TABLE = Path(__file__).with_name("fastrules.json")
FORMAT = 1
_PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent


def _pull_to(value: str) -> str:
    return rules.checked_path(value, local=True)


# The models' field validators (gpujob.jobfile.model), each with the first 16 hex digits of the sha256 of
# its source (what fastrules.json records) and the function that does its work here. A validator whose
# source changes must be looked at again here: until its hash is updated, the fast path stays off.
FIELD_VALIDATORS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "MachineSpec._one_or_many": ("d97fabd89bf1d045", rules.one_or_many),
    "StorageSpec._mount_path": ("20c69a64c90b0246", rules.checked_path),
    "CheckpointSpec._dir_path": ("c1861b1933db0a17", rules.checked_path),
    "CheckpointSpec._pull_to_path": ("131f871a5a367ec7", _pull_to),
    "OutputsSpec._output_paths": ("737b7fe64d06fce5", rules.output_paths),
    "OutputsSpec._pull_to_path": ("131f871a5a367ec7", _pull_to),
    "CheckpointSpec._verify_placement": ("605bd9fb4feb509b", rules.verify_command),
    "SyncSpec._src_path": ("f509088fb7ff1df1", rules.sync_src),
    "SyncSpec._dest_path": ("b99bbf2dbc78541e", rules.checked_path),
    "SyncSpec._deny_patterns": ("513df125a4d3868b", rules.deny_patterns),
    "RunSpec._env_names": ("5b8519d5f13983a2", rules.env_names),
    "RunSpec._secret_names": ("acab129922aecfd9", rules.secret_names),
}


class _Unsure(Exception):
    """The fast path cannot vouch for this input."""


Check = Callable[[Any], bool]


class Rules:
    """fastrules.json, compiled into one check per model and field type, for plain data (what
    yamlsafe.parse_file builds). A check answers True only for what the model accepts too."""

    def __init__(self, table: dict[str, Any]) -> None:
        self.root: str = table["root"]
        self.models: dict[str, Any] = table["models"]
        known = {**FIELD_VALIDATORS, **MODEL_VALIDATORS}
        for model in self.models.values():
            named = [v for f in model["fields"].values() for v in f.get("before", []) + f.get("after", [])]
            for validator in named + model["validators"]:
                entry = known.get(validator["name"])
                if entry is None or entry[0] != validator["source"]:
                    raise _Unsure(f"no fast rule for {validator['name']} as it is now")
        self._checks: dict[str, Check] = {}
        for name in self.models:
            self._checks[name] = self._model(name)
        self.valid: Check = self._checks[self.root]

    def default(self, model: str, data: dict[str, Any], name: str) -> Any:
        """The value of field `name` of a checked mapping: as written, else the model's default."""
        return data[name] if name in data else self.models[model]["fields"][name]["default"]

    def _model(self, name: str) -> Check:
        model = self.models[name]
        required = frozenset(k for k, f in model["fields"].items() if f["required"])
        # key -> (before-validators, type check, after-validators); a key not here is unknown, and every
        # model forbids unknown keys (fastgen makes sure)
        fields = {
            key: (
                [FIELD_VALIDATORS[v["name"]][1] for v in f.get("before", [])],
                self._type(f["type"]),
                [FIELD_VALIDATORS[v["name"]][1] for v in f.get("after", [])],
            )
            for key, f in model["fields"].items()
        }
        cross = [MODEL_VALIDATORS[v["name"]][1] for v in model["validators"]] + LOAD_CHECKS.get(name, [])

        def check(data: Any) -> bool:
            if type(data) is not dict or not required <= data.keys():
                return False
            for key, value in data.items():
                field = fields.get(key)
                if field is None:
                    return False
                before, valid, after = field
                for validator in before:
                    value = validator(value)
                if not valid(value):
                    return False
                for validator in after:
                    try:
                        validator(value)
                    except ValueError:
                        return False
            return all(rule(self, data) for rule in cross)

        return check

    def _type(self, node: dict[str, Any]) -> Check:
        kind = node["kind"]
        if kind == "str":
            return _text(node)
        if kind == "none":
            return lambda value: value is None
        if kind == "literal":
            choices = [(type(v), v) for v in node["values"]]
            return lambda value: any(type(value) is t and value == v for t, v in choices)
        if kind == "int":
            within = _bounds(node)
            return lambda value: type(value) is int and within(value)
        if kind == "float":
            return _number(node)
        if kind == "bool":
            return lambda value: type(value) is bool
        if kind == "model":
            name = node["name"]
            return lambda value: self._checks[name](value)
        if kind == "list":
            items, fits = self._type(node["items"]), _length(node)
            return lambda value: type(value) is list and fits(value) and all(map(items, value))
        if kind == "dict":
            keys, values = self._type(node["keys"]), self._type(node["values"])
            return lambda value: (
                type(value) is dict and all(map(keys, value)) and all(map(values, value.values()))
            )
        if kind == "instant":
            return _instant
        if kind == "duration":
            minimum = node.get("minimum_s")
            return _duration if minimum is None else lambda value: _duration(value, float(minimum))
        if kind == "union":
            nullable = {"kind": "none"} in node["of"]
            branches = [self._type(b) for b in node["of"] if b != {"kind": "none"}]
            if len(branches) == 1:
                (only,) = branches
                return lambda value: (nullable and value is None) or only(value)
            return lambda value: (nullable and value is None) or any(branch(value) for branch in branches)
        raise _Unsure(f"no fast rule for a {kind}")


def _text(node: dict[str, Any]) -> Check:
    fits = _length(node)
    pattern = node.get("pattern")
    search = re.compile(pattern).search if pattern is not None else None
    # Python's `$` also matches before a final newline; pydantic's (Rust) regex engine does not.
    dollar = pattern is not None and "$" in pattern

    def check(value: Any) -> bool:
        if type(value) is not str or not fits(value):
            return False
        if not value.isascii():  # pydantic refuses a lone surrogate (YAML's "\ud800" escape makes one)
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return False
        if search is None:
            return True
        if dollar and value.endswith("\n"):
            return False
        return search(value) is not None

    return check


def _number(node: dict[str, Any]) -> Check:
    within = _bounds(node)

    def check(value: Any) -> bool:
        if type(value) is not int and type(value) is not float:
            return False
        try:
            number = float(value)
        except OverflowError:
            return False
        return math.isfinite(number) and within(number)

    return check


_INSTANT = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})\Z")


def _instant(value: Any) -> bool:
    """An ISO 8601 time with its zone, in the one plain form (anything else: not sure)."""
    from datetime import datetime

    if type(value) is not str or not _INSTANT.match(value):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _duration(value: Any, minimum_s: float | None = None) -> bool:
    try:
        rules.parse_duration(value) if minimum_s is None else rules.parse_duration(value, minimum_s)
    except (ValueError, OverflowError):
        return False
    return True


def _length(node: dict[str, Any]) -> Check:
    low, high = node.get("min_length"), node.get("max_length")
    if low is None and high is None:
        return lambda value: True
    return lambda value: (low is None or len(value) >= low) and (high is None or len(value) <= high)


def _bounds(node: dict[str, Any]) -> Check:
    ge, gt, le, lt = node.get("ge"), node.get("gt"), node.get("le"), node.get("lt")
    return lambda n: (
        (ge is None or n >= ge)
        and (gt is None or n > gt)
        and (le is None or n <= le)
        and (lt is None or n < lt)
    )


def _auto_needs_inputs(r: Rules, data: dict[str, Any]) -> bool:
    ck = r.default("JobSpec", data, "checkpoint")
    if ck is None:
        return True
    interval, mtbf, write_time = (
        r.default("CheckpointSpec", ck, k) for k in ("interval", "mtbf", "write_time")
    )
    return rules.auto_interval_problem(interval, mtbf, write_time) is None


def _parked_keeps_checkpoints(r: Rules, data: dict[str, Any]) -> bool:
    storage, ck = r.default("JobSpec", data, "storage"), r.default("JobSpec", data, "checkpoint")
    problem = rules.parked_problem(
        r.default("JobSpec", data, "state"),
        data["platform"],
        r.default("StorageSpec", storage, "network_volume"),
        r.default("StorageSpec", storage, "mount"),
        ck["dir"] if ck is not None else None,
    )
    return problem is None


# JobSpec's model validators, as FIELD_VALIDATORS (on the checked mapping, defaults filled in).
def _no_sweep(r: Rules, data: dict[str, Any]) -> bool:
    """The fast path vouches only for a job without a sweep (gpujob.layout.checks judges the rest, at
    load: gpujob.spec.load), and without the {cell} placeholder a job without one refuses."""
    outputs = r.default("JobSpec", data, "outputs")
    paths = outputs["paths"] if outputs is not None else []
    return r.default("JobSpec", data, "sweep") is None and not any("{cell}" in p for p in paths)


def _launcher_once(r: Rules, data: dict[str, Any]) -> bool:
    run = r.default("JobSpec", data, "run")
    return (
        run is None or rules.launcher_problem(r.default("RunSpec", run, "launcher"), run["command"]) is None
    )


def _sweep_unsure(value: Any) -> Any:
    raise _Unsure("a sweep is left to the full loader")


FIELD_VALIDATORS.update(
    {
        "SweepSpec._matrix": ("cb6ff18355e62d96", _sweep_unsure),
        "SweepSpec._cells": ("15948f89b3ad74a5", _sweep_unsure),
    }
)

# What the full loader checks of a model beyond its validators (gpujob.spec.load), as the fast path must.
LOAD_CHECKS: dict[str, list[Callable[[Rules, dict[str, Any]], bool]]] = {"JobSpec": [_no_sweep]}

MODEL_VALIDATORS: dict[str, tuple[str, Callable[[Rules, dict[str, Any]], bool]]] = {
    "JobSpec._auto_needs_inputs": ("7da6e40ad889d32d", _auto_needs_inputs),
    "JobSpec._parked_keeps_checkpoints": ("bd8d9f77169ed60f", _parked_keeps_checkpoints),
    "SweepSpec._one_source": ("0c6c406fa8a0087c", lambda r, data: False),
    "JobSpec._launcher_once": ("e71b97dbcaef120a", _launcher_once),
}


@cache
def load_rules() -> Rules | None:
    """The table, or None when it does not match the models as they are (or cannot be read)."""
    import hashlib

    try:
        table = json.loads(TABLE.read_text(encoding="utf-8"))
        if table.get("format") != FORMAT:
            return None
        for rel, digest in table["sources"].items():
            if hashlib.sha256((_PACKAGE_PARENT / rel).read_bytes()).hexdigest() != digest:
                return None
        return Rules(table)
    except (OSError, ValueError, KeyError, TypeError, _Unsure):
        return None


def certainly_valid(paths: Iterable[Path]) -> bool:
    """True when check_files(paths) would find no problem at all; then the secrets run.secrets names are
    registered as check_files registers them. False: not sure (check_files decides, and says why)."""
    if os.environ.get(ENV_FULL, "").strip() not in ("", "0"):
        return False
    try:
        secrets = _secrets_when_valid([Path(p) for p in paths])
    except Exception:  # the fast path never fails a command: the full one runs instead
        return False
    if secrets is None:
        return False
    from gpujob.redact import register

    for names in secrets:  # check_files' order: file by file, each file's list in order
        for name in names:
            register(os.environ.get(name))
    return True


def _secrets_when_valid(paths: list[Path]) -> list[list[str]] | None:
    """Each file's run.secrets when every file is certainly valid and every job name is used once."""
    from gpujob.profile_facts import ProfileFacts, load_facts
    from gpujob.spec.checks import platform_problems
    from gpujob.spec.places import place_problems
    from gpujob.spec.scan import plain_document
    from gpujob.spec.yamlsafe import _plain, read_text

    r = load_rules()
    if r is None:
        return None
    facts: dict[str, ProfileFacts] = {}

    def profile(platform: str) -> ProfileFacts:
        if platform not in facts:
            facts[platform] = load_facts(platform)
        return facts[platform]

    names: set[str] = set()
    out: list[list[str]] = []
    for path in paths:
        # What yamlsafe.parse_file reads, for a plain document (scan.plain_document; anything else: None).
        text = read_text(path, str(path))[0]
        document = plain_document(text) if text is not None else None
        if type(document) is not dict:
            return None
        data = _plain(document)
        if data.get("fallback") or data.get("failover") == "auto":
            return None  # entries are checked as whole jobs (gpujob.spec.fallback): the full path's
        if not r.valid(data):
            return None
        if platform_problems(data, profile) or place_problems(data, path):
            return None
        if data["name"] in names:
            return None
        names.add(data["name"])
        run = data.get("run")
        out.append(list(r.default("RunSpec", run, "secrets")) if run is not None else [])
    return out
