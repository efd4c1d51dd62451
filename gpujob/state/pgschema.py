"""The PostgreSQL store's tables, versioned, created on first use.

gpujob_schema holds one row: the schema version and the salt secrets are sealed with (not secret).
Every other table is keyed by workspace, so one database can serve several teams or repositories.
Secrets sit in a table of their own: a role that may plan but not apply gets SELECT on the others and
on gpujob_secrets' non-secret columns only (docs/team-state.md); the sealed column is unreadable
without GPUJOB_STATE_KEY anyway.

A new version appends its statements to MIGRATIONS; a database newer than this gpujob is refused.
"""

from __future__ import annotations

import os
from typing import Any

from gpujob.invariant import present

SCHEMA_LOCK = 0x6770_756A_6F62  # advisory lock key serialising schema changes ("gpujob")

MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE gpujob_schema (
            id int PRIMARY KEY CHECK (id = 1),
            version int NOT NULL,
            salt bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now())""",
        """CREATE TABLE gpujob_documents (
            workspace text NOT NULL,
            name text NOT NULL,
            body text NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now(),
            updated_by text NOT NULL,
            PRIMARY KEY (workspace, name))""",
        """CREATE TABLE gpujob_logs (
            workspace text NOT NULL,
            name text NOT NULL,
            seq bigserial NOT NULL,
            line text NOT NULL,
            at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (workspace, name, seq))""",
        """CREATE TABLE gpujob_secrets (
            workspace text NOT NULL,
            name text NOT NULL,
            public text,
            sealed bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            created_by text NOT NULL,
            PRIMARY KEY (workspace, name))""",
        """CREATE TABLE gpujob_locks (
            workspace text NOT NULL,
            job text NOT NULL,
            holder jsonb NOT NULL,
            backend_pid int NOT NULL,
            PRIMARY KEY (workspace, job))""",
    ],
}
VERSION = max(MIGRATIONS)


def ensure_schema(conn: Any, location: str) -> bytes:
    """Create or upgrade the tables as needed; return the salt. Cheap when they are current (one read,
    no DDL, so a read-only role can use the store)."""
    found = _read(conn)
    if found is not None and found[0] == VERSION:
        return bytes(found[1])
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        found = _read(conn)  # another process may have done it while we waited
        version = found[0] if found is not None else 0
        if version > VERSION:
            from gpujob.errors import StateError

            raise StateError(
                f"{location}: the state schema is version {version}, newer than this gpujob understands ({VERSION})",
                hint="upgrade gpujob (everyone sharing this database needs the same or a newer version)",
            )
        for v in range(version + 1, VERSION + 1):
            for statement in MIGRATIONS[v]:
                conn.execute(statement)
            if v == 1:
                conn.execute(
                    "INSERT INTO gpujob_schema (id, version, salt) VALUES (1, 1, %s)", (os.urandom(16),)
                )
            else:
                conn.execute("UPDATE gpujob_schema SET version = %s WHERE id = 1", (v,))
    found = _read(conn)
    found = present(found, "the schema row written just above")
    return bytes(found[1])


def _read(conn: Any) -> tuple[int, bytes] | None:
    # A plain query of the catalog (not to_regclass, whose catalog snapshot can predate a table another
    # session made while this one waited for the schema lock).
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() "
        "AND tablename = 'gpujob_schema')"
    ).fetchone()
    if not row[0]:
        return None
    got = conn.execute("SELECT version, salt FROM gpujob_schema WHERE id = 1").fetchone()
    return (int(got[0]), bytes(got[1])) if got else None
