from __future__ import annotations

from gpujob.apply.progress import LineHooks
from gpujob.apply.progress_rich import RichHooks
from gpujob.plan.model import ActionKind
from tests.apply.fakes import action


def test_line_hooks_print_one_line_per_event():
    lines: list[str] = []
    hooks = LineHooks(lines.append)
    a = action("toy", ActionKind.CREATE)
    hooks.step(a, "start")
    hooks.step(a, "done", "created gpujob-toy")
    hooks.note("toy", "waiting 15s for capacity")
    assert lines == [
        "… toy.pod.create start",
        "✓ toy.pod.create done: created gpujob-toy",
        "  toy: waiting 15s for capacity",
    ]


def test_rich_hooks_render_markup_safely(capsys):
    a = action("toy", ActionKind.LAUNCH, "run")
    with RichHooks() as hooks:
        hooks.step(a, "start")
        hooks.step(a, "failed", "remote said [red]no[/red]")  # remote text must not become markup
        hooks.note("toy", "[bold]x[/bold]")
    err = capsys.readouterr().err
    assert "toy.run.launch failed" in err and "[red]no[/red]" in err and "[bold]x[/bold]" in err
