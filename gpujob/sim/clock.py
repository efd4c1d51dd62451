"""Simulated time: real elapsed time × speed, plus manual advances. Billing reads only this clock."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime


class SimClock:
    """`now()` is seconds since the Unix epoch on the simulated timeline.

    speed=0 freezes time except for `advance()`, which is what exact billing tests want."""

    def __init__(self, start: float | None = None, speed: float = 1.0) -> None:
        self._lock = threading.Lock()
        # A fresh clock starts on a whole second, so the HTTP Date header (whole seconds) tells a frozen
        # clock (speed=0) exactly.
        self._base_sim = float(int(time.time())) if start is None else start
        self._base_real = time.monotonic()
        self.speed = speed

    def now(self) -> float:
        with self._lock:
            return self._base_sim + (time.monotonic() - self._base_real) * self.speed

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("the simulated clock only moves forward")
        with self._lock:
            self._base_sim += seconds
            return self._base_sim + (time.monotonic() - self._base_real) * self.speed

    def iso(self, ts: float | None = None) -> str:
        return iso(self.now() if ts is None else ts) or ""


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_duration(text: str) -> float:
    """'2h', '90m', '30s', '1d', '1h30m' or a bare number of seconds. Each part is the job file's own
    duration (gpujob.jobfile.rules.parse_duration): one parser, one meaning of every unit."""
    import re

    from gpujob.jobfile.rules import parse_duration as one

    text = text.strip().lower()
    try:
        return float(text)
    except ValueError:
        pass
    parts = re.findall(r"\d+(?:\.\d+)?[smhdw]", text)
    if not parts or "".join(parts) != text:
        raise ValueError(f"not a duration: {text!r} (use e.g. 2h, 90m, 1h30m, 45s)")
    return sum(one(part, minimum_s=0).total_seconds() for part in parts)
