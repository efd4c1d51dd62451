"""Markdown rendering for PR comments and CI summaries, from the jinja2 template templates/plan.md.j2.

A pure function of the Plan. Table cells are escaped (pipes, newlines) so user text cannot break the
layout; nothing here reads the environment.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from gpujob.cost.rates import rate, usd
from gpujob.plan.model import Action, ActionKind, Finding, JobPlan, MeterLine, Plan
from gpujob.render import summary as S

ICON = {"error": "⛔", "warning": "⚠️", "info": "ℹ️"}


@cache
def _template() -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=False,  # Markdown, not HTML; cells are escaped by the `cell` filter
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
    )
    env.filters["cell"] = cell
    env.filters["inline"] = inline
    env.globals.update(
        usd=usd,
        rate=rate,
        symbol=lambda a: S.SYMBOL[a.kind],
        verb=S.verb,
        label=S.resource_label,
        where=S.where,
        icon=lambda s: ICON[s],
        value=_value,
        summary_line=S.summary_line,
        billing_line=S.billing_line,
        finding_counts=S.finding_counts,
        job_cost_line=S.job_cost_line,
        run_line=S.run_line,
        job_symbols=job_symbols,
        job_findings=job_findings,
        open_job=open_job,
        meter_rows=meter_rows,
        finding=finding,
    )
    return env.get_template("plan.md.j2")


def render_markdown(plan: Plan) -> str:
    text: str = _template().render(plan=plan)
    return text.rstrip("\n") + "\n"


def finding(f: Finding) -> str:
    line = f"- {ICON[f.severity]} **{f.severity}** `{f.code}` {inline(f.summary)}"
    if f.source is not None:
        line += f" — `{S.where(f)}`"
    if f.fix:
        line += f"<br>fix: {inline(f.fix)}"
    return line


def inline(text: str) -> str:
    return " ".join(str(text).split())


def cell(text: str) -> str:
    return inline(text).replace("|", "\\|")


def _value(v: object) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, bool):
        return "true" if v else "false"
    return f'"{v}"' if isinstance(v, str) else str(v)


def job_findings(job: JobPlan) -> list[Finding]:
    return list(job.findings) + [f for a in job.actions for f in a.findings]


def job_symbols(job: JobPlan) -> str:
    changed = [a for a in job.actions if a.kind is not ActionKind.NOOP]
    if not changed:
        return "no changes"
    return " ".join(f"`{S.SYMBOL[a.kind]}`" for a in changed)


def open_job(job: JobPlan) -> bool:
    """Expanded by default when it has errors or destroys something; collapsed otherwise."""
    return any(f.severity == "error" for f in job_findings(job)) or any(
        a.kind in S.DESTROY for a in job.actions
    )


def meter_rows(a: Action) -> list[tuple[str, MeterLine]]:
    if a.kind in (ActionKind.NOOP, ActionKind.PULL, ActionKind.PUSH, ActionKind.LAUNCH):
        return []
    b = a.billing
    keeps = [("keeps billing", m) for m in b.keeps] if a.kind in S.SHOW_KEEPS else []
    return [("starts", m) for m in b.starts] + [("stops", m) for m in b.stops] + keeps
