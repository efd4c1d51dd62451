"""Building remote shell commands. asyncssh sends one string to the remote shell (no argv array),
so every interpolated value goes through shlex.quote here, after allow-list checks on names."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SESSION = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def q(value: str) -> str:
    """One shell word, whatever the value holds (spaces, quotes, $, ;, backticks, newlines)."""
    return shlex.quote(str(value))


def join(argv: Iterable[str]) -> str:
    """A command line from an argument list, each argument quoted."""
    return " ".join(q(a) for a in argv)


def env_name(name: str) -> str:
    if not _ENV_NAME.match(name):
        raise ValueError(f"'{name}' is not a valid environment variable name")
    return name


def exports(env: Mapping[str, str]) -> str:
    """`export NAME=value` lines; never use this for secret values (they would land in a file or argv)."""
    return "".join(f"export {env_name(k)}={q(v)}\n" for k, v in env.items())


def with_env(env: Mapping[str, str], command: str) -> str:
    """`export ...; command` as one line, for ad-hoc remote commands."""
    prefix = "; ".join(f"export {env_name(k)}={q(v)}" for k, v in env.items())
    return f"{prefix}; {command}" if prefix else command


def remote_path(path: str) -> str:
    """An absolute, normalised remote path; `..` is refused so a spec cannot escape its mount."""
    if not path.startswith("/"):
        raise ValueError(f"remote path must be absolute: {path!r}")
    if any(part == ".." for part in path.split("/")):
        raise ValueError(f"remote path must not contain '..': {path!r}")
    if "\0" in path or "\n" in path:
        raise ValueError("remote path must not contain NUL or newline")
    return posixpath.normpath(path)


def session_name(name: str) -> str:
    """tmux session names: no '.' or ':' (tmux treats them as target separators)."""
    if not _SESSION.match(name):
        raise ValueError(f"invalid session name {name!r}")
    return name
