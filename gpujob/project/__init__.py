"""The project id: which checkout owns a resource.

Each project's state (gpujob.state: .gpujob/ beside the job files, $GPUJOB_STATE_DIR, or a database)
holds project.json with a random id made on first use. gpujob writes it into every name it gives
(gpujob.naming) and into each pod's env, so a second checkout of a job with the same name (a colleague's clone, a CI runner without the
state dir) sees the first one's resources as another project's: it never adopts, stops or deletes
them, and refuses to start a second copy of a run that is going.

$GPUJOB_PROJECT_ID pins the id instead (CI runners that plan without the state dir; a state dir that
was lost): set it to the id the resources carry, e.g. `gpujob-bert--k3f9a2c1` -> k3f9a2c1.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from gpujob.lock import user_at_host
from gpujob.model import Model
from gpujob.project import ownership, placement
from gpujob.state import StateRef, as_store

ENV = "GPUJOB_PROJECT_ID"
FILE = "project.json"
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


class Project(Model):
    id: str
    created_at: datetime
    created_by: str  # user@host
    location: str  # the state it lives in (a directory, or a database workspace)

    @property
    def label(self) -> str:
        """Where this project lives, e.g. alice@laptop:/home/alice/bert/.gpujob (goes into pod env)."""
        return f"{self.created_by}:{self.location}"


def _checked(value: str, where: str) -> str:
    from gpujob.errors import ConfigError
    from gpujob.naming import PROJECT_ID

    if not PROJECT_ID.match(value):
        raise ConfigError(
            f"{where}: {value!r} is not a project id (4-16 lower-case letters and digits)",
            hint="the id is the last part of a gpujob resource name: gpujob-bert--k3f9a2c1 -> k3f9a2c1",
        )
    return value


def _parse(data: bytes, where: str) -> Project:
    from pydantic import ValidationError

    from gpujob.errors import ConfigError

    try:
        project = Project.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        what = f"{'.'.join(str(x) for x in first['loc']) or 'record'}: {first['msg']}"
        raise ConfigError(
            f"{where}: unreadable project record ({what})",
            hint=f"restore it from a backup, or set {ENV} to the id your resources' names end in",
        ) from None
    _checked(project.id, where)
    return project


def read_project(state: StateRef) -> Project | None:
    """The project of this state ($GPUJOB_PROJECT_ID first), or None when none was made yet."""
    store = as_store(state)
    pinned = os.environ.get(ENV, "").strip()
    if pinned:
        return Project(
            id=_checked(pinned, ENV),
            created_at=datetime.now(UTC),
            created_by=user_at_host(),
            location=store.location,
        )
    data = store.read(FILE)
    return None if data is None else _parse(data, f"{store.location}/{FILE}")


def ensure_project(state: StateRef) -> Project:
    """The project of this state, made now when there is none. Two processes racing here agree: the
    store keeps the first record written (Store.create) and both read that one."""
    found = read_project(state)
    if found is not None:
        return found
    from gpujob.state.local import LocalStore

    store = as_store(state)
    location = str(store.root.resolve()) if isinstance(store, LocalStore) else store.location
    project = Project(
        id="".join(secrets.choice(_ALPHABET) for _ in range(8)),
        created_at=datetime.now(UTC),
        created_by=user_at_host(),
        location=location,
    )
    from gpujob.errors import StateError

    try:
        kept = store.create(FILE, (json.dumps(project.model_dump(mode="json"), indent=2) + "\n").encode())
    except StateError as exc:
        raise StateError(
            f"{store.location}: this project has no id yet, and it cannot be recorded here: {exc}",
            hint="the first `gpujob apply` with a role that may write makes it (or set "
            f"{ENV} to the id its resources' names end in)",
        ) from None
    return _parse(kept, f"{store.location}/{FILE}")


L = TypeVar("L")


def with_projects(loaded: Sequence[L], *, create: bool) -> list[L]:
    """The loaded job files with `project` set from their stores. `create`: make the id where there is
    none yet (plan, apply); otherwise such a job keeps project None and owns nothing."""
    from gpujob.state import open_store

    out: list[Any] = []
    for ls in loaded:
        store = open_store(ls.path)  # type: ignore[attr-defined]
        project = ensure_project(store) if create else read_project(store)
        if project is not None:
            ownership.load(store, project.id)  # what `state rm` forgot and `import` adopted (gpujob.naming)
        placed = dataclasses.replace(ls, project=project.id if project else None)  # type: ignore[type-var]
        if getattr(ls, "declared", None) is None:
            # Where a move put it (gpujob.failover); a job whose fallback entries were removed since a
            # move still has its record, naming the platforms it may have left resources on. A sweep
            # queue is placed on its own (its record is `<job>--q<N>`'s): each queue is what moves.
            placed = placement.placed(placed, store)
        out.append(placed)
    return out
