"""A problem that only follows from another says so: a typo in a key (`chekpoint:`) leaves the key it
meant unset, and a check of that key (failover: auto needs checkpoint.pull) then fails too. That second
problem names the first, so the user fixes the typo instead of chasing the consequence."""

from __future__ import annotations

import re
from dataclasses import replace

from gpujob.spec.problem import SpecProblem

_MEANT = re.compile(r"^did you mean '([^']+)'\?$")


def _typos(problems: list[SpecProblem]) -> list[tuple[SpecProblem, str]]:
    """(the unknown-key problem, the key path it most likely meant)."""
    out = []
    for p in problems:
        meant = _MEANT.match(p.hint or "")
        if p.message.startswith("unknown key '") and meant:
            parent = p.key_path.rpartition(".")[0]
            out.append((p, f"{parent}.{meant.group(1)}" if parent else meant.group(1)))
    return out


def _about(p: SpecProblem, key_path: str) -> bool:
    if p.key_path == key_path or p.key_path.startswith(key_path + "."):
        return True
    return re.search(rf"(?<![\w.]){re.escape(key_path)}(?![\w])", p.message) is not None


def mark_follow_ons(problems: list[SpecProblem]) -> list[SpecProblem]:
    """`problems` with each one that is about a key a typo left unset saying which typo it follows."""
    typos = _typos(problems)
    if not typos:
        return problems
    out = []
    for p in problems:
        cause = next(((t, meant) for t, meant in typos if t is not p and _about(p, meant)), None)
        if cause is not None:
            typo, meant = cause
            wrong = typo.key_path.rpartition(".")[2]
            note = f"; it follows from the unknown key '{wrong}' at line {typo.line} (meant as '{meant}')"
            p = replace(p, message=p.message + note)
        out.append(p)
    return out
