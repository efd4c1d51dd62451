"""Terminal rendering of a Plan, Terraform-style. A pure function of the plan; colour only on request."""

from __future__ import annotations

from collections.abc import Callable

import click

from gpujob.cost.model import MeterLine
from gpujob.cost.rates import rate, usd
from gpujob.plan.finding_lines import finding_lines
from gpujob.plan.model import Action, ActionKind, FieldChange, JobPlan, Plan
from gpujob.render import summary as S
from gpujob.render.sweep_text import SeenFindings, sweep_lines
from gpujob.safe import for_terminal as T  # every string a pod, an API or a job file chose

K = ActionKind

COLOUR: dict[ActionKind, str] = {
    K.CREATE: "green",
    K.UPDATE: "yellow",
    K.REPLACE: "magenta",
    K.TERMINATE: "red",
    K.DELETE_VOLUME: "red",
    K.RELEASE_IP: "red",
    K.DELETE_SNAPSHOT: "red",
    K.START: "green",
    K.STOP: "yellow",
    K.PULL: "cyan",
    K.PUSH: "cyan",
    K.LAUNCH: "cyan",
    K.RELAUNCH: "yellow",
    K.MOVE: "magenta",
    K.NOOP: "bright_black",
}
LEGEND = "+ create   ~ update   -/+ replace   - destroy   ▶ start   ⏸ stop   ⇣ pull   » launch   · no change"


def render_text(plan: Plan, *, color: bool = False) -> str:
    def style(text: str, **kw: object) -> str:
        return click.style(text, **kw) if color else text  # type: ignore[arg-type]

    out: list[str] = []
    n = len(plan.jobs)
    out.append(
        style(
            f"gpujob plan · {n} job{'s' if n != 1 else ''} · as of {plan.created_at:%Y-%m-%d %H:%M} UTC",
            bold=True,
        )
    )
    moves = any(a.kind is ActionKind.MOVE for a in plan.all_actions())
    out.append(style(f"Symbols: {LEGEND}" + ("   ⇄ move to another platform" if moves else ""), dim=True))
    out += [style(T(line), bold=True) for line in sweep_lines(plan)]
    seen = SeenFindings()
    for job in plan.jobs:
        out.append("")
        out += _job(job, style, seen)
    out.append("")
    findings = plan.all_findings()
    if findings:
        blocked = " Errors block apply." if plan.blocked else ""
        out.append(f"Findings: {S.finding_counts(findings)}.{blocked}")
    out.append(style(S.summary_line(plan), bold=True))
    out.append(S.billing_line(plan))
    return "\n".join(out) + "\n"


Style = Callable[..., str]


def _job(job: JobPlan, style: Style, seen: SeenFindings) -> list[str]:
    head = T(f"── {job.job} · {job.platform} · {job.spec_file} · wants {job.desired_state} ")
    out = [style(head + "─" * max(3, 100 - len(head)), bold=True)]
    for a in job.actions:
        out += _action(a, style)
    shown, same = seen.split(job)
    if job.findings:
        out.append("")
        out.append("  findings:")
        for f in shown:
            out += finding_lines(f, style, indent="    ")
        for other, count in same.items():
            out.append(T(f"    {'and ' if shown else ''}{count} as for {other} above (the same findings)"))
    run = S.run_line(job)
    if run is not None:
        out.append(f"  run: {T(run)}")
    if job.cadence is not None:
        out.append(f"  checkpoint cadence: {T(job.cadence.summary)}")
    if job.sweep is not None:  # the sweep-wide part is printed once, above the queues
        out.append(f"  {T(job.sweep.queue_summary)}")
    out.append(f"  cost: {S.job_cost_line(job)}")
    if job.forecast is not None:
        out.append(f"  forecast: {T(job.forecast.line())}")
        out.append("    inputs:")
        out += [f"      {T(line)}" for line in job.forecast.input_lines()]
    return out


def _action(a: Action, style: Style) -> list[str]:
    sym = style(f"{S.SYMBOL[a.kind]:>3}", fg=COLOUR[a.kind], bold=True)
    tags = [a.id]
    if a.depends_on:
        tags.append("after " + ", ".join(a.depends_on))
    flags = []
    if a.drift:
        flags.append(style("drift", fg="yellow"))
    if a.gated:
        flags.append(style("gated", fg="red"))
    flag_text = f" [{', '.join(flags)}]" if flags else ""
    out = [
        f"{sym} {S.verb(a)} {T(S.resource_label(a))}{flag_text}  "
        + style(T(f"({'; '.join(tags)})"), dim=True)
    ]
    pad = "      "
    out += [pad + T(r) for r in a.reasons]
    out += [pad + _change(c, style) for c in a.changes]
    out += _meters(a, style, pad)
    if a.data.summary:
        out.append(pad + "data: " + T(a.data.summary))
    for f in a.findings:
        out += finding_lines(f, style, indent=pad)
    return out


def _change(c: FieldChange, style: Style) -> str:
    text = T(f"~ {c.path} = {_value(c.before)} -> {_value(c.after)}")
    if c.forces_replacement:
        text += style("  # forces replacement", fg="magenta")
    return text


def _value(v: object) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _meters(a: Action, style: Style, pad: str) -> list[str]:
    b = a.billing
    if a.kind in (K.NOOP, K.PULL, K.PUSH, K.LAUNCH, K.RELAUNCH):
        return []
    rows: list[tuple[str, MeterLine]] = [("starts", m) for m in b.starts]
    rows += [("stops", m) for m in b.stops]
    if a.kind in S.SHOW_KEEPS:
        rows += [("keeps billing", m) for m in b.keeps]
    if not rows:
        return []
    width = max(len(m.what) for _, m in rows)
    out = []
    for word, m in rows:
        colour = {"starts": "red", "stops": "green"}.get(word)
        label = style(f"{word:<13}", fg=colour) if colour else f"{word:<13}"
        out.append(f"{pad}$ {label} {T(m.what):<{width}}  {rate(m):<26} {style(T(m.source), dim=True)}")
    if b.hourly_before != b.hourly_after:
        out.append(f"{pad}$ rate          {usd(b.hourly_before)}/h -> {usd(b.hourly_after)}/h")
    return out
