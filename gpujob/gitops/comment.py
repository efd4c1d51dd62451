"""The sticky PR comment's text, and the approvals a PR description holds. Pure functions.

The comment is `gpujob plan --format markdown` (which has the one heading) with a hidden marker to find
it again on the next push and a status line. The plan folds each job itself, so the comment adds no
fold of its own; a plan over the host's size limit is cut at a line boundary (never inside a code
block or a <details>) with a note saying where the full plan is.
"""

from __future__ import annotations

import re

GITHUB_LIMIT = 65536
GITLAB_LIMIT = 1_000_000
MARKER = "<!-- gpujob-plan{key} -->"
# "gpujob-approve: ID [ID...]" (also "/gpujob approve ID"), one or more lines of a PR description.
APPROVE_RE = re.compile(r"^\s*/?gpujob[- ]approve:?\s+(.+)$", re.IGNORECASE | re.MULTILINE)
# An action id is job.resource.verb: a word that is not one (or that could pass for a flag) is dropped.
ACTION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)+$")
KEY_RE = re.compile(r"^[A-Za-z0-9_./-]{1,100}$")

EXIT_WORDS = {
    0: "no changes",
    1: "**plan failed or blocked**: see the findings below and the job log",
    2: "changes to apply on merge",
}
FOOTER = "<sub>Merging applies exactly this saved plan (plan.json); a stale plan is refused.</sub>"


def marker(key: str = "") -> str:
    return MARKER.format(key=f":{key}" if key else "")


def approvals_in(text: str) -> list[str]:
    """Action ids approved by `gpujob-approve:` lines, in order, once each. Never an `<id>.unverified`
    override (gpujob.apply.unreachable): destroying a machine nobody could look at is typed by hand."""
    ids: list[str] = []
    for match in APPROVE_RE.finditer(text or ""):
        ids += [
            w
            for w in match.group(1).replace(",", " ").split()
            if ACTION_ID_RE.match(w) and not w.endswith(".unverified")
        ]
    return list(dict.fromkeys(ids))


def _fence_of(line: str) -> str | None:
    m = re.match(r"^\s*(`{3,}|~{3,})", line)
    return m.group(1) if m else None


def _closed(lines: list[str]) -> list[str]:
    """`lines` with an open code block and open <details> closed, so a cut swallows nothing after it."""
    fence: str | None = None
    depth = 0
    for line in lines:
        f = _fence_of(line)
        if fence is None and f is not None:
            fence = f
        elif fence is not None and f is not None and f[0] == fence[0] and len(f) >= len(fence):
            fence = None
        elif fence is None:
            depth += line.count("<details") - line.count("</details>")
    tail = [fence] if fence else []
    tail += ["", "</details>"] * max(depth, 0)
    return [*lines, *tail]


def build_body(
    plan_md: str,
    *,
    key: str = "",
    exit_code: int | None = None,
    limit: int = GITHUB_LIMIT,
    artifact_hint: str = "the `gpujob-plan` artifact of this run (plan.md)",
) -> str:
    """The whole comment: marker, the plan's heading (with the key), status line, the plan; cut to fit."""
    lines = plan_md.rstrip("\n").splitlines()
    heading = "## gpujob plan"
    if lines and lines[0].startswith("#"):
        heading, lines = lines[0], lines[1:]
    if key:
        heading += f" · {key}"
    header = [marker(key), heading]
    if exit_code is not None:
        header += ["", f"_{EXIT_WORDS.get(exit_code, f'exit {exit_code}')}_"]
    footer = ["", FOOTER]

    def assemble(shown: list[str], note: list[str]) -> str:
        return "\n".join([*header, *shown, *note, *footer]) + "\n"

    body = assemble(lines, [])
    if len(body) <= limit:
        return body
    lo, hi = 0, len(lines)  # the longest prefix of lines that fits with the truncation note
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(assemble(_closed(lines[:mid]), _note(mid, len(lines), artifact_hint))) <= limit:
            lo = mid
        else:
            hi = mid - 1
    body = assemble(_closed(lines[:lo]), _note(lo, len(lines), artifact_hint))
    if len(body) > limit:  # not even the header fits: the marker and the note
        body = "\n".join([header[0], *_note(0, len(lines), artifact_hint)]) + "\n"
    return body[:limit]


def _note(shown: int, total: int, where: str) -> list[str]:
    return ["", f"> **Plan truncated**: showing {shown} of {total} lines to stay under the comment size limit. "
            f"The full plan is in {where}."]  # fmt: skip
