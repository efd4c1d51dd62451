"""SpecProblem: one thing wrong in a job file, pinned to file:line:col and a dotted key path."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class SpecProblem:
    """`str()` is the line users see: ``file:line:col: key.path: message (hint: ...)``.

    line and col are 1-based. key_path is "" for whole-file problems (unreadable, malformed YAML, ...),
    in which case the key part is left out of the rendered line.
    """

    file: str
    line: int
    col: int
    key_path: str
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}: "
        key = f"{self.key_path}: " if self.key_path else ""
        tail = f" (hint: {self.hint})" if self.hint else ""
        return printable(f"{where}{key}{self.message}{tail}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def printable(text: str) -> str:
    """Escape what a terminal would act on (newlines, control and bidi/format characters): a key or
    value in a job file must not forge output lines ("\\nok: 1 file(s) valid") or reorder the text."""
    from gpujob.safe import for_terminal

    return for_terminal(text)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    import difflib

    pool = list(choices)
    lowered: dict[str, str] = {}
    for c in pool:  # the first spelling wins, so canonical ids listed first beat their aliases
        lowered.setdefault(c.lower(), c)
    if word.lower() in lowered and lowered[word.lower()] != word:
        return lowered[word.lower()]
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.7)
    return lowered[close[0]] if close else None


def suggestion(word: str, choices: Iterable[str], *, what: str = "known") -> str:
    pool = list(dict.fromkeys(choices))
    guess = did_you_mean(word, pool)
    if guess:
        return f"did you mean '{guess}'?"
    return f"{what}: {', '.join(sorted(pool))}"


@dataclass(frozen=True)
class CheckProblem:
    """One platform problem of a raw job mapping (gpujob.spec.checks, gpujob.spec.nodes), at its key."""

    key_path: str
    message: str
    hint: str | None = None
    at_key: bool = False  # point at the key itself (or, when absent, its closest written parent)
