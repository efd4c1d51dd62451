"""Deadlines for remote operations: every SSH command, stream and transfer gives up when nothing moves
for `idle_s` (no byte in either direction), or when it runs past an overall bound sized from the data
it moves (`command_s + bytes / min_rate`). The one place these limits live; session.Remote applies
them to each channel, callers only say what the operation is and how much data it carries.

Defaults are generous (a busy pod hashing a large checkpoint is not a stalled one); the environment
raises or lowers them:

    GPUJOB_SSH_IDLE_TIMEOUT     no byte for this long = stalled              default 60s
    GPUJOB_SSH_COMMAND_TIMEOUT  overall bound of a command, before data       default 300s
    GPUJOB_SSH_MIN_RATE         bytes/s a transfer or remote hash may be slowed to   default 262144 (256 KiB/s)
    GPUJOB_SSH_RATE_WINDOW      a transfer moving less than MIN_RATE over this window fails   default 30s
    GPUJOB_SSH_CONNECT_TIMEOUT  connecting (with retries) to a running machine default 30s

Durations accept seconds (`90`) or a unit (`90s`, `5m`).

The minimum rate is checked as a rate: a transfer (a pull, a sync, a carry) that moves fewer than
MIN_RATE x RATE_WINDOW bytes in any RATE_WINDOW fails then, keeping what it got; a pod sending one byte
every few seconds never idles but cannot hold a command open either. Sizes a machine claims are
checked against the disks before they size any bound (gpujob.ssh.space).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from gpujob.errors import ConfigError, SSHError

T = TypeVar("T")

ENV_IDLE = "GPUJOB_SSH_IDLE_TIMEOUT"
ENV_COMMAND = "GPUJOB_SSH_COMMAND_TIMEOUT"
ENV_MIN_RATE = "GPUJOB_SSH_MIN_RATE"
ENV_CONNECT = "GPUJOB_SSH_CONNECT_TIMEOUT"
ENV_WINDOW = "GPUJOB_SSH_RATE_WINDOW"
CLOSE_GRACE_S = 2.0  # a stalled channel is abandoned after this; its connection is closed soon after


class SSHStalled(SSHError):
    """A remote operation made no progress for the idle timeout, or ran past its overall bound."""

    def __init__(self, message: str, *, what: str, where: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.what = what
        self.where = where


class OutputTooLarge(SSHError):
    """A remote command printed more than the caller's bound (a hostile or broken remote)."""


@dataclass(frozen=True)
class Limits:
    idle_s: float = 60.0
    command_s: float = 300.0
    min_rate: float = 256 * 1024
    connect_s: float = 30.0
    window_s: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        e = os.environ if env is None else env
        d = cls()
        return cls(
            idle_s=_seconds(e, ENV_IDLE, d.idle_s),
            command_s=_seconds(e, ENV_COMMAND, d.command_s),
            min_rate=_rate(e, ENV_MIN_RATE, d.min_rate),
            connect_s=_seconds(e, ENV_CONNECT, d.connect_s),
            window_s=_seconds(e, ENV_WINDOW, d.window_s),
        )

    def for_bytes(self, nbytes: int) -> float:
        """Overall bound of an operation that moves (or hashes) `nbytes`."""
        return self.command_s + max(0, nbytes) / self.min_rate


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        from gpujob.jobfile.rules import parse_duration

        try:
            value = parse_duration(raw, minimum_s=0).total_seconds()
        except ValueError:
            value = -1.0
    if value <= 0:
        raise ConfigError(
            f"{name}={raw!r} is not a duration", hint=f"write seconds or a unit, e.g. {name}=90 or {name}=5m"
        )
    return value


