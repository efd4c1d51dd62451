"""The value rules of a job file that need no pydantic: durations, names, paths, env entries and the
cross-field rules. gpujob.jobfile.model's validators are thin wrappers around these functions, and
`gpujob validate`'s fast path (gpujob.spec.fastcheck) calls the very same ones, so both judge a value
alike. Every function that checks raises ValueError with the message the user sees.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Any

# ASCII digits only: Python's \d also takes full-width and other scripts' digits (`１s`).
_DURATION_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(s|m|h|d|w)\s*$", re.ASCII)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
DURATION_PATTERN = r"^[0-9]+(\.[0-9]+)?(s|m|h|d|w)$"
_MIN_DURATION_S = 1  # the run is told whole seconds; a shorter cadence or timeout is a typo
# A measured time (checkpoint.write_time) is no cadence: a fast disk writes a checkpoint in 0.3 s. Under
# a millisecond is a typo (and below timedelta's microseconds it would read as zero).
MEASURED_MIN_S = 0.001
_MAX_DURATION_S = 10 * 365 * 86400
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # the first one a path may not contain

# Letters, digits and single dashes between them: "--" separates the parts of a resource name
# (gpujob.naming), so a name may not contain it or end in "-". At most 39 characters (max_length).
NAME_PATTERN = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"
NAME_MAX = 39
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
# A literal value under one of these names is a secret pasted into a file that gets committed and shown.
_SECRET_WORDS = {
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "KEY",
    "APIKEY",
    "CREDENTIAL",
    "CREDENTIALS",
}
_SECRET_VALUE = re.compile(
    r"^(hf_|sk-|sk_live_|rpa_|ghp_|gho_|github_pat_|glpat-|xox[abpr]-|AKIA)[A-Za-z0-9_-]{8,}"
)


def parse_duration(value: Any, minimum_s: float = _MIN_DURATION_S) -> timedelta:
    """'15m', '48h', '1w', '30s', '2d' -> timedelta. Bare numbers are refused: the unit is never guessed.
    A job file's durations are at least 1s; a command-line option (a poll interval, a timeout) passes
    minimum_s=0 and may be shorter, but never zero."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError("expected a duration such as 30s, 15m, 48h, 2d or 1w (a number with a unit)")
    match = _DURATION_RE.match(value)
    if not match and value.strip().startswith("-") and _DURATION_RE.match(value.strip()[1:].lstrip()):
        raise ValueError(
            f"'{value}' must be positive: a duration longer than zero, such as {value.strip()[1:].lstrip()}"
        )
    if not match:
        raise ValueError(f"'{value}' is not a duration; write a number with a unit: 30s, 15m, 48h, 2d or 1w")
    amount, unit = float(match.group(1)), match.group(2)
    seconds = amount * _UNIT_SECONDS[unit]
    if seconds <= 0:
        raise ValueError("a duration must be longer than zero")
    if seconds < minimum_s:
        raise ValueError(f"'{value}' is too short a duration (at least {minimum_s:g}s)")
    if seconds > _MAX_DURATION_S:  # also keeps timedelta() from overflowing on absurd input
        raise ValueError(f"'{value}' is too long a duration (at most 10 years)")
    return timedelta(seconds=seconds)


def parse_measured(value: Any) -> timedelta:
    """A measured time such as checkpoint.write_time: a duration like any other, but it may be shorter
    than a second ('0.5s'); still finite, in ASCII digits, with a unit, and longer than zero."""
    return parse_duration(value, MEASURED_MIN_S)


def format_duration(value: timedelta) -> str:
    total = value.total_seconds()
    if total != int(total):  # a measured fraction of a second ('0.5s') or '1.5s': written back as given
        return f"{total:.6f}".rstrip("0").rstrip(".") + "s"
    seconds = int(total)
    for unit in ("w", "d", "h", "m"):
        size = _UNIT_SECONDS[unit]
        if seconds % size == 0 and seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def secret_name_problem(name: str) -> tuple[str, str] | None:
    """(message, hint) when `name` may not be listed in run.secrets, else None."""
    from gpujob.config import API_KEY_ENV

    if not re.match(ENV_NAME_PATTERN, name):
        return (
            "not a valid environment variable name",
            "secrets lists the NAMES of local env vars, never their values",
        )
    platform = next((p for p, env in API_KEY_ENV.items() if env == name), None)
    if platform is None:
        return None
    where = (
        "RunPod's official templates already carry a pod-scoped key for runpodctl; "
        if platform == "runpod"
        else ""
    )
    return (
        f"{name} is gpujob's {platform} account key: on the machine, the run and any code it loads "
        "could create, stop and delete everything in the account",
        f"remove it; {where}if the run must call the API, give it a separate key with the least access "
        "it needs, under another name",
    )


def env_value_problem(name: str, value: str) -> str | None:
    """Why a run.env entry may not be written in job.yaml, or None. Never includes the value."""
    if "\x00" in value:
        return "contains a NUL character, which no environment variable can hold"
    if not value:
        return None
    words = name.upper().split("_")
    if (
        words[-1] in _SECRET_WORDS
        or {"SECRET", "PASSWORD", "TOKEN"} & set(words)
        or _SECRET_VALUE.match(value)
    ):
        return "looks like a secret value; job files hold secret names only"
    return None


