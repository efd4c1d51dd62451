"""Move a project's state from one store to another (local directory <-> PostgreSQL), record by record.

Nothing is written until every record has been compared: a destination that already holds a record with
different contents is refused, naming each such record, so two projects are never merged by accident.
Records the destination already holds identically are skipped, so an interrupted migration can simply be
run again. Afterwards every record is read back from the destination and compared. Locks are not state
to move: the migration refuses while any job of the source is locked (an apply is running).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpujob.state.store import SECRETS, Store, is_log


@dataclass
class Migration:
    documents: list[str] = field(default_factory=list)
    logs: dict[str, int] = field(default_factory=dict)  # name -> lines copied
    secrets: list[str] = field(default_factory=list)
    same: list[str] = field(default_factory=list)  # already in the destination, identical

    @property
    def copied(self) -> int:
        return len(self.documents) + len(self.logs) + len(self.secrets)

    def summary(self) -> str:
        lines = sum(self.logs.values())
        parts = [
            f"{len(self.documents)} document(s)",
            f"{len(self.logs)} log(s) ({lines} line(s))",
            f"{len(self.secrets)} secret(s)",
        ]
        text = "copied " + ", ".join(parts)
        if self.same:
            text += f"; {len(self.same)} already there, identical"
        return text


def _read(store: Store, name: str) -> tuple[bytes | None, ...] | list[bytes]:
    """One record in a comparable form."""
    if name in SECRETS:
        return (store.secret(name), store.public(name))
    if is_log(name):
        return store.lines(name)
    return (store.read(name),)


def _empty(value: tuple[bytes | None, ...] | list[bytes]) -> bool:
    return not value or all(v is None for v in value)


def migrate(src: Store, dst: Store) -> Migration:
    from gpujob.errors import GpujobError, LockError

    if src.location == dst.location:
        raise GpujobError(f"source and destination are the same store: {src.location}")
    busy = [job for job in src.locked_jobs() if src.lock_held(job)]
    if busy:
        raise LockError(
            f"job(s) {', '.join(busy)} are locked in {src.location}: an apply is running",
            hint="migrate when no gpujob command runs against this project",
        )
    plan: list[tuple[str, tuple[bytes | None, ...] | list[bytes]]] = []
    done = Migration()
    conflicts = []
    for name in src.names():
        value, there = _read(src, name), _read(dst, name)
        if there == value:
            done.same.append(name)
        elif _empty(there):
            plan.append((name, value))
        else:
            conflicts.append(name)
    if conflicts:
        raise GpujobError(
            f"{dst.location} already holds different records: {', '.join(conflicts)}; nothing was copied",
            hint="migrate into an empty store (another workspace: GPUJOB_STATE_WORKSPACE or --workspace)",
        )
    for name, value in plan:
        if name in SECRETS:
            secret, public = value[0], value[1]
            if secret is None:
                raise GpujobError(
                    f"{name}: the secret read from the source store is empty; nothing more was copied"
                )
            dst.put_secret(name, secret, public)
            done.secrets.append(name)
        elif is_log(name):
            dst.extend(name, list(value))  # type: ignore[arg-type]
            done.logs[name] = len(value)
        else:
            data = value[0]
            if not isinstance(data, bytes):
                raise GpujobError(
                    f"{name}: the record read from the source store is not bytes; nothing more was copied"
                )
            dst.write(name, data)
            done.documents.append(name)
    wrong = [name for name, value in plan if _read(dst, name) != value]
    if wrong:
        raise GpujobError(f"read back from {dst.location}, these records differ: {', '.join(wrong)}")
    return done
