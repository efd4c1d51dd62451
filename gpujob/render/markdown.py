"""Markdown rendering for PR comments and CI summaries, from the jinja2 template templates/plan.md.j2.

A pure function of the Plan; nothing here reads the environment. Every string that did not come from
this file (names, reasons, values, findings, paths: much of it from the platforms or the job file) goes
through one of the escapes below before it reaches the template, so no text can add markup, links,
HTML or break the layout: `md` for prose and table cells, `html_text` inside HTML (the <summary> line),
`code` for code spans, `fenced` for code blocks, `mermaid_label` inside the chart.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from gpujob.cost.model import MeterLine
from gpujob.cost.rates import rate, usd
from gpujob.plan.finite import endless, finite, left_running_per_hour, sweep_totals
from gpujob.plan.model import Action, ActionKind, Finding, JobPlan, Plan
from gpujob.profile import HOURS_PER_MONTH
from gpujob.render import summary as S
from gpujob.render.sweep_text import SeenFindings

# every escape below is the output boundary's (gpujob.safe): one place for what text may do
from gpujob.safe import cell, code, fenced, html_text, inline, md, mermaid_label

ICON = {"error": "⛔", "warning": "⚠️", "info": "ℹ️"}
APPROVE_PREFIX = "gpujob-approve:"  # what examples/ci and `gpujob pr-comment approvals` read (gitops)


@cache
def _template() -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=False,  # Markdown, not HTML: each value is escaped by the filter fit for its place
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
    )
    env.filters["cell"] = cell
    env.filters["inline"] = md
    env.filters["md"] = md
    env.filters["html_text"] = html_text
    env.filters["code"] = code
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
        money_line=money_line,
        headline_lines=headline_lines,
        finding_counts=S.finding_counts,
        job_cost_line=S.job_cost_line,
        run_line=S.run_line,
        job_symbols=job_symbols,
        job_findings=job_findings,
        open_job=open_job,
        meter_rows=meter_rows,
        finding=finding,
        gated=gated_actions,
        approves=approves,
        approve_block=approve_block,
        billing_chart=billing_chart,
        changes_block=changes_block,
    )
    return env.get_template("plan.md.j2")


def render_markdown(plan: Plan) -> str:
    text: str = _template().render(plan=plan, seen=SeenFindings())
    return text.rstrip("\n") + "\n"


# --- pieces ----------------------------------------------------------------------------------------


def finding(f: Finding) -> str:
    line = f"- {ICON[f.severity]} **{md(f.severity)}** {code(f.code)} {md(f.summary)}"
    if f.source is not None:
        line += f" — {code(S.where(f))}"
    if f.fix:
        line += f"<br>fix: {md(f.fix)}"
    return line


def _value(v: object) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, bool):
        return "true" if v else "false"
    return f'"{inline(v)}"' if isinstance(v, str) else inline(v)


def changes_block(a: Action) -> str:
    lines = [
        f"~ {inline(c.path)} = {_value(c.before)} -> {_value(c.after)}"
        + ("  # forces replacement" if c.forces_replacement else "")
        for c in a.changes
    ]
    return fenced(lines, "diff")


def per_month(usd_per_hour: float) -> float:
    return round(usd_per_hour * HOURS_PER_MONTH, 6)


def _signed(amount: float, unit: str) -> str:
    return f"{'+' if amount > 0 else ''}{usd(amount)}/{unit}"


def money_line(plan: Plan) -> str:
    """'Billing now $3.00/h (≈ $2,160.00/mo if left running), after apply $0.00/h (≈ $0.00/mo):
    -$3.00/h, ≈ -$2,160.00/mo.' A plan that runs something that ends (a sweep, a job with
    run.max_runtime) says its rates while the runs go, and a $/mo only of what runs on after them."""
    t = S.totals(plan)
    now, after = t.now_per_hour, t.after_per_hour
    if not finite(plan.jobs):
        text = (
            f"Billing now {usd(now)}/h (≈ {usd(per_month(now))}/mo if left running), "
            f"after apply {usd(after)}/h (≈ {usd(per_month(after))}/mo if left running)"
        )
        if not t.delta_per_hour:
            return text + ": no change."
        delta = t.delta_per_hour
        return text + f": {_signed(delta, 'h')}, ≈ {_signed(per_month(delta), 'mo')}."
    left = left_running_per_hour(plan.jobs)
    then = (
        f"then {usd(left)}/h (≈ {usd(per_month(left))}/mo if left running)"
        if left
        else "then no machine runs"
    )
    text = f"Billing now {usd(now)}/h, after apply {usd(after)}/h while the runs go, {then}"
    return text + (f": {_signed(t.delta_per_hour, 'h')}." if t.delta_per_hour else ": no change.")


AFTER_CELLS = {
    "terminate": "its machines are terminated once their cells are done",
    "stop": "its machines stop once their cells are done",
    "keep": "its machines keep running once their cells are done",
}


AFTER_RUN = {
    "terminate": "its machine is terminated when the run ends",
    "stop": "its machine stops when the run ends",
    "keep": "its machine keeps running after the run",
}


def headline_lines(plan: Plan) -> list[str]:
    """The lines a PR comment leads with: each finite run's estimated total, first (escaped): a sweep's,
    and the most a job with run.max_runtime costs by then."""
    out = []
    for j in plan.jobs:
        e = j.run_estimate
        if e is None or j.desired_state != "running":
            continue
        after = AFTER_RUN.get(e.on_finish, f"teardown.on_finish is {e.on_finish}")
        if e.on_finish == "keep":
            after += f" ({usd(e.usd_per_hour)}/h, ≈ {usd(per_month(e.usd_per_hour))}/mo if left running)"
        out.append(
            f"**Estimated total at most {usd(e.usd)}** · job {code(j.job)}: "
            + md(f"run.max_runtime {e.hours:g} h at {usd(e.usd_per_hour)}/h (gpujob watch parks it then)")
            + f" · {md(after)}"
        )
    for s in sweep_totals(plan.jobs):
        if not s.running:
            continue
        after = AFTER_CELLS.get(s.on_finish, f"teardown.on_finish is {s.on_finish}")
        if s.on_finish == "keep" and s.kept_usd_per_hour:
            k = s.kept_usd_per_hour
            after += f" ({usd(k)}/h, ≈ {usd(per_month(k))}/mo if left running)"
        elif s.on_finish == "stop" and s.parked_usd_per_month:
            after += f" ({usd(s.parked_usd_per_month)}/mo while stopped)"
        notes = (" " if s.notes.startswith(" ") else "") + md(s.notes.strip()) if s.notes else ""
        out.append(
            f"**Estimated total {usd(s.total_usd)}**{notes} · {md(s.scope)} · "
            f"{usd(s.usd_per_hour)}/h while its machines run · {md(after)}"
        )
    return out


def billing_chart(plan: Plan) -> str:
    """A Mermaid flowchart of what bills now -> after apply, per job and in total ($/h, and ≈ $/mo of
    what runs until stopped: a sweep queue's machine ends with its cells)."""

    def node(key: str, title: str, per_hour: float, runs_on: bool) -> str:
        monthly = f" ≈ {usd(per_month(per_hour))}/mo" if runs_on else ""
        return f'{key}["{mermaid_label(f"{title}: {usd(per_hour)}/h{monthly}")}"]'

    lines = ["flowchart LR"]
    rows: list[tuple[str, float, float, bool]] = [
        (j.job, j.current_usd_per_hour, j.after_usd_per_hour, endless(j) or j.desired_state != "running")
        for j in plan.jobs
    ]
    if len(rows) != 1:
        t = S.totals(plan)
        rows.append(("all jobs", t.now_per_hour, t.after_per_hour, all(r[3] for r in rows)))
    for i, (name, now, after, runs_on) in enumerate(rows):
        delta = round(after - now, 6)
        edge = mermaid_label(_signed(delta, "h") if delta else "no change")
        lines.append(
            f'    {node(f"now{i}", f"{name} now", now, runs_on)} -->|"{edge}"| '
            f"{node(f'after{i}', f'{name} after apply', after, runs_on)}"
        )
    return fenced(lines, "mermaid")


def gated_actions(plan: Plan) -> list[Action]:
    return [a for a in plan.all_actions() if a.gated]


def approves(a: Action) -> str:
    """What approving `a` allows, in words (escaped)."""
    words = f"{S.verb(a)} {S.resource_label(a)}"
    if a.resource_id:
        words += f" ({a.resource_id})"
    if a.data.summary:
        words += f": {a.data.summary}"
    return md(words)


def approve_block(plan: Plan) -> str:
    """The lines to paste into the PR description, one per gated action, as a code block to copy."""
    return fenced([f"{APPROVE_PREFIX} {a.id}" for a in gated_actions(plan)], "text")


def job_findings(job: JobPlan) -> list[Finding]:
    return list(job.findings) + [f for a in job.actions for f in a.findings]


def job_symbols(job: JobPlan) -> str:
    changed = [a for a in job.actions if a.kind is not ActionKind.NOOP]
    if not changed:
        return "no changes"
    return " ".join(f"`{S.SYMBOL[a.kind]}`" for a in changed)


def open_job(job: JobPlan) -> bool:
    """Expanded by default when it has errors, destroys something or needs an approval; collapsed
    otherwise."""
    return any(f.severity == "error" for f in job_findings(job)) or any(
        a.kind in S.DESTROY or a.gated for a in job.actions
    )


def meter_rows(a: Action) -> list[tuple[str, MeterLine]]:
    if a.kind in (ActionKind.NOOP, ActionKind.PULL, ActionKind.PUSH, ActionKind.LAUNCH, ActionKind.RELAUNCH):
        return []
    b = a.billing
    keeps = [("keeps billing", m) for m in b.keeps] if a.kind in S.SHOW_KEEPS else []
    return [("starts", m) for m in b.starts] + [("stops", m) for m in b.stops] + keeps
