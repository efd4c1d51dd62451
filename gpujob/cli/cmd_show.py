"""`gpujob show PLAN.json`: render a saved plan for review, exactly as `gpujob plan` showed it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gpujob.cli.main import run_command

HELP = """Render a saved plan (`gpujob plan -o plan.json`) as `gpujob plan` would have: text for a
terminal, markdown for a PR comment, or the JSON itself. Nothing is read from the platforms.

\b
Text from the plan (names, reasons, values: much of it came from the platforms or the job file) reaches
the terminal as plain text only: control characters, colour codes and terminal links are shown as
escapes (\\x1b[...), never acted on.

\b
Examples:
  gpujob show plan.json
  gpujob show plan.json --format markdown > plan.md
  gpujob show plan.json --format json | jq '.jobs[].actions[].id'
"""


@click.command(name="show", help=HELP)
@click.argument("plan_file", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option(
    "--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True
)
@click.option("--no-color", is_flag=True, help="Plain text (also automatic when stdout is not a terminal).")
def command(plan_file: Path, fmt: str, no_color: bool) -> None:
    run_command(_show, plan_file, fmt, no_color)


def _show(plan_file: Path, fmt: str, no_color: bool) -> None:
    from gpujob.cli.options import color_wanted
    from gpujob.render import render_plan

    plan = load_plan(plan_file)
    if fmt == "text":
        plan = visible_strings(plan)
    sys.stdout.write(render_plan(plan, fmt, color=fmt == "text" and color_wanted(no_color)))


def load_plan(path: Path) -> Any:  # Plan
    from pydantic import ValidationError

    from gpujob.errors import GpujobError
    from gpujob.plan.model import Plan, plan_problem

    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GpujobError(
            f"{path}: cannot read it: {exc}", hint="make one with: gpujob plan -o plan.json"
        ) from None
    try:
        return Plan.model_validate_json(text)
    except ValidationError as exc:
        raise GpujobError(
            f"{path}: not a gpujob plan file: {plan_problem(exc)}",
            hint="make one with: gpujob plan -o plan.json",
        ) from None


def visible_strings(plan: Any) -> Any:
    """The same plan with every string made terminal-safe (gpujob.redact.visible): what a hostile name
    or reason carries is shown, not executed; the renderer's own colours are added afterwards."""
    from gpujob.redact import redact, visible

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return redact(visible(v))
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return type(plan).model_validate(walk(plan.model_dump(mode="json")))
