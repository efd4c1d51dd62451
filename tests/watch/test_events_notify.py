"""Watch events (one line, events.jsonl, redacted) and the webhook (a real local HTTP server)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gpujob import redact
from gpujob.watch.events import append_event, make_event, read_events
from gpujob.watch.notify import Notifier
from tests.apply.fakes import FakeClock

AT = datetime(2026, 11, 29, 12, 0, 3, tzinfo=UTC)
SECRET = "hf_CANARYvalue0123456789"


def test_one_line_with_time_job_what_happened_what_was_done_and_money() -> None:
    ev = make_event(
        AT, "bert", "preempted", "pod gpujob-bert is\nEXITED", "start pod, launch run", usd_so_far=1.234
    )
    assert ev.line() == (
        "2026-11-29 12:00:03Z  bert  preempted: pod gpujob-bert is EXITED -> start pod, launch run  ($1.23 so far)"
    )


def test_secrets_never_reach_an_event() -> None:
    redact.register(SECRET)
    ev = make_event(AT, "bert", "recovery-failed", f"remote said token={SECRET}", f"retrying {SECRET}")
    assert SECRET not in ev.line() and SECRET not in ev.model_dump_json() and "***" in ev.happened


def test_events_file_appends_and_reads_the_newest_per_job(tmp_path: Path) -> None:
    for i in range(8):
        append_event(tmp_path, make_event(AT, "a" if i % 2 else "b", "note", f"n{i}"))
    with (tmp_path / "events.jsonl").open("a") as fh:
        fh.write('{"torn": ')  # a watcher killed mid-write
    assert [e.happened for e in read_events(tmp_path, "a", last=3)] == ["n3", "n5", "n7"]
    assert [e.happened for e in read_events(tmp_path, last=2)] == ["n6", "n7"]
    assert read_events(tmp_path / "nowhere") == []
    assert oct((tmp_path / "events.jsonl").stat().st_mode & 0o777) == "0o600"


class Hook:
    """A webhook that answers with the scripted statuses, then 200, and keeps every body."""

    def __init__(self, statuses: list[tuple[int, dict[str, str]]]) -> None:
        self.statuses = statuses
        self.bodies: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                hook.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                code, headers = hook.statuses.pop(0) if hook.statuses else (200, {})
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/services/T000/B000/SECRETPATH"
        # A short poll: shutdown() waits for the loop to look, 0.5 s by default, at every test's end.
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()


@pytest.fixture
def hook_factory() -> Iterator[Any]:
    made: list[Hook] = []

    def make(*statuses: tuple[int, dict[str, str]]) -> Hook:
        made.append(Hook(list(statuses)))
        return made[-1]

    yield make
    for h in made:
        h.server.shutdown()


def send(hook: Hook, *events: Any) -> tuple[Notifier, FakeClock, list[str]]:
    clock, warnings = FakeClock(), []

    async def go() -> Notifier:
        n = Notifier(hook.url, clock=clock, warn=warnings.append)
        for e in events:
            n.send(e)
        await n.aclose()
        return n

    return asyncio.run(go()), clock, warnings


def test_webhook_gets_slack_text_and_the_event_and_retries_5xx_and_429(hook_factory: Any) -> None:
    hook = hook_factory((500, {}), (429, {"Retry-After": "7"}))
    ev = make_event(AT, "bert", "preempted", "pod down", "started it", usd_so_far=2.0)
    n, clock, warnings = send(hook, ev)
    assert n.sent == 1 and n.failed == 0 and warnings == []
    assert len(hook.bodies) == 3 and hook.bodies[0] == hook.bodies[2]
    body = hook.bodies[-1]
    assert body["text"] == ev.line()
    assert body["metadata"]["event_type"] == "gpujob_watch"
    assert body["metadata"]["event_payload"]["event"] == "preempted"
    assert 0.5 <= clock.slept[0] <= 1.0 and clock.slept[1] == 7.0  # backoff, then the server's Retry-After


def test_webhook_waits_an_http_date_retry_after(hook_factory: Any) -> None:
    # FakeClock starts at 2026-11-29 12:00:00 UTC; the webhook asks for 12:00:20 as an HTTP-date.
    hook = hook_factory((503, {"Retry-After": "Sun, 29 Nov 2026 12:00:20 GMT"}))
    n, clock, warnings = send(hook, make_event(AT, "bert", "note", "x"))
    assert n.sent == 1 and warnings == [] and clock.slept == [20.0]


def test_webhook_gives_up_on_4xx_without_naming_the_secret_path(hook_factory: Any) -> None:
    hook = hook_factory((404, {}))
    n, clock, warnings = send(hook, make_event(AT, "bert", "parked", "budget"))
    assert n.failed == 1 and len(hook.bodies) == 1 and clock.slept == []
    assert warnings == ["notify: 127.0.0.1 did not take the 'parked' event (HTTP 404)"]
    assert "SECRETPATH" not in " ".join(warnings)


def test_webhook_body_carries_no_secret(hook_factory: Any) -> None:
    redact.register(SECRET)
    hook = hook_factory()
    send(hook, make_event(AT, "bert", "recovery-failed", f"launch said {SECRET}"))
    assert SECRET not in json.dumps(hook.bodies)


def test_a_dead_webhook_is_retried_then_reported(tmp_path: Path) -> None:
    clock, warnings = FakeClock(), []

    async def go() -> Notifier:
        n = Notifier("http://127.0.0.1:9/hook", clock=clock, warn=warnings.append)  # discard port: refused
        n.send(make_event(AT, "bert", "note", "x"))
        await n.aclose()
        return n

    n = asyncio.run(go())
    assert n.failed == 1 and len(clock.slept) == 3  # 4 attempts, backoff with jitter between them
    assert [lo <= t <= 2 * lo for lo, t in zip((0.5, 1.0, 2.0), clock.slept, strict=True)] == [True] * 3
    assert warnings == ["notify: 127.0.0.1 did not take the 'note' event (ConnectError)"]
