"""What gpujob's own code promises itself, checked for real: an `assert` vanishes under
PYTHONOPTIMIZE, so no check of gpujob's is one (ruff S101 refuses them in gpujob/). Input is never
checked here: a job file's problem is a SpecError at its file:line:key (gpujob.spec)."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


class InvariantError(RuntimeError):
    """gpujob broke a promise to itself: a bug to report, never a user's mistake."""


def present(value: T | None, what: str) -> T:
    """`value`, which the caller's own logic guarantees is set (`what` names it for the bug report)."""
    if value is None:
        raise InvariantError(f"internal error: {what} is not set here (please report this)")
    return value


def holds(condition: bool, what: str) -> None:
    """Raise unless `condition`, which gpujob's own logic guarantees (`what`: the promise, for the report)."""
    if not condition:
        raise InvariantError(f"internal error: {what} (please report this)")
