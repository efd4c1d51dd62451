"""`gpujob audit`: everything billing in the account, who owns it, what it costs, which trap it is."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from gpujob.audit.cliutil import ErrorExitOne
from gpujob.cli.main import run_command
from gpujob.cli.options import no_color_option
from gpujob.model import PLATFORMS

HELP = """Find everything billing in the account, gpujob's or not.

\b
Lists pods, machines, network volumes, static IPs, snapshots, templates and registry credentials
on each platform with an API key set; for each: owner, state, $/h and $/mo (monthly caps applied),
since when, how long it has been idle, the platform trap behind it and a one-line fix.

\b
Exit codes: 0 nothing billable idle beyond --idle-threshold · 2 something is · 1 error.
--fix writes a plan (never acts) that stops the idle spend of resources this repo's jobs own;
review it, then `gpujob apply PLAN`, whose teardown gate checks every step.

\b
Examples:
  gpujob audit
  gpujob audit --platform runpod --format markdown --idle-threshold 3d
  gpujob audit --fix -o fix.json && gpujob apply fix.json
"""


@click.command(name="audit", cls=ErrorExitOne, help=HELP)
@click.argument("jobfiles", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--platform",
    "platforms",
    multiple=True,
    type=click.Choice(PLATFORMS),
    help="Limit to a platform (repeatable).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True
)
@click.option(
    "--idle-threshold", default="24h", show_default=True, help="Idle longer than this exits 2 (30m, 24h, 7d)."
)
@click.option("--fix", is_flag=True, help="Also write a plan that stops this repo's idle spend (never acts).")
@click.option("-o", "--out", type=click.Path(path_type=Path, dir_okay=False), default=Path("plan.json"),
              show_default=True, help="Where --fix writes its plan.")  # fmt: skip
@no_color_option()
def command(
    jobfiles: tuple[Path, ...],
    platforms: tuple[str, ...],
    fmt: str,
    idle_threshold: str,
    fix: bool,
    out: Path,
    no_color: bool,
) -> None:
    code = run_command(_run, list(jobfiles), platforms, fmt, idle_threshold, fix, out, no_color)
    sys.exit(code)


def _run(
    jobfiles: list[Path],
    platforms: tuple[str, ...],
    fmt: str,
    idle_threshold: str,
    fix: bool,
    out: Path,
    no_color: bool = False,
) -> int:
    import asyncio
    from datetime import UTC, datetime

    from gpujob.audit.account import choose_platforms, local_jobs, read_account
    from gpujob.audit.classify import classify
    from gpujob.audit.render import render_audit
    from gpujob.errors import ConfigError
    from gpujob.jobfile.model import parse_duration
    from gpujob.profile import load_profile

    try:
        threshold = parse_duration(idle_threshold, minimum_s=0).total_seconds()
    except ValueError as exc:
        raise ConfigError(f"--idle-threshold: {exc}") from None
    wanted = choose_platforms(platforms)
    jobs = local_jobs(jobfiles)
    # --fix also reads the platforms the jobs use, so the plan's fingerprint is the one apply recomputes.
    reading = sorted(set(wanted) | ({j.platform for j in jobs} if fix else set()))
    live = asyncio.run(read_account(reading))  # type: ignore[arg-type]
    now = datetime.now(UTC)
    report = classify(
        live,
        local_jobs={j.name: j.project for j in jobs},
        now=now,
        idle_threshold_s=threshold,
        profiles=load_profile,
        platforms=wanted,
    )
    from gpujob.cli.options import color_wanted

    color = color_wanted(no_color)
    width = shutil.get_terminal_size().columns if color else None
    click.echo(render_audit(report, fmt, color=color, width=width), nl=False)  # type: ignore[arg-type]
    if fix:
        from gpujob.audit.fix import build_fix_plan

        plan = build_fix_plan(report, live, jobs, now=now, profiles=load_profile)
        from gpujob.cli.private_file import write_private

        write_private(out, plan.model_dump_json(indent=2) + "\n")
        actions = plan.all_actions()
        saved = sum(a.billing.hourly_before for a in actions)
        click.echo(
            f"\nFix plan: {len(actions)} action(s), stops ${saved:.4f}/h of this repo's idle spend; written to {out}.\n"
            f"Nothing was changed. Review it, then: gpujob apply {out}  (every teardown is gated)",
            err=fmt != "text",
        )
        for a in actions:
            click.echo(f"  {a.id}  {a.kind.value} {a.resource_kind} {a.resource_name}", err=fmt != "text")
    if live.read_errors:
        for e in live.read_errors:
            click.echo(f"Error: {e}", err=True)
        return 1
    return report.exit_code
