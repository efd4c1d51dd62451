"""Where gpujob keeps what it remembers: one Store per project, behind one small interface.

Everything gpujob keeps between runs goes through a Store and nothing else touches its files:

    journal/<job>.jsonl     apply journal (append-only log)
    pulls/<job>.json        latest pull record (document)
    seen/<job>.json         the job's resources as last seen, for spend after they are gone (gpujob.cost.seen)
    known_hosts.json        pinned SSH host keys (document, changed under a lock)
    events.jsonl            watch events (append-only log)
    id_ed25519              the project's SSH private key (secret; public half beside it, readable)
    the job locks           one writer per job

Names are the local layout's relative paths, so the local directory store is the files themselves and
any other store holds the same names (migration copies name by name). `.jsonl` names are logs, SECRETS
are secrets, everything else is a document.

Two stores: LocalStore (.gpujob/ beside the job file, or $GPUJOB_STATE_DIR: today's default, no
database) and PgStore (PostgreSQL, chosen by $GPUJOB_STATE_URL or a `state:` block in gpujob.yaml).
gpujob.state.config decides which one a job file uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from gpujob.state.store import PUBLIC_SUFFIX as PUBLIC_SUFFIX
from gpujob.state.store import SECRETS as SECRETS
from gpujob.state.store import StateRef as StateRef
from gpujob.state.store import Store as Store
from gpujob.state.store import is_log as is_log

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


def as_store(ref: StateRef) -> Store:
    if isinstance(ref, Path):
        from gpujob.state.local import LocalStore

        return LocalStore(ref)
    return ref


def read_model(state: StateRef, name: str, model: type[M]) -> M | None:
    """The document `name` as a `model`; None when there is none or it does not parse (an unreadable
    record proves nothing, so callers treat it as absent)."""
    data = as_store(state).read(name)
    if data is None:
        return None
    try:
        return model.model_validate_json(data)
    except ValueError:
        return None


def write_model(state: StateRef, name: str, value: BaseModel, *, indent: int = 2) -> None:
    """`value` as the JSON document `name`, replaced atomically by the store."""
    as_store(state).write(name, value.model_dump_json(indent=indent).encode())


def open_store(job_file: Path | None = None) -> Store:
    """The store of the project a job file belongs to (see gpujob.state.config), one per process."""
    from gpujob.state.config import store_for

    return store_for(job_file)
