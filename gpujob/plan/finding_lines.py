"""A finding as text: the words `gpujob plan` prints for it, and the same words above a refusal to apply
a plan that has errors (gpujob.errors.PlanBlockedError), whoever reports it (the CLI, watch, a move).
One wording, kept where both the printed plan (gpujob.render.text) and the applier read it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from gpujob.plan.model import Finding, Plan
from gpujob.safe import for_terminal as T  # every string a pod, an API or a job file chose

Style = Callable[..., str]
SEVERITY = {"error": ("✗", "red"), "warning": ("!", "yellow"), "info": ("i", "blue")}
WIDTH = 110


def where(f: Finding) -> str:
    if f.source is None:
        return ""
    return f"{f.source.file}:{f.source.line}:{f.source.column} ({f.source.key})"


def finding_lines(f: Finding, style: Style, *, indent: str) -> list[str]:
    mark, colour = SEVERITY[f.severity]
    out = [indent + style(f"{mark} {f.severity}", fg=colour, bold=True) + T(f" [{f.code}] {f.summary}")]
    sub = indent + "    "
    if f.detail:
        out += _wrap(f.detail, sub)
    if f.source is not None:
        out.append(sub + "at " + T(where(f)))
    if f.fix:
        out += _wrap("fix: " + f.fix, sub)
    return out


def error_lines(plan: Plan) -> list[str]:
    """The plan's error findings, each as the plan prints it (under its job's name): what a refusal to
    apply names above itself."""
    out: list[str] = []
    for job in plan.jobs:
        errors = [
            f for f in [*job.findings, *(f for a in job.actions for f in a.findings)] if f.severity == "error"
        ]
        if errors:
            out.append(T(f"── {job.job} · {job.platform}"))
            for f in errors:
                out += finding_lines(f, lambda text, **_: text, indent="  ")
    return out


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        T(text), width=WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    )
