"""Audit renderers: text for terminals, markdown (jinja2) for PRs and issues, json for machines."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from gpujob.audit.model import AuditItem, AuditReport
from gpujob.plan.costs import ago

Format = Literal["text", "markdown", "json"]

OWNER_LABEL = {"this-repo": "this repo", "other-gpujob": "other gpujob", "foreign": "not gpujob"}


def usd_h(v: float) -> str:
    return f"${v:,.4f}/h"


def usd_m(v: float) -> str:
    return f"${v:,.2f}/mo"


def when(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC") if t else "-"


def idle_unknown(item: AuditItem) -> str:
    """Idle since an unknown time: at most its age, where the platform says when it was made."""
    return f"≤{ago(item.idle_at_most_s)}" if item.idle_at_most_s is not None else "?"


def owner_label(item: AuditItem) -> str:
    label = OWNER_LABEL[item.owner]
    return f"{label} ({item.job})" if item.job else label


def render_audit(
    report: AuditReport, fmt: Format = "text", *, color: bool = False, width: int | None = None
) -> str:
    """`color`/`width`: a terminal's (the text table fits it, header bold); piped, plain and unwrapped."""
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "text":
        return _text(report, color=color, width=width)
    raise ValueError(f"unknown format {fmt!r}")


def _filters() -> dict[str, object]:
    from gpujob.safe import cell, code, md

    # names, states and errors come from the platforms' APIs (anyone on the account names a pod)
    return {
        "usd_h": usd_h, "usd_m": usd_m, "ago": ago, "when": when, "owner": owner_label,
        "md": md, "cell": cell, "code": code, "cell_code": lambda t: code(t, in_table=True),
    }  # fmt: skip


def _markdown(report: AuditReport) -> str:
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("gpujob.audit", "templates"),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(_filters())
    return env.get_template("audit.md.j2").render(r=report, ago=ago)


def _text(report: AuditReport, *, color: bool = False, width: int | None = None) -> str:
    from gpujob.table import table

    out = [
        f"gpujob audit  {when(report.generated_at)}  idle threshold {ago(report.idle_threshold_s)}  "
        f"jobs in this repo: {', '.join(report.local_jobs) or 'none'}",
    ]
    header = ["OWNER", "KIND", "NAME", "STATE", "$/H", "$/MO", "RATE", "SINCE", "IDLE", "TRAP"]
    for total in report.totals:
        items = [i for i in report.items if i.platform == total.platform]
        out.append("")
        out.append(total.platform.upper())
        rows = [
            [
                owner_label(i),
                i.kind,
                i.label,
                i.state,
                f"{i.usd_per_hour:.4f}",
                f"{i.usd_per_month:.2f}",
                i.rate_source,
                when(i.since),
                (ago(i.idle_seconds) if i.idle_seconds is not None else idle_unknown(i))
                + ("!" if i.over_threshold else "")
                if i.idle
                else "-",
                i.gotcha or "-",
            ]
            for i in items
        ]
        # One line per row (a cell too long for the terminal ends in …): each row's details go under it.
        lines = table(header, rows, color=color, width=width, indent=2, one_line=True)
        out.append(_Drawn(lines[0]))
        for item, line in zip(items, lines[1:], strict=True):
            out.append(_Drawn(line))
            for m in item.meters:
                cap = f", cap ${m.monthly_cap_usd:g}/mo" if m.monthly_cap_usd is not None else ""
                out.append(
                    f"      {m.what}: {usd_h(m.usd_per_hour)}, {usd_m(m.usd_per_month)}{cap}  [{m.source}]"
                )
            if item.rate_note:
                out.append(f"      note: {item.rate_note}")
            if item.gotcha:
                title = f" {item.gotcha_title}" if item.gotcha_title else ""
                out.append(f"      trap {item.gotcha}:{title}")
            if item.fix:
                out.append(f"      fix: {item.fix}")
        if not items:
            out.append("  (nothing in this account)")
        out.append(
            f"  {total.platform} total: {total.resources} resources, {total.billable} billable: "
            f"{usd_h(total.usd_per_hour)}, {usd_m(total.usd_per_month)}; idle {usd_m(total.idle_usd_per_month)}"
            f" (this repo's idle {usd_m(total.owned_idle_usd_per_month)})"
        )
    out.append("")
    out.append(
        f"TOTAL {usd_h(report.usd_per_hour)}, {usd_m(report.usd_per_month)}; idle {usd_m(report.idle_usd_per_month)}"
    )
    for err in report.read_errors:
        out.append(f"read error: {err}")
    flagged = report.flagged
    if flagged:
        out.append(
            f"{len(flagged)} billable resource(s) idle longer than {ago(report.idle_threshold_s)}: "
            + ", ".join(f"{i.platform}/{i.label}" for i in flagged)
        )
    else:
        out.append(f"Nothing billable idle longer than {ago(report.idle_threshold_s)}.")
    from gpujob.safe import for_terminal

    # names and errors come from the APIs; the table's cells went through gpujob.safe already
    return "\n".join(line if isinstance(line, _Drawn) else for_terminal(line) for line in out) + "\n"


class _Drawn(str):
    """A table line gpujob.table drew (its cells escaped, its colours kept)."""
