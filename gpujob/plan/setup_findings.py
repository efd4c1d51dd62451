"""U29: run.setup installing packages by name without a version pins nothing of what it installs, and
every relaunch on a fresh container may resolve other versions ("same version, different result"). Pure:
reads the job file only. A requirements or lock file (`-r`, `-c`, `uv sync`, `pip-sync`, `conda-lock`)
and an exact pin (`==`, `@ url`, a wheel path) are left alone."""

from __future__ import annotations

import re
import shlex

from gpujob.plan.context import JobContext
from gpujob.plan.model import Finding

_INSTALL = re.compile(r"\b(?:uv\s+)?pip3?\s+install\b|\bpython3?\s+-m\s+pip\s+install\b|\bconda\s+install\b")
_TAKES_VALUE = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--target", "-t", "--prefix",
                "-c", "--channel", "-n", "--name", "-p", "--python"}  # fmt: skip


def unpinned(setup: str) -> list[str]:
    """The package names run.setup installs without an exact version."""
    out: list[str] = []
    for line in re.split(r"[\n;]|&&|\|\|", setup):
        m = _INSTALL.search(line)
        if m is None:
            continue
        try:
            words = shlex.split(line[m.end() :])
        except ValueError:
            continue
        skip = False
        for w in words:
            if skip:
                skip = False
                continue
            if w in ("-r", "--requirement", "--constraint", "-e", "--editable", "--file"):
                break  # from a file, or the project itself: the file pins or it does not (U29's lock)
            if w in _TAKES_VALUE:
                skip = True
                continue
            if w.startswith("-") or w in (".", "..") or "/" in w or w.endswith((".whl", ".tar.gz")):
                continue
            name = re.split(r"[<>=!~\[ ]", w, maxsplit=1)[0]
            if "==" in w or "@" in w or (w.count("=") == 1 and m.group(0).startswith("conda")) or not name:
                continue
            out.append(w)
    return out


def setup_findings(ctx: JobContext) -> list[Finding]:
    run = ctx.spec.run
    if run is None or not run.setup or ctx.spec.state == "absent":
        return []
    names = unpinned(run.setup)
    if not names:
        return []
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return [
        ctx.finding(
            "U29",
            "warning",
            f"run.setup installs {shown} without a pinned version: a fresh container may get other "
            "versions than the last run had",
            detail="Every relaunch on a new pod or machine runs run.setup again, and a name (or a range) "
            "resolves to whatever is newest that day, transitive dependencies included.",
            fix="install from a lock file (uv pip sync requirements.lock / pip install -r with hashes), or "
            "pin each: name==version",
            key="run.setup",
        )
    ]
