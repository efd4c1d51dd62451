"""Polling with a deadline, through the injected Clock: how providers wait for observed state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from gpujob.clock import Clock

T = TypeVar("T")


@dataclass(frozen=True)
class Timeouts:
    ready: float = 1200.0  # create / start until running with an SSH endpoint
    stop: float = 600.0
    gone: float = 600.0  # terminate / destroy until the resource is gone
    stuck: float = 120.0  # an accepted start/stop that has not moved by then did nothing
    adopt: float = 30.0  # after an ambiguous create, look the name up for this long (listing lag)
    no_ssh_grace: float = 60.0  # RUNNING with its container up but no public port 22: give up after this
    interval: float = 5.0
    # State waits poll at first_interval, doubling up to interval: a resource that is ready in a
    # second (the local simulator, a quick stop) is seen in a second, a slow one costs few requests.
    first_interval: float = 0.25


async def poll(
    clock: Clock,
    fetch: Callable[[], Awaitable[T]],
    done: Callable[[T], bool],
    *,
    timeout: float,
    interval: float,
    check: Callable[[T, float], None] | None = None,
    first: float | None = None,
) -> tuple[T, bool]:
    """Fetch until `done(value)` or the deadline. `check(value, elapsed)` may raise to stop early.
    Sleeps `interval` between fetches, or starts at `first` and doubles up to `interval`.
    Returns the last value and whether it was done."""
    started = clock.now()
    delay = min(first, interval) if first else interval
    while True:
        value = await fetch()
        if done(value):
            return value, True
        elapsed = (clock.now() - started).total_seconds()
        if check is not None:
            check(value, elapsed)
        if elapsed + delay > timeout:
            return value, False
        await clock.sleep(delay)
        delay = min(delay * 2, interval)


GONE = "gone"


async def wait_gone(
    clock: Clock,
    status: Callable[[], Awaitable[str]],
    timeouts: Timeouts,
    *,
    platform: str,
    what: str,
    gone: tuple[str, ...] = (),
) -> None:
    """After an accepted delete, poll `status()` (which returns GONE once the API answers 404) until the
    resource is gone or in one of the `gone` states; a resource still there at the deadline is a
    NoEffectError, because it may still bill."""
    from gpujob.providers.base import NoEffectError

    state, ok = await poll(
        clock,
        status,
        lambda s: s == GONE or s in gone,
        timeout=timeouts.gone,
        interval=timeouts.interval,
        first=timeouts.first_interval,
    )
    if not ok:
        raise NoEffectError(
            f"the delete was accepted but {what} is still {state}",
            platform=platform,
            hint="it may still bill; re-run `gpujob apply` or delete it in the console",
        )
