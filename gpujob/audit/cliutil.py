"""Small CLI helpers shared by audit, cost and force-unlock (kept out of cli/main.py, which others own)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click


class ErrorExitOne(click.Command):
    """Usage errors exit 1, not click's 2: for audit and cost, 2 means 'money problem found', and a
    typo in a nightly pipeline must not read as that."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            exc.exit_code = 1  # type: ignore[misc]  # a ClassVar in newer click; per-instance is what we want
            raise


def interactive(stdin: Any = None) -> bool:
    """False in CI (CI=true) or when stdin is not a terminal: then nothing may prompt."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        return False
    stream = stdin if stdin is not None else sys.stdin
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
