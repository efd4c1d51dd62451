"""gpujob.retry: the one place retry waits come from (platform clients and the watch webhook)."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime

from gpujob.retry import Outcome, attempts, backoff, retry_after

NOW = datetime(2026, 10, 21, 7, 28, 0, tzinfo=UTC)


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    assert retry_after("120", NOW) == 120.0
    assert retry_after("Wed, 21 Oct 2026 07:28:30 GMT", NOW) == 30.0
    assert retry_after("Wed, 21 Oct 2026 07:27:00 GMT", NOW) == 0.0  # already past: no wait
    assert retry_after("-5", NOW) == 0.0
    assert (
        retry_after(None, NOW) is None and retry_after("soon", NOW) is None and retry_after(" ", NOW) is None
    )


def test_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    rng = random.Random(7)
    for attempt, ceiling in ((1, 1.0), (2, 2.0), (3, 4.0), (8, 30.0)):
        wait = backoff(attempt, base=1.0, cap=30.0, rng=rng)
        assert ceiling / 2 <= wait <= ceiling


def test_attempts_stop_at_success_at_a_hopeless_failure_or_at_the_last_try() -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    def run(results: list[Outcome]) -> tuple[Outcome, int]:
        calls = iter(results)
        count = 0

        async def call() -> Outcome:
            nonlocal count
            count += 1
            return next(calls)

        got = asyncio.run(attempts(call, tries=4, sleep=sleep, base=1.0, cap=8.0, max_wait=60.0))
        return got, count

    fail = Outcome(done=False, why="HTTP 503")
    assert run([fail, Outcome(done=True)]) == (Outcome(done=True), 2)
    assert run([Outcome(done=False, why="HTTP 404", again=False)])[1] == 1
    assert run([fail] * 4) == (fail, 4)
    slept.clear()
    run([Outcome(done=False, why="HTTP 429", wait=600.0), Outcome(done=True)])
    assert slept == [60.0]  # the server's wait, capped
