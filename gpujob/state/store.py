"""The Store interface every state store implements, and the rules of its names (gpujob.state)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from gpujob.lock import LockInfo

SECRETS = ("id_ed25519",)  # names whose contents are secret: encrypted at rest outside the local dir
PUBLIC_SUFFIX = ".pub"  # the readable half of a secret lives at <name>.pub


def is_log(name: str) -> bool:
    return name.endswith(".jsonl")


@runtime_checkable
class Store(Protocol):
    """A project's state. Every method is safe against other processes (and, for PgStore, other hosts)
    using the same store at the same time."""

    @property
    def location(self) -> str:
        """Where the state is, for messages (never carries a password)."""
        ...

    @property
    def label(self) -> str:
        """A short name of the project (the SSH key's comment)."""
        ...

    # Documents: whole values, replaced atomically.
    def read(self, name: str) -> bytes | None: ...
    def write(self, name: str, data: bytes) -> None: ...
    def update(self, name: str, change: Callable[[bytes | None], bytes]) -> bytes:
        """Read-modify-write with every other updater of `name` excluded meanwhile."""
        ...

    def create(self, name: str, data: bytes) -> bytes:
        """Write `data` unless `name` exists; return what is stored (the first writer wins)."""
        ...

    def names(self, prefix: str = "") -> list[str]:
        """Every document, log and secret name under `prefix`, sorted."""
        ...

    # Logs: lines appended one at a time, never rewritten.
    def append(self, name: str, line: bytes) -> None: ...
    def extend(self, name: str, lines: list[bytes]) -> None:
        """Append several lines at once (migration)."""
        ...

    def lines(self, name: str, *, last: int | None = None) -> list[bytes]:
        """Every line (or the last `last`), oldest first, without line ends."""
        ...

    # Secrets: stored encrypted outside the local directory; the public half stays readable.
    def secret(self, name: str) -> bytes | None: ...
    def public(self, name: str) -> bytes | None: ...
    def put_secret(self, name: str, secret: bytes, public: bytes | None) -> None:
        """Store a secret as given, replacing any (migration)."""
        ...

    def create_secret(self, name: str, make: Callable[[], tuple[bytes, bytes]]) -> bytes:
        """The secret `name`, made by `make() -> (secret, public)` on first use (one maker wins)."""
        ...

    def secret_file(self, name: str) -> Path | None:
        """The path of the secret, private to this user (None when there is no such secret). A remote
        store keeps it in memory under that path (gpujob.state.scratch.hold): asyncssh reads it from
        there, and `scratch.on_disk(path)` writes the file for a tool that needs one (ssh -i), removed
        when gpujob exits."""
        ...

    def scratch_dir(self) -> Path:
        """A private directory for files made from the state for other tools (ssh's known_hosts)."""
        ...

    # The job locks.
    def lock(
        self, job: str, *, timeout: float = 0, command: str | None = None
    ) -> AbstractContextManager[LockInfo]:
        """Hold the job's lock for the block; LockError naming the holder when it is taken."""
        ...

    def read_lock(self, job: str) -> LockInfo | None: ...
    def lock_held(self, job: str) -> bool:
        """Whether some live process holds the job's lock right now (the holder note proves nothing)."""
        ...

    def force_unlock(self, job: str) -> bool: ...
    def locked_jobs(self) -> list[str]: ...


StateRef = Path | Store  # a Path is a local state directory (tests and the SSH layer pass those)


def checked_name(name: str) -> str:
    """A store name is a relative path without `..`: it can never point outside the store."""
    if not name or PurePosixPath(name).is_absolute() or "\\" in name or "\0" in name:
        raise ValueError(f"not a state record name: {name!r}")
    if any(part in ("", ".", "..") for part in name.split("/")):
        raise ValueError(f"not a state record name: {name!r}")
    return name
