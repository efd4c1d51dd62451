"""Apply's progress for a person at a terminal: one live display holding a spinner for the steps in
flight, a bar per transfer (bytes, rate, ETA) and a spinner with elapsed time per wait.

Rich allows one live display at a time, so steps, transfers and waits are all tasks of one Progress;
columns that make sense only for transfers render empty for the other rows.
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.text import Text

from gpujob.apply.progress import _MARK, StepPhase, human_bytes
from gpujob.plan.model import Action
from gpujob.safe import for_terminal


class _OnlyFor(ProgressColumn):
    """Render `inner` for one kind of row (task field "kind") and nothing for the others."""

    def __init__(self, kind: str, inner: ProgressColumn) -> None:
        super().__init__()
        self.kind = kind
        self.inner = inner

    def render(self, task: Task) -> Any:
        return self.inner.render(task) if task.fields.get("kind") == self.kind else Text("")


class RichHooks:
    """Colour, bars and spinners (TTY only; the CLI picks LineHooks otherwise)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(finished_text=" "),
            TextColumn("{task.description}"),
            _OnlyFor("transfer", BarColumn(bar_width=30)),
            _OnlyFor("transfer", DownloadColumn()),
            _OnlyFor("transfer", TransferSpeedColumn()),
            _OnlyFor("transfer", TimeRemainingColumn()),
            _OnlyFor("wait", TimeElapsedColumn()),
            console=self.console,
            transient=True,
        )
        self.active: dict[str, Action] = {}
        self.rows: dict[tuple[str, str], TaskID] = {}
        self.started: dict[tuple[str, str], float] = {}
        self.steps_row: TaskID | None = None

    def __enter__(self) -> RichHooks:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.steps_row is not None:
            self.progress.stop()
            self.steps_row = None

    def _live(self) -> None:
        # Drawing starts with the first event, not on entry: apply asks its question (a plain
        # prompt) before any step runs, and a live display would draw over it.
        if self.steps_row is None:
            self.progress.start()
            self.steps_row = self.progress.add_task("working", total=None, kind="steps")

    def _refresh_steps(self) -> None:
        if self.steps_row is not None:
            text = ", ".join(escape(a) for a in self.active) or "working"
            self.progress.update(self.steps_row, description=f"[cyan]{text}[/]")

    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None:
        self._live()
        style = {"done": "green", "failed": "red", "skipped": "yellow"}.get(phase, "cyan")
        if phase == "start":
            self.active[action.id] = action
        else:
            self.active.pop(action.id, None)
        self._refresh_steps()
        self.progress.refresh()  # printing redraws the live rows: let them be the current ones
        tail = f": {escape(for_terminal(detail, lines=True))}" if detail else ""
        self.console.print(f"[{style}]{_MARK.get(phase, ' ')} {escape(action.id)} {phase}[/]{tail}")

    def note(self, job: str, message: str) -> None:
        self.console.print(f"  [dim]{escape(job)}:[/] {escape(for_terminal(message, lines=True))}")

    def transfer(self, job: str, label: str, done_bytes: int, total_bytes: int) -> None:
        key = (job, label)
        row = self.rows.get(key)
        if row is None:
            if total_bytes <= 0:
                return
            self._live()
            row = self.progress.add_task(
                f"  {escape(job)}: {escape(label)}", total=total_bytes, kind="transfer"
            )
            self.rows[key] = row
            self.started[key] = time.monotonic()
            self.progress.refresh()  # draw the bar now; later frames come from rich's refresh thread
        self.progress.update(row, completed=min(done_bytes, total_bytes))
        if done_bytes >= total_bytes:
            self.progress.refresh()
            seconds = max(time.monotonic() - self.started.pop(key), 1e-6)
            self.progress.remove_task(self.rows.pop(key))
            self.progress.refresh()
            rate = human_bytes(total_bytes / seconds)
            self.note(job, f"{label}: {human_bytes(total_bytes)} in {seconds:.1f}s ({rate}/s)")

    def waiting(self, job: str, what: str, elapsed_s: float, deadline_s: float | None) -> None:
        key = (job, what)
        limit = f" [dim](gives up after {deadline_s:.0f}s)[/]" if deadline_s else ""
        if key not in self.rows:
            self._live()
            self.rows[key] = self.progress.add_task(
                f"  {escape(job)}: {escape(what)}{limit}", total=None, kind="wait"
            )
            self.progress.refresh()

    def settle(self, job: str, key: str) -> None:
        row = self.rows.pop((job, key), None)
        self.started.pop((job, key), None)
        if row is not None:
            self.progress.remove_task(row)
            self.progress.refresh()