def path_problem(value: str, *, local: bool = False, up: bool = False) -> str | None:
    """Why a path would escape where gpujob confines it (remote: under its root; local: the project),
    or could not be passed to a remote shell as the path the user meant. `up`: '..' is allowed here
    (the loader checks where it resolves)."""
    if "\x00" in value:
        return "contains a NUL character"
    bad = _CONTROL.search(value)
    if bad is not None:
        return f"contains a control character ({repr(bad.group())[1:-1]}); write the path on one line, without it"
    parts = value.replace("\\", "/").split("/")
    if ".." in parts and not up:
        return "must not contain '..' (paths stay inside the directory they name)"
    if not local and "." in parts:
        return "must not contain '.' components; write the path without them"
    if local and (value.startswith(("/", "~", "\\")) or re.match(r"^[A-Za-z]:", value)):
        return "must be a relative path inside the project (relative to the job file)"
    return None


# The bodies of the models' field validators (gpujob.jobfile.model names each one it wraps).


def one_or_many(value: Any) -> Any:
    """machine.gpu: a single alias stands for a list of one; a number YAML read from an unquoted name
    (`gpu: 4090`) is that name, so the first run already says which GPU it is not (did you mean ...)."""
    if isinstance(value, list):
        return [_name(v) for v in value]
    return [_name(value)] if isinstance(value, str | int | float) and not isinstance(value, bool) else value


def _name(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)
    return value


def checked_path(value: str, *, local: bool = False) -> str:
    problem = path_problem(value, local=local)
    if problem:
        raise ValueError(problem)
    return value


def sync_src(value: str) -> str:
    problem = path_problem(value, local=True, up=True)  # where '..' leads is checked by the loader
    if problem:
        raise ValueError(problem)
    return value


def output_paths(value: list[str]) -> list[str]:
    """outputs.paths: absolute paths or globs on the machine, never the whole filesystem."""
    for path in value:
        if not path.startswith("/") or path.rstrip("/") == "":
            raise ValueError(f"'{path}' is not an absolute path below / (e.g. /workspace/results)")
        checked_path(path)
    return value


def deny_patterns(value: list[str]) -> list[str]:
    for pattern in value:
        if not pattern.strip() or pattern.startswith("!"):
            raise ValueError(f"'{pattern}' is not a deny pattern (a glob; '!' cannot re-include here)")
    return value


def env_names(value: dict[str, str]) -> dict[str, str]:
    for key, item in value.items():
        if not re.match(ENV_NAME_PATTERN, key):
            raise ValueError(f"'{key}' is not a valid environment variable name")
        problem = env_value_problem(key, item)
        if problem:
            raise ValueError(f"{key}: {problem}")
    return value


def secret_names(value: list[str]) -> list[str]:
    for key in value:
        problem = secret_name_problem(key)
        if problem is not None:
            raise ValueError(problem[0])
    return value


# The cross-field rules of JobSpec's model validators, on plain values.


def auto_interval_problem(interval: Any, mtbf: Any, write_time: Any) -> str | None:
    """checkpoint.interval: auto computes the cadence from mtbf and write_time, so it needs both."""
    if interval == "auto" and (mtbf is None or write_time is None):
        return "checkpoint.interval: auto needs checkpoint.mtbf and checkpoint.write_time"
    return None


def parked_problem(
    state: str, platform: str, network_volume: Any, mount: str, checkpoint_dir: str | None
) -> str | None:
    """state: parked on RunPod keeps only the network volume: the job needs one, holding the checkpoints."""
    if state != "parked" or platform != "runpod":
        return None
    if network_volume is None:
        return (
            "storage.network_volume: state: parked terminates the pod and keeps only a network volume, "
            "and this job has none (add one, or use state: stopped or absent)"
        )
    base = mount.rstrip("/") or "/"
    if checkpoint_dir is not None and not (checkpoint_dir == base or checkpoint_dir.startswith(base + "/")):
        return (
            f"checkpoint.dir: state: parked keeps only the network volume at {mount}, and "
            f"{checkpoint_dir} is not under it: parking would erase the checkpoints"
        )
    return None


def verify_command(value: str | None) -> str | None:
    """checkpoint.verify: `{file}` only where the expanded name stays an argument (gpujob.jobfile.verifycmd)."""
    if value is None:
        return value
    from gpujob.jobfile.verifycmd import SAFE_FORMS, placement_problem

    problem = placement_problem(value)
    if problem:
        raise ValueError(
            f"{problem}; a checkpoint named `a;touch X` would run code here. Safe forms: {SAFE_FORMS}"
        )
    return value


# Commands that are themselves a distributed launcher: under run.launcher: torchrun they would be started
# once per GPU by the torchrun gpujob runs around them.
_LAUNCHERS = re.compile(
    r"^\s*(?:\S+=\S*\s+)*(?:torchrun|python3?\s+-m\s+torch\.distributed\.(?:run|launch))\b"
)


def launcher_problem(launcher: str, command: str) -> str | None:
    """run.launcher: torchrun wraps run.command in torchrun: a command that is torchrun already would
    start a launcher per GPU."""
    if launcher == "torchrun" and _LAUNCHERS.match(command):
        return (
            "run.command: run.launcher: torchrun runs torchrun around the command itself (one process per "
            "GPU on each node); give the training script alone (e.g. python train.py), or set run.launcher: none"
        )
    return None
