"""Retrying, in one place: how long a server asked to wait (Retry-After: seconds or an HTTP-date), the
backoff between attempts (exponential with jitter, so parallel clients do not stampede), and a small
loop for a call that is simply tried again (the watch webhook). The platform clients
(gpujob.providers.http) wait by the same two functions inside their own loop, which also paces by
RateLimit headers and tells idempotent calls from the rest."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds a Retry-After header asks for (`120`, or `Wed, 21 Oct 2026 07:28:00 GMT` measured from
    `now`); None when absent or unreadable, 0 for a time already past."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(seconds, 0.0)


def backoff(attempt: int, *, base: float, cap: float, rng: random.Random | None = None) -> float:
    """The wait after failed attempt `attempt` (1, 2, ...): half of min(cap, base · 2^(attempt-1)) plus
    a random part up to the other half."""
    ceiling = min(cap, base * 2 ** (attempt - 1))
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


@dataclass(frozen=True)
class Outcome:
    """One attempt: done (success), or why not, whether another try can help, and the server's wait."""

    done: bool
    why: str = ""
    again: bool = True
    wait: float | None = None


async def attempts(
    call: Callable[[], Awaitable[Outcome]],
    *,
    tries: int,
    sleep: Callable[[float], Awaitable[None]],
    base: float,
    cap: float,
    max_wait: float,
    rng: random.Random | None = None,
) -> Outcome:
    """Call until done, a failure that cannot get better (again=False), or `tries` attempts; between
    attempts wait the backoff, or the server's own wait when it gave a longer one (at most max_wait)."""
    outcome = Outcome(done=False, why="not tried")
    for attempt in range(1, tries + 1):
        outcome = await call()
        if outcome.done or not outcome.again or attempt == tries:
            return outcome
        delay = backoff(attempt, base=base, cap=cap, rng=rng)
        if outcome.wait is not None:
            delay = max(delay, min(outcome.wait, max_wait))
        await sleep(delay)
    return outcome
