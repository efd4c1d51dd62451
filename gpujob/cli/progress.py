"""Which progress renderer a command shows: the redrawing one on a terminal (gpujob.apply.progress_rich,
so rich loads only there), plain lines everywhere else (gpujob.apply.progress)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpujob.apply.progress import LineHooks, want_rich


def choose_hooks(no_color: bool, write_line: Callable[[str], None]) -> Any:
    """RichHooks on a terminal, LineHooks (through `write_line`) everywhere else."""
    if want_rich(no_color):
        from gpujob.apply.progress_rich import RichHooks

        return RichHooks()
    return LineHooks(write_line)
