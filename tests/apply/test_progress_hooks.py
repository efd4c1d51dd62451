"""Transfers and waits as each kind of hooks shows them (no SSH here: see tests/ssh/test_progress_*)."""

from __future__ import annotations

import asyncio
import re
from io import StringIO

import pytest
from rich.console import Console

from gpujob.apply import applier, progress
from gpujob.apply.capacity import backoff_message, candidates
from gpujob.apply.progress import JobReporter, LineHooks, NullHooks, RecordingHooks, want_rich
from gpujob.apply.progress_rich import RichHooks
from gpujob.cli.progress import choose_hooks
from gpujob.plan.model import ActionKind
from tests.apply.fakes import FakeProvider, action, make_spec

MB = 1_000_000
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def feed(hooks: object, total: int, steps: int = 1000, label: str = "sync") -> None:
    for i in range(steps + 1):
        hooks.transfer("toy", label, total * i // steps, total)  # type: ignore[attr-defined]


def test_line_hooks_bound_a_large_transfer_to_a_few_lines_naming_its_size():
    lines: list[str] = []
    hooks = LineHooks(lines.append)
    feed(hooks, 120 * MB)
    hooks.settle("toy", "sync")
    assert 2 <= len(lines) <= 6, lines
    assert lines[0] == "  toy: sync: 120.0 MB to transfer"
    assert [re.search(r"(\d+)%", line).group(1) for line in lines[1:-1]] == ["25", "50", "75"]  # type: ignore[union-attr]
    assert re.fullmatch(r"  toy: sync: 120\.0 MB in [\d.]+s \([\d.]+ [kMG]?B/s\)", lines[-1])


def test_line_hooks_give_a_small_transfer_one_line_and_an_empty_one_none():
    lines: list[str] = []
    hooks = LineHooks(lines.append)
    feed(hooks, 4000, steps=10, label="pull")
    hooks.settle("toy", "pull")
    hooks.transfer("toy", "sync", 0, 0)
    hooks.settle("toy", "sync")
    assert len(lines) == 1 and lines[0].startswith("  toy: pull: 4.0 kB in ")


def test_line_hooks_restart_a_transfer_after_settle():
    lines: list[str] = []
    hooks = LineHooks(lines.append)
    feed(hooks, 10 * MB)
    hooks.settle("toy", "sync")
    first = len(lines)
    feed(hooks, 10 * MB)
    assert len(lines) == 2 * first  # the retried sync is reported again, not swallowed


def test_line_hooks_print_a_wait_once_then_once_a_minute():
    lines: list[str] = []
    hooks = LineHooks(lines.append)
    for second in range(0, 181):
        hooks.waiting("toy", "waiting for runpod to start gpujob-toy", float(second), 600.0)
    hooks.settle("toy", "waiting for runpod to start gpujob-toy")
    assert lines[0] == "  toy: waiting for runpod to start gpujob-toy (gives up after 10m00s)"
    assert lines[1:] == [
        "  toy: waiting for runpod to start gpujob-toy: still waiting, 1m00s",
        "  toy: waiting for runpod to start gpujob-toy: still waiting, 2m00s",
        "  toy: waiting for runpod to start gpujob-toy: still waiting, 3m00s",
    ]


def rich_console() -> tuple[Console, StringIO]:
    out = StringIO()
    return Console(file=out, force_terminal=True, width=120, color_system="truecolor"), out


def test_rich_hooks_draw_a_bar_for_a_transfer_and_a_spinner_for_a_wait():
    console, out = rich_console()
    a = action("toy", ActionKind.LAUNCH, "run")
    with RichHooks(console=console) as hooks:
        hooks.step(a, "start")
        hooks.transfer("toy", "sync", 0, 50 * MB)
        hooks.transfer("toy", "sync", 20 * MB, 50 * MB)
        hooks.waiting("toy", "waiting for the SSH endpoint of gpujob-toy", 0.0, 600.0)
        hooks.progress.refresh()
        drawn = out.getvalue()
        feed(hooks, 50 * MB, steps=20)
        hooks.settle("toy", "sync")
        hooks.settle("toy", "waiting for the SSH endpoint of gpujob-toy")
        hooks.step(a, "done", "run launched")
        assert not hooks.rows  # nothing left drawing
    text = ANSI.sub("", out.getvalue())
    assert "━" in drawn and "toy: sync" in drawn and "MB" in drawn  # the bar, its label, its bytes
    assert "waiting for the SSH endpoint of gpujob-toy" in drawn
    assert "\x1b[" in drawn  # a terminal gets colour and cursor control
    assert "toy: sync: 50.0 MB in " in text  # the finished transfer leaves one summary line
    assert "toy.run.launch done" in text


def test_rich_hooks_survive_settle_of_unknown_keys_and_empty_transfers():
    console, out = rich_console()
    with RichHooks(console=console) as hooks:
        hooks.settle("toy", "never started")
        hooks.transfer("toy", "sync", 0, 0)
        hooks.note("toy", "[bold]not markup[/bold]")
    text = ANSI.sub("", out.getvalue())
    assert "[bold]not markup[/bold]" in text and "sync" not in text  # an empty transfer draws nothing


def test_reporter_waiting_without_grace_ticks_at_once_and_settles():
    hooks = RecordingHooks()
    reporter = JobReporter(hooks, "toy")

    async def go() -> None:
        async with reporter.waiting("waiting 15s for capacity", 15.0):
            pass

    asyncio.run(go())
    assert hooks.waits[0] == ("toy", "waiting 15s for capacity", pytest.approx(0.0, abs=0.5), 15.0)
    assert hooks.events[-1] == ("toy", "settled", "waiting 15s for capacity")


def test_reporter_waiting_shows_nothing_for_a_call_shorter_than_its_grace():
    hooks = RecordingHooks()

    async def go() -> None:
        async with JobReporter(hooks, "toy").waiting("quick", grace_s=3600):
            await asyncio.sleep(0)

    asyncio.run(go())
    assert hooks.waits == [] and hooks.events == []


def test_reporter_transfer_keeps_counts_rising_and_always_settles():
    hooks = RecordingHooks()
    with pytest.raises(RuntimeError), JobReporter(hooks, "toy").transfer("pull") as report:
        report(10, 100)
        report(5, 100)  # a re-fetch after a checksum mismatch must not move the bar back
        report(40, 100)
        raise RuntimeError("connection dropped")
    assert [t[2] for t in hooks.transfers] == [10, 40]
    assert hooks.events == [("toy", "settled", "pull")]


def test_reporter_works_with_hooks_that_predate_transfers():
    class Old:
        def __init__(self) -> None:
            self.notes: list[str] = []

        def note(self, job: str, message: str) -> None:
            self.notes.append(message)

    old = Old()
    reporter = JobReporter(old, "toy")
    with reporter.transfer("sync") as report:
        report(1, 2)
    reporter("hello")
    assert old.notes == ["hello"]


def test_a_slow_provider_call_is_shown_as_a_wait(monkeypatch):
    monkeypatch.setattr(applier, "WAIT_GRACE_S", 0.01)
    monkeypatch.setattr(progress, "TICK_S", 0.01)
    ticked = asyncio.Event()

    class Hooks(RecordingHooks):
        def waiting(self, job: str, what: str, elapsed_s: float, deadline_s: float | None) -> None:
            super().waiting(job, what, elapsed_s, deadline_s)
            ticked.set()

    class Slow(FakeProvider):
        async def stop(self, resource):  # type: ignore[no-untyped-def]
            await ticked.wait()  # the platform is "slow" until the wait has been shown
            return resource

    hooks = Hooks()
    machine = make_machine()
    wrapped = applier.WaitedProvider(Slow(), JobReporter(hooks, "toy"))
    assert asyncio.run(asyncio.wait_for(wrapped.stop(machine), 10)) is machine
    assert ("toy", "waiting", "waiting for runpod to stop gpujob-toy") in hooks.events
    assert hooks.events[-1] == ("toy", "settled", "waiting for runpod to stop gpujob-toy")
    assert wrapped.platform == "runpod"  # everything else passes through


def make_machine():  # type: ignore[no-untyped-def]
    from gpujob.live import LiveResource

    return LiveResource(platform="runpod", kind="pod", id="p1", name="gpujob-toy", status="running")


def test_capacity_backoff_names_what_was_full_and_what_comes_next():
    cands = candidates(make_spec())
    message = backoff_message(cands, 30)
    assert message.startswith("waiting 30s for capacity: 1× RTX4090 in EU-RO-1")
    assert "A6000" in message and " full; next: 1× RTX4090 in EU-RO-1" in message


def test_rich_is_chosen_only_for_a_terminal_with_colour():
    assert want_rich(no_color=True, env={}) is False
    assert want_rich(env={"NO_COLOR": "1"}) is False
    assert want_rich(env={"TERM": "dumb"}) is False
    assert want_rich(env={}) is False  # pytest captures: not a terminal
    assert isinstance(choose_hooks(False, print), LineHooks)
    NullHooks().transfer("toy", "sync", 1, 1)  # the null hooks take every event
