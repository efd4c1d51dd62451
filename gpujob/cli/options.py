"""Options every command that prints takes alike. Kept free of heavy imports (a command imports it
when it runs)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
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
