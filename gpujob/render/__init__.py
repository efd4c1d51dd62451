"""Renderers: pure functions from a Plan to text. Only gpujob/cli writes to the terminal.

render_plan(plan, "text" | "markdown" | "json", color=False) -> str
"""

from __future__ import annotations

from typing import Literal

from gpujob.plan.model import Plan

Format = Literal["text", "markdown", "json"]
FORMATS: tuple[Format, ...] = ("text", "markdown", "json")


def render_plan(plan: Plan, fmt: Format | str = "text", color: bool = False) -> str:
    """Render a plan. `color` only affects "text" (ANSI); the other formats never carry colour codes."""
    if fmt == "text":
        from gpujob.render.text import render_text

        return render_text(plan, color=color)
    if fmt == "markdown":
        from gpujob.render.markdown import render_markdown

        return render_markdown(plan)
    if fmt == "json":
        from gpujob.render.json_plan import render_json

        return render_json(plan)
    raise ValueError(f"unknown plan format {fmt!r}; choose one of {', '.join(FORMATS)}")
