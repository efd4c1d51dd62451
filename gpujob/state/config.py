"""Which store a job file uses.

First match wins:
1. $GPUJOB_STATE_URL=postgresql://…  (workspace: $GPUJOB_STATE_WORKSPACE, default "default")
2. $GPUJOB_STATE_DIR                  a local directory
3. a `state:` block in gpujob.yaml, looked for beside the job file and in each parent directory up to
   the repository root (the first directory holding .git):

       state:
         url: postgresql://gpujob@db.internal:5432/gpujob   # never a password here: PGPASSWORD or ~/.pgpass
         workspace: vision-team                              # optional; jobs are keyed by name inside it

4. .gpujob/ beside the job file (today's default).

One store per process and place, so every part of a command shares one connection (and its locks).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gpujob.state.dsn import safe_url
from gpujob.state.store import Store

URL_ENV = "GPUJOB_STATE_URL"
WORKSPACE_ENV = "GPUJOB_STATE_WORKSPACE"
DIR_ENV = "GPUJOB_STATE_DIR"
PROJECT_FILE = "gpujob.yaml"
DEFAULT_WORKSPACE = "default"
WORKSPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True)
class Local:
    root: Path


@dataclass(frozen=True)
class Postgres:
    url: str  # may carry a password when it came from the environment; never shown (see `safe_url`)
    workspace: str
    source: str  # where the choice was made, for messages


def parse_url(url: str, where: str) -> str:
    """A PostgreSQL URL or a libpq key=value string (`host=db dbname=gpujob user=ci`)."""
    from gpujob.errors import ConfigError
    from gpujob.state.dsn import is_url, parse

    url = url.strip()
    ok = is_url(url)
    if not ok and "=" in url:
        try:
            ok = bool(parse(url))
        except ValueError:
            ok = False
    if not ok:
        raise ConfigError(
            f"{where}: {safe_url(url)!r} is not a PostgreSQL URL or connection string",
            hint="e.g. postgresql://gpujob@db.internal:5432/gpujob (leave it unset for the local .gpujob/ directory)",
        )
    return url


def checked_workspace(value: str, where: str) -> str:
    from gpujob.errors import ConfigError

    if not WORKSPACE_RE.match(value):
        raise ConfigError(
            f"{where}: {value!r} is not a workspace name (letters, digits, '_', '.', '-'; at most 64)",
            hint="e.g. workspace: vision-team",
        )
    return value


def resolve(job_file: Path | None, env: dict[str, str] | None = None) -> Local | Postgres:
    e = os.environ if env is None else env
    if e.get(URL_ENV, "").strip():
        url = parse_url(e[URL_ENV], URL_ENV)
        workspace = checked_workspace(e.get(WORKSPACE_ENV, "").strip() or DEFAULT_WORKSPACE, WORKSPACE_ENV)
        return Postgres(url, workspace, URL_ENV)
    if e.get(DIR_ENV, "").strip():
        return Local(Path(e[DIR_ENV]))
    start = job_file.resolve().parent if job_file is not None else Path.cwd()
    found = project_file(start)
    if found is not None:
        block = read_state_block(found)
        if block is not None:
            if e.get(WORKSPACE_ENV, "").strip():
                ws = checked_workspace(e[WORKSPACE_ENV].strip(), WORKSPACE_ENV)
                block = Postgres(block.url, ws, block.source)
            return block
    return Local(start / ".gpujob")


def project_file(start: Path) -> Path | None:
    """gpujob.yaml in `start` or a parent, stopping at the repository root."""
    for d in (start, *start.parents):
        candidate = d / PROJECT_FILE
        if candidate.is_file():
            return candidate
        if (d / ".git").exists():
            return None
    return None


def read_state_block(path: Path) -> Postgres | None:
    """The `state:` block of a project file; SpecError naming file, line and key when it is wrong."""
    from gpujob.errors import SpecError
    from gpujob.spec.problem import SpecProblem
    from gpujob.spec.yamlsafe import parse_file

    display = str(path)
    parsed = parse_file(path, display)
    if parsed.data is None:
        raise SpecError(parsed.problems)
    block: Any = parsed.data.get("state")
    if block is None:
        return None

    def fail(key: str, message: str, hint: str | None = None) -> SpecError:
        line, col = parsed.positions.key(key)
        return SpecError([SpecProblem(display, line, col, key, message, hint)])

    if not isinstance(block, dict):
        raise fail("state", "must be a mapping with `url` (and optionally `workspace`)")
    for key in block:
        if key not in ("url", "workspace"):
            raise fail(f"state.{key}", "unknown key", "state: takes url and workspace")
    url = block.get("url")
    if not isinstance(url, str) or not url.strip():
        raise fail("state.url", "a postgresql://… URL is required", "e.g. url: postgresql://gpujob@db/gpujob")
    if urlsplit(url.strip()).scheme not in SCHEMES:
        raise fail("state.url", f"{safe_url(url)!r} is not a PostgreSQL URL", "it starts with postgresql://")
    from gpujob.state.dsn import has_password

    if has_password(url.strip()):
        raise fail(
            "state.url",
            "holds a password; a file in the repository must not",
            "remove it and give it to libpq in PGPASSWORD or ~/.pgpass (or set GPUJOB_STATE_URL in CI secrets)",
        )
    workspace = block.get("workspace", DEFAULT_WORKSPACE)
    if not isinstance(workspace, str) or not WORKSPACE_RE.match(workspace):
        raise fail(
            "state.workspace", "letters, digits, '_', '.', '-' (at most 64)", "e.g. workspace: vision-team"
        )
    return Postgres(url.strip(), workspace, display)


_STORES: dict[Local | Postgres, Store] = {}


def store_for(job_file: Path | None) -> Store:
    where = resolve(job_file)
    if isinstance(where, Local):
        where = Local(where.root.absolute())
    store = _STORES.get(where)
    if store is None:
        store = _STORES[where] = open_config(where)
    if isinstance(where, Postgres):
        # A .gpujob/ left beside the job file after switching: the database must not make a second SSH
        # key while the machines made from there trust the first (PgStore.create_secret refuses).
        left = (job_file.resolve().parent if job_file is not None else Path.cwd()) / ".gpujob"
        left_behind = getattr(store, "left_behind", None)
        if left.is_dir() and left_behind is not None:
            left_behind.add(left)
    return store


def open_config(where: Local | Postgres) -> Store:
    if isinstance(where, Local):
        from gpujob.state.local import LocalStore

        return LocalStore(where.root)
    from gpujob.state.pg import PgStore

    return PgStore(where.url, where.workspace)
