"""What apply reports while it works. The applier calls hooks; the CLI picks plain lines or rich.

Besides steps and notes, hooks see byte transfers (code sync, checkpoint pulls) and waits (a pod
provisioning, SSH coming up, capacity backoff). A transfer or a wait is named by a key (its label or
`what`); `settle` says it is over, whatever its outcome, so a drawer can drop its bar or spinner.
Code below the applier reaches these through a JobReporter, which is also the plain `note` callable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

from gpujob.plan.model import Action

StepPhase = str  # "start" | "done" | "failed" | "skipped"
Progress = Callable[[int, int], None]

TICK_S = 1.0  # how often a wait in progress is re-reported (display only: real time, not the Clock)


class ApplyHooks(Protocol):
    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None: ...

    def note(self, job: str, message: str) -> None: ...

    def transfer(self, job: str, label: str, done_bytes: int, total_bytes: int) -> None: ...

    def waiting(self, job: str, what: str, elapsed_s: float, deadline_s: float | None) -> None: ...

    def settle(self, job: str, key: str) -> None: ...


class NullHooks:
    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None:
        pass

    def note(self, job: str, message: str) -> None:
        pass

    def transfer(self, job: str, label: str, done_bytes: int, total_bytes: int) -> None:
        pass

    def waiting(self, job: str, what: str, elapsed_s: float, deadline_s: float | None) -> None:
        pass

    def settle(self, job: str, key: str) -> None:
        pass


class RecordingHooks:
    """Keeps every event; used by tests and by the CLI summary."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.transfers: list[tuple[str, str, int, int]] = []
        self.waits: list[tuple[str, str, float, float | None]] = []

    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None:
        self.events.append((action.id, phase, detail))

    def note(self, job: str, message: str) -> None:
        self.events.append((job, "note", message))

    def transfer(self, job: str, label: str, done_bytes: int, total_bytes: int) -> None:
        self.transfers.append((job, label, done_bytes, total_bytes))

    def waiting(self, job: str, what: str, elapsed_s: float, deadline_s: float | None) -> None:
        if not self.waits or self.waits[-1][:2] != (job, what):
            self.events.append((job, "waiting", what))  # once per wait, not per tick
        self.waits.append((job, what, elapsed_s, deadline_s))

    def settle(self, job: str, key: str) -> None:
        self.events.append((job, "settled", key))


_MARK = {"start": "…", "done": "✓", "failed": "✗", "skipped": "-"}
SMALL_TRANSFER = 1 << 20  # below this a plain log gets only the closing line


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def _clock_text(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class LineHooks:
    """Plain lines (pipes, CI logs): nothing redrawn. A transfer gets at most five lines (start,
    25/50/75 %, done with size and rate); a wait one line when it starts, one a minute, one at the end."""

    def __init__(self, write: Callable[[str], None]) -> None:
        from gpujob.safe import for_terminal

        # notes quote the machine (file names, its errors): nothing in a line acts on the terminal
        self.write = lambda line: write(for_terminal(line, lines=True))
        self._transfers: dict[tuple[str, str], tuple[float, int]] = {}  # -> (started, quarter shown)
        self._waits: dict[tuple[str, str], float] = {}  # -> elapsed last shown

    def step(self, action: Action, phase: StepPhase, detail: str = "") -> None:
        tail = f": {detail}" if detail else ""
        self.write(f"{_MARK.get(phase, ' ')} {action.id} {phase}{tail}")

    def note(self, job: str, message: str) -> None:
        self.write(f"  {job}: {message}")

    def transfer(self, job: str, label: str, done_bytes: int, total_bytes: int) -> None:
        key = (job, label)
        if key not in self._transfers:
            if total_bytes <= 0:
                return  # nothing to send: say nothing
            self._transfers[key] = (time.monotonic(), 0)
            if total_bytes >= SMALL_TRANSFER:
                self.note(job, f"{label}: {human_bytes(total_bytes)} to transfer")
        started, shown = self._transfers[key]
        done = min(done_bytes, total_bytes)
        if done >= total_bytes:
            seconds = max(time.monotonic() - started, 1e-6)
            rate = human_bytes(total_bytes / seconds)
            self.note(job, f"{label}: {human_bytes(total_bytes)} in {seconds:.1f}s ({rate}/s)")
            self._transfers[key] = (started, 4)
            return
        quarter = done * 4 // total_bytes
        if total_bytes >= SMALL_TRANSFER and 0 < quarter < 4 and quarter > shown:
            self._transfers[key] = (started, quarter)
            self.note(
                job,
                f"{label}: {quarter * 25}% ({human_bytes(done)} of {human_bytes(total_bytes)})",
            )

    def waiting(self, job: str, what: str, elapsed_s: float, deadline_s: float | None) -> None:
        key = (job, what)
        last = self._waits.get(key)
        if last is not None and elapsed_s - last < 60:
            return
        self._waits[key] = elapsed_s
        limit = f" (gives up after {_clock_text(deadline_s)})" if deadline_s else ""
        if last is None:
            self.note(job, f"{what}{limit}")
        else:
            self.note(job, f"{what}: still waiting, {_clock_text(elapsed_s)}")

    def settle(self, job: str, key: str) -> None:
        self._transfers.pop((job, key), None)
        self._waits.pop((job, key), None)


def want_rich(no_color: bool = False, env: dict[str, str] | None = None) -> bool:
    """Redraw only for a person at a terminal: both streams TTYs, no NO_COLOR/--no-color, no dumb TERM."""
    env = dict(os.environ) if env is None else env
    if no_color or "NO_COLOR" in env or env.get("TERM") == "dumb":
        return False
    return sys.stdout.isatty() and sys.stderr.isatty()


class JobReporter:
    """One job's view of the hooks. Calling it writes a note, so it is what `note` callables get."""

    def __init__(self, hooks: Any, job: str) -> None:
        self.hooks = hooks
        self.job = job

    def __call__(self, message: str) -> None:
        self.hooks.note(self.job, message)

    def _call(self, name: str, *args: Any) -> None:
        method = getattr(self.hooks, name, None)  # hooks written before transfers/waits existed
        if method is not None:
            method(self.job, *args)

    @contextlib.contextmanager
    def transfer(self, label: str) -> Iterator[Progress]:
        """A (done, total) callback for the SSH layer; counts only go up, and the end is always told."""
        last = {"done": -1}

        def progress(done: int, total: int) -> None:
            if done < last["done"]:
                return
            last["done"] = done
            self._call("transfer", label, done, total)

        try:
            yield progress
        finally:
            self._call("settle", label)

    @contextlib.asynccontextmanager
    async def waiting(
        self, what: str, deadline_s: float | None = None, *, grace_s: float = 0.0
    ) -> AsyncIterator[None]:
        """Tick `waiting` every TICK_S while the body runs. With a grace, a wait shorter than it is
        never shown (most provider calls are quick); without one the first tick is immediate."""
        started = time.monotonic()
        shown = False

        def tick() -> None:
            nonlocal shown
            shown = True
            self._call("waiting", what, time.monotonic() - started, deadline_s)

        async def ticker() -> None:
            await asyncio.sleep(grace_s if grace_s > 0 else TICK_S)
            while True:
                tick()
                await asyncio.sleep(TICK_S)

        if grace_s <= 0:
            tick()
        task = asyncio.create_task(ticker())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if shown:
                self._call("settle", what)


def reporter_of(note: Callable[[str], None]) -> JobReporter | None:
    return note if isinstance(note, JobReporter) else None
