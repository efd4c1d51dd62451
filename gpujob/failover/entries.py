"""What the plan and the read need of a job's `fallback:` entries: the platforms to read, and findings'
fixes naming the keys inside the entry where a job placed on it writes them. (An entry as a whole job
is gpujob.jobfile.fallback; its validation gpujob.spec.fallback.)"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_OWN_KEY = re.compile(r"(?<![\w.\[\]])((?:machine|storage)\.[a-z_])")


def entry_fixes(loaded: Any, jp: Any) -> Any:
    """The plan of a job placed on entry i, its findings' `fix:` naming the keys where they are written:
    `machine.auto_shutdown` is `fallback[i].machine.auto_shutdown` there (their `at` already is)."""
    i = getattr(loaded, "entry", -1)
    if i < 0:
        return jp

    def fixed(findings: list[Any]) -> list[Any]:
        return [f.model_copy(update={"fix": _OWN_KEY.sub(rf"fallback[{i}].\1", f.fix)}) for f in findings]

    actions = [a.model_copy(update={"findings": fixed(a.findings)}) for a in jp.actions]
    return jp.model_copy(update={"findings": fixed(jp.findings), "actions": actions})


def platforms_of(specs: Any) -> set[str]:
    """Every platform these jobs may run on: their own and their fallback entries'."""
    return {p for s in specs for p in [s.platform, *(f.platform for f in s.fallback)]}


def strays_read(loaded: Any, env: Mapping[str, str] | None = None) -> set[str]:
    """The platforms these jobs' failover records name that their job files no longer list
    (gpujob.project.placement.strays) and whose API key is set: read only for what the jobs left there.
    One without its key is not read (the plan says so) rather than failing the whole read."""
    import os

    from gpujob.config import API_KEY_ENV

    e = os.environ if env is None else env
    wanted = {p for ls in loaded for p in getattr(ls, "strays", ())}
    return {p for p in wanted if e.get(API_KEY_ENV.get(p, ""), "").strip()}


def platforms_read(loaded: Any, env: Mapping[str, str] | None = None) -> set[str]:
    """platforms_of the loaded jobs, plus strays_read."""
    loaded = list(loaded)
    return platforms_of(ls.spec for ls in loaded) | strays_read(loaded, env)
