"""What apply reports while it works. The applier calls hooks; the CLI picks plain lines or rich."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gpujob.plan.model import Action

StepPhase = str  # "start" | "done" | "failed" | "skipped"


class ApplyHooks(Protocol):
    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None: ...

    def note(self, job: str, message: str) -> None: ...


class NullHooks:
    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None:
        pass

    def note(self, job: str, message: str) -> None:
        pass


class RecordingHooks:
    """Keeps every event; used by tests and by the CLI summary."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None:
        self.events.append((action.id, phase, detail))

    def note(self, job: str, message: str) -> None:
        self.events.append((job, "note", message))


_MARK = {"start": "…", "done": "✓", "failed": "✗", "skipped": "-"}


class LineHooks:
    """Plain lines (pipes, CI logs): one line per event, nothing redrawn."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write

    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None:
        tail = f": {detail}" if detail else ""
        self.write(f"{_MARK.get(phase, ' ')} {action.id} {phase}{tail}")

    def note(self, job: str, message: str) -> None:
        self.write(f"  {job}: {message}")


class RichHooks:
    """Colour and a live spinner listing the steps in flight (TTY only)."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.active: dict[str, Action] = {}
        self.status = self.console.status("")

    def __enter__(self) -> RichHooks:
        self.status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.status.stop()

    def _refresh(self) -> None:
        self.status.update(", ".join(f"{a.id}" for a in self.active.values()) or "working")

    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None:
        from rich.markup import escape

        style = {"done": "green", "failed": "red", "skipped": "yellow"}.get(phase, "cyan")
        if phase == "start":
            self.active[action.id] = action
        else:
            self.active.pop(action.id, None)
        tail = f": {escape(detail)}" if detail else ""
        self.console.print(f"[{style}]{_MARK.get(phase, ' ')} {escape(action.id)} {phase}[/]{tail}")
        self._refresh()

    def note(self, job: str, message: str) -> None:
        from rich.markup import escape

        self.console.print(f"  [dim]{escape(job)}:[/] {escape(message)}")
