"""The per-project SSH client key: made on first use and kept in the project's store (gpujob.state).

Locally it is .gpujob/id_ed25519 (0600); in a PostgreSQL store it is encrypted with $GPUJOB_STATE_KEY
and written to a private temp file only while gpujob runs. The private half never leaves the store
except to that file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpujob.invariant import present

if TYPE_CHECKING:
    from gpujob.state import StateRef

KEY_NAME = "id_ed25519"


def ensure_project_key(state: StateRef) -> tuple[Path, str]:
    """Return (private_key_path, public_key_line), generating an ed25519 key on first use.

    Idempotent and safe against two gpujob processes racing (on one host or, with a database store, on
    several): the store lets one maker win and everyone reads the winner's key.
    """
    import asyncssh

    from gpujob.state import as_store

    store = as_store(state)

    def make() -> tuple[bytes, bytes]:
        key = asyncssh.generate_private_key("ssh-ed25519", comment=f"gpujob@{store.label}")
        return key.export_private_key("openssh"), key.export_public_key("openssh")

    key = asyncssh.import_private_key(store.create_secret(KEY_NAME, make))
    path = store.secret_file(KEY_NAME)
    path = present(path, "the key file created just above")
    return path, key.export_public_key("openssh").decode().strip()
