"""The doctor's look at the team setup, read-only: which state store this project uses and whether it
answers, whether GPUJOB_STATE_KEY opens what is sealed there, whether the API URLs point at a
simulator, and the local tools gpujob (and its tests) run. One line each: OK, WARN or FAIL with a fix.

Nothing here writes: the database session is read-only (default_transaction_read_only), no table is
created (the schema is only looked at), and a local state directory that does not exist is not made.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

Outcome = Literal["ok", "warn", "fail"]
LABEL = {"ok": "OK", "warn": "WARN", "fail": "FAIL"}
CONNECT_TIMEOUT_S = 5
LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


@dataclass(frozen=True)
class Line:
    outcome: Outcome
    what: str
    detail: str
    fix: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "check": self.what, "detail": self.detail, "fix": self.fix}


def check_setup(job_file: Path | None, env: Mapping[str, str] | None = None) -> list[Line]:
    e = dict(os.environ if env is None else env)
    return [*state_lines(job_file, e), *api_url_lines(e), *tool_lines()]


def exit_code(lines: list[Line]) -> int:
    return int(any(line.outcome == "fail" for line in lines))


# --- the state store -------------------------------------------------------------------------------


def state_lines(job_file: Path | None, env: dict[str, str]) -> list[Line]:
    from gpujob.errors import GpujobError
    from gpujob.state.config import DIR_ENV, Local, resolve

    try:
        where = resolve(job_file, env=env)
    except GpujobError as exc:
        return [Line("fail", "state store", exc.render().splitlines()[0], "fix the setting it names")]
    if isinstance(where, Local):
        chosen = DIR_ENV if env.get(DIR_ENV, "").strip() else "the default: beside the job file"
        return _local_lines(where.root.absolute(), chosen, env)
    return _pg_lines(where.url, where.workspace, where.source, env)


def _local_lines(root: Path, chosen: str, env: dict[str, str]) -> list[Line]:
    from gpujob.state.crypto import KEY_ENV

    lines = []
    if not root.exists():
        lines.append(
            Line(
                "ok",
                "state store",
                f"local directory {root} ({chosen}); not made yet: the first apply makes it",
            )
        )
    elif not root.is_dir() or not os.access(root, os.R_OK | os.W_OK | os.X_OK):
        lines.append(Line("fail", "state store", f"local directory {root} ({chosen}) is not a directory this user may read and write",
                          f"fix its owner or mode (chmod 700 {root}), or set {'GPUJOB_STATE_DIR'} elsewhere"))  # fmt: skip
    else:
        count = sum(1 for p in root.rglob("*") if p.is_file() and "locks" not in p.parts)
        lines.append(Line("ok", "state store", f"local directory {root} ({chosen}): {count} file(s)"))
    if env.get("CI", "").lower() in ("1", "true", "yes"):  # a fresh runner each time: its state is lost
        lines.append(Line("warn", "state sharing", "a local store on a CI runner: the SSH key, pull records "
                          "and locks go with the runner", "share one PostgreSQL store: gpujob state migrate --to postgresql://…"))  # fmt: skip
    else:
        lines.append(
            Line(
                "ok", "state sharing", "only this machine sees this state (a team shares a PostgreSQL store)"
            )
        )
    if env.get(KEY_ENV, "").strip():
        lines.append(
            Line(
                "ok",
                "state key",
                f"{KEY_ENV} is set but not used: a local store keeps the SSH key as a 0600 file",
            )
        )
    return lines


def _pg_lines(url: str, workspace: str, source: str, env: dict[str, str]) -> list[Line]:
    import psycopg

    from gpujob.redact import register
    from gpujob.state.config import safe_url
    from gpujob.state.pgschema import VERSION, _read

    password = urlsplit(url).password
    if password:
        from urllib.parse import unquote

        register(unquote(password))
    where = f"{safe_url(url)} (workspace {workspace})"
    head = Line("ok", "state store", f"PostgreSQL {where}, chosen by {source}")
    try:
        conn = psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="gpujob doctor",
            options="-c default_transaction_read_only=on",
        )
    except psycopg.Error as exc:
        return [
            head,
            Line("fail", "state reachable", f"cannot connect: {_first_line(exc)}",
                 "start the database or fix GPUJOB_STATE_URL / the state: block of gpujob.yaml; "
                 "the password comes from PGPASSWORD or ~/.pgpass"),
        ]  # fmt: skip
    with conn:
        try:
            found = _read(conn)
        except psycopg.Error as exc:
            return [head, Line("fail", "state reachable", f"connected, but cannot read: {_first_line(exc)}",
                               "grant this role SELECT on the gpujob_* tables (docs/team-state.md)")]  # fmt: skip
        if found is None:
            return [
                head,
                Line("ok", "state reachable", "connected; no gpujob tables yet (the first apply with the full role makes them)"),
                *_key_lines_nothing_sealed(env),
            ]  # fmt: skip
        version, salt = found
        if version > VERSION:
            return [head, Line("fail", "state reachable", f"schema version {version} is newer than this gpujob's ({VERSION})",
                               "upgrade gpujob: everyone sharing the database needs the same or a newer version")]  # fmt: skip
        lines = [head, _workspace_line(conn, workspace, version)]
        lines += _key_lines(conn, workspace, bytes(salt), where, env)
    return lines


def _workspace_line(conn: Any, workspace: str, version: int) -> Line:
    import psycopg

    try:
        mine = conn.execute(
            "SELECT count(*) FROM gpujob_documents WHERE workspace = %s", (workspace,)
        ).fetchone()[0]
        logs = conn.execute(
            "SELECT count(DISTINCT name) FROM gpujob_logs WHERE workspace = %s", (workspace,)
        ).fetchone()[0]
        others = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT workspace FROM gpujob_documents WHERE workspace <> %s ORDER BY 1 LIMIT 10",
                (workspace,),
            )
        ]
    except psycopg.Error as exc:
        return Line(
            "warn",
            "state reachable",
            f"connected (schema v{version}); cannot count records: {_first_line(exc)}",
        )
    if mine or logs:
        return Line(
            "ok",
            "state reachable",
            f"connected (schema v{version}); workspace {workspace}: {mine} record(s), {logs} log(s)",
        )
    if others:
        return Line("warn", "state reachable", f"connected (schema v{version}); workspace {workspace} holds nothing, "
                    f"while the database has: {', '.join(others)}",
                    "a typo in GPUJOB_STATE_WORKSPACE (or the state: block) gives a separate, empty state")  # fmt: skip
    return Line(
        "ok",
        "state reachable",
        f"connected (schema v{version}); workspace {workspace} is empty (nothing applied yet)",
    )


def _key_lines_nothing_sealed(env: dict[str, str]) -> list[Line]:
    from gpujob.state.crypto import KEY_ENV

    if env.get(KEY_ENV, "").strip():
        return [Line("ok", "state key", f"{KEY_ENV} is set; nothing is sealed yet to check it against")]
    return [Line("warn", "state key", f"{KEY_ENV} is not set: plan, status and audit work; apply needs it",
                 f"set {KEY_ENV} to the team's key where you apply (CI: a protected secret)")]  # fmt: skip


def _key_lines(conn: Any, workspace: str, salt: bytes, where: str, env: dict[str, str]) -> list[Line]:
    import psycopg

    from gpujob.errors import StateKeyError
    from gpujob.state.crypto import KEY_ENV, MIN_KEY_CHARS, unseal

    try:
        rows = conn.execute(
            "SELECT name, sealed FROM gpujob_secrets WHERE workspace = %s ORDER BY name", (workspace,)
        ).fetchall()
    except psycopg.errors.InsufficientPrivilege:
        return [Line("ok", "state key", "this role may not read sealed secrets (a plan-only role): not checked here; "
                     "run gpujob doctor with the apply role to check the key")]  # fmt: skip
    except psycopg.Error as exc:
        return [Line("fail", "state key", f"cannot read the sealed secrets: {_first_line(exc)}")]
    if not rows:
        return _key_lines_nothing_sealed(env)
    names = ", ".join(r[0] for r in rows)
    key = env.get(KEY_ENV, "").strip()
    if not key:
        return [Line("warn", "state key", f"{KEY_ENV} is not set: {names} cannot be opened here; plan and audit "
                     "work without it, apply does not", f"set {KEY_ENV} to the team's key where you apply")]  # fmt: skip
    if len(key) < MIN_KEY_CHARS:
        return [Line("fail", "state key", f"{KEY_ENV} is shorter than {MIN_KEY_CHARS} characters: not the team's key",
                     f"set {KEY_ENV} to the team's key")]  # fmt: skip
    from gpujob.redact import register

    register(key)
    for name, sealed in rows:
        try:
            unseal(key, salt, workspace, name, bytes(sealed), where)
        except StateKeyError:
            return [Line("fail", "state key", f"{KEY_ENV} does not decrypt {name} in {where}: it is not the key "
                         "it was sealed with", f"use the team's {KEY_ENV}; a lost key means making a new project "
                         "SSH key (delete it from the store, then apply)")]  # fmt: skip
    return [Line("ok", "state key", f"{KEY_ENV} decrypts every sealed secret ({names})")]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0]


# --- the platform API URLs -------------------------------------------------------------------------

API_URL_ENV = {
    "RunPod API": "GPUJOB_RUNPOD_API_URL",
    "RunPod GraphQL": "GPUJOB_RUNPOD_GRAPHQL_URL",
    "Paperspace API": "GPUJOB_PAPERSPACE_API_URL",
}


def api_url_lines(env: dict[str, str]) -> list[Line]:
    """A URL overridden to a loopback or plain-http address is a simulator (or a fake): fine for a
    rehearsal, never what a real apply should talk to."""
    from gpujob.config import endpoints

    ends = endpoints(env)
    urls = {
        "RunPod API": ends.runpod_api,
        "RunPod GraphQL": ends.runpod_graphql,
        "Paperspace API": ends.paperspace_api,
    }
    sims = [f"{name} {url}" for name, url in urls.items() if _simulated(url)]
    overridden = [name for name, var in API_URL_ENV.items() if env.get(var, "").strip()]
    if sims:
        return [Line("warn", "API URLs", f"point at a simulator: {'; '.join(sims)}",
                     f"for the real platforms unset {', '.join(API_URL_ENV[n] for n in overridden) or 'the GPUJOB_*_API_URL variables'}")]  # fmt: skip
    if overridden:
        return [Line("ok", "API URLs", "overridden: " + "; ".join(f"{n} {urls[n]}" for n in overridden))]
    return [
        Line(
            "ok",
            "API URLs",
            "the real platforms ("
            + ", ".join(sorted({urlsplit(u).hostname or u for u in urls.values()}))
            + ")",
        )
    ]


def _simulated(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "http" or (parts.hostname or "") in LOOPBACK


# --- local tools -------------------------------------------------------------------------------------

TOOLS: list[tuple[str, str, str]] = [
    (
        "ssh",
        "gpujob ssh opens a shell with it",
        "install the OpenSSH client (apt-get install openssh-client)",
    ),
    ("sshd", "the simulator's pods and the tests run it", "apt-get install openssh-server (tests only)"),
    ("tmux", "the tests' pods start runs in it", "apt-get install tmux (tests only)"),
    ("rsync", "the sync benchmark and tests compare against it", "apt-get install rsync (tests only)"),
]


def tool_lines() -> list[Line]:
    lines = []
    for name, why, fix in TOOLS:
        found = shutil.which(name) or _sbin(name)
        if found:
            lines.append(Line("ok", f"tool {name}", found))
        else:
            lines.append(Line("warn", f"tool {name}", f"not found: {why}", fix))
    return lines


def _sbin(name: str) -> str | None:
    for d in ("/usr/sbin", "/usr/local/sbin"):
        if os.access(Path(d) / name, os.X_OK):
            return str(Path(d) / name)
    return None


# --- rendering ---------------------------------------------------------------------------------------


def text(
    lines: list[Line], *, title: str = "Setup (read-only: nothing is written, no table is made):"
) -> str:
    from gpujob.redact import redact

    width = max(len(line.what) for line in lines)
    out = [title]
    for line in lines:
        out.append(f"  {LABEL[line.outcome]:<5} {line.what:<{width}}  {line.detail}")
        if line.fix and line.outcome != "ok":
            out.append(f"  {'':<5} {'':<{width}}  fix: {line.fix}")
    return redact("\n".join(out) + "\n")


def as_json(lines: list[Line]) -> list[dict[str, Any]]:
    return json.loads(json.dumps([line.as_dict() for line in lines]))