def _rate(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(
            f"{name}={raw!r} is not a rate", hint=f"write bytes per second, e.g. {name}=1000000"
        )
    return value


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


class Watch:
    """The deadline of one remote operation. `touch(n)` on every byte moved; `guard(aw)` awaits with
    the time left and raises SSHStalled when it runs out."""

    def __init__(
        self,
        what: str,
        where: str,
        *,
        idle_s: float,
        total_s: float,
        left: str = "",
        expected: int | None = None,
        min_rate: float | None = None,
        window_s: float | None = None,
    ) -> None:
        self.what, self.where, self.left = what, where, left
        self.idle_s, self.total_s = idle_s, max(total_s, 0.0)
        self.expected = expected
        self._time = asyncio.get_running_loop().time
        self.started = self.last = self._time()
        self.moved = 0
        # the sliding window: (time, bytes moved by then), oldest first; off without a rate
        self.min_rate = min_rate if min_rate and window_s else None
        self.window_s = window_s or 0.0
        self._samples: deque[tuple[float, int]] = deque([(self.started, 0)])
        self.slow: float | None = None  # the rate that failed the window, once it did

    def touch(self, nbytes: int = 0) -> None:
        self.last = self._time()
        self.moved += nbytes
        if self.min_rate is not None and nbytes:
            self._samples.append((self.last, self.moved))
            self._prune(self.last)

    def _prune(self, now: float) -> None:
        edge = now - self.window_s
        while len(self._samples) > 1 and self._samples[1][0] <= edge:
            self._samples.popleft()

    def window_rate(self, now: float) -> float | None:
        """Bytes/s over the last window, once a whole window has passed (None before, or when the
        payload has all arrived and only the exit status is awaited)."""
        if now - self.started < self.window_s or (self.expected and self.moved >= self.expected):
            return None
        self._prune(now)
        return (self.moved - self._samples[0][1]) / self.window_s

    def remaining(self) -> float:
        now = self._time()
        left = min(self.last + self.idle_s, self.started + self.total_s) - now
        if self.min_rate is None:
            return left
        rate = self.window_rate(now)
        if rate is not None and rate < self.min_rate:
            self.slow = rate
            return 0.0
        return min(left, 0.5)  # look at the window again soon

    def expired(self) -> SSHStalled:
        now = self._time()
        # `expected` is the payload; a stream moves framing too (tar headers, stderr), so past it the
        # share would read as nonsense ("10.8 kB of 7.8 kB").
        expected = self.expected or 0
        moved = _size(self.moved) + (f" of {_size(expected)}" if expected and self.moved <= expected else "")
        if self.slow is not None and now - self.last < self.idle_s:
            why = (
                f"too slow: {self.slow:.0f} B/s over the last {self.window_s:g}s, below the minimum "
                f"{self.min_rate:.0f} B/s ({moved} moved)"
            )
            knob = f"{ENV_MIN_RATE} (lower) or {ENV_WINDOW}"
        elif now - self.started >= self.total_s and now - self.last < self.idle_s:
            why = f"did not finish within {self.total_s:.0f}s ({moved} moved)"
            knob = f"{ENV_COMMAND} or {ENV_MIN_RATE}"
        else:
            why = f"stalled: no data for {self.idle_s:g}s (after {moved})"
            knob = ENV_IDLE
        left = self.left or "the remote command was abandoned (it may still be running on the machine)"
        return SSHStalled(
            f"{self.what} on {self.where} {why}",
            what=self.what,
            where=self.where,
            hint=f"{left}; if the machine is only slow, raise {knob}",
        )

    async def guard(self, aw: Awaitable[T]) -> T:
        """Await `aw` for at most the time left (idle or overall, whichever ends first)."""
        task = asyncio.ensure_future(aw)
        try:
            while True:
                left = self.remaining()
                if left <= 0:
                    raise self.expired()
                done, _ = await asyncio.wait({task}, timeout=left)
                if done:
                    return task.result()
        finally:
            task.cancel()  # a no-op once it finished; else it must not outlive its deadline

    async def all(self, tasks: Iterable[asyncio.Task[object]]) -> None:
        """Wait for every task (they touch this watch as they move data); the first failure is raised."""
        pending = set(tasks)
        while pending:
            left = self.remaining()
            if left <= 0:
                raise self.expired()
            done, pending = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                exc = task.exception()
                if exc is not None:
                    raise exc
