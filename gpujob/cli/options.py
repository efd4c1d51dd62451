"""Options every command that prints takes alike. Kept free of heavy imports (a command imports it
when it runs)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def plain_wanted(no_color: bool, env: Mapping[str, str] | None = None) -> bool:
    """--no-color, or NO_COLOR set (https://no-color.org: any value, even empty)."""
    return no_color or "NO_COLOR" in (os.environ if env is None else env)


def color_wanted(no_color: bool, stream: IO[str] | None = None) -> bool:
    """Colour only for a terminal, and never with --no-color or NO_COLOR."""
    return not plain_wanted(no_color) and (stream or sys.stdout).isatty()


def no_color_option(
    help: str = "Plain output: no colour, no redrawn progress (also with NO_COLOR set).",
) -> Callable[[F], F]:
    """--no-color, passed to the command as `no_color`."""
    return click.option("--no-color", is_flag=True, help=help)


def accepts_no_color(func: F) -> F:
    """--no-color on a command that never colours: accepted, so scripts can pass it to every command."""
    option = click.option(
        "--no-color",
        is_flag=True,
        expose_value=False,
        help="Accepted for scripts: this command prints no colour.",
    )
    return option(func)


def parse_lock_timeout(value: str) -> float:
    """'0s' / '0' (refuse at once) or a duration such as 30s, 5m, 1h -> seconds."""
    text = value.strip()
    if text in ("0", "0s", "0m", "0h"):
        return 0.0
    from gpujob.jobfile.rules import parse_duration

    try:
        return parse_duration(text, minimum_s=0).total_seconds()
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def lock_timeout_option() -> Callable[[F], F]:
    """--lock-timeout DURATION, passed as `lock_timeout` in seconds (Terraform's flag: 0s refuses at once)."""
    return click.option(
        "--lock-timeout",
        "lock_timeout",
        default="0s",
        show_default=True,
        metavar="DURATION",
        callback=lambda _ctx, _param, value: parse_lock_timeout(value),
        help="Wait up to this long for a job's lock another gpujob holds (e.g. 30s, 5m), then refuse.",
    )


def gated_run_options(auto_approve_help: str) -> Callable[[F], F]:
    """What apply and destroy take alike: job files, --auto-approve, --approve ID..., --no-color and
    --lock-timeout. Options of a command read in the order they are listed here."""

    def decorate(func: F) -> F:
        for option in reversed(
            (
                click.argument("targets", nargs=-1, type=click.Path(path_type=Path)),
                click.option("--auto-approve", is_flag=True, help=auto_approve_help),
                click.option(
                    "--approve",
                    "approvals",
                    multiple=True,
                    metavar="ACTION_ID",
                    help="Approve one gated action (repeatable).",
                ),
                click.option("--no-color", is_flag=True, help="Plain output."),
                lock_timeout_option(),
            )
        ):
            func = option(func)
        return func

    return decorate
