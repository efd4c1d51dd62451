"""The client-side rate-limit pacer: reads RunPod v2 `RateLimit` headers and says how long to wait
before the next call so the remaining calls of a window are spread over it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Pacer:
    """Client-side view of v2 `RateLimit: "minute";r=0;t=12, "hour";r=2800;t=1812` headers."""

    windows: dict[str, tuple[int, float, datetime]] = field(default_factory=dict)

    def observe(self, header: str | None, now: datetime) -> None:
        if not header:
            return
        for part in header.split(","):
            name = re.search(r'"?([A-Za-z]+)"?', part)
            r = re.search(r"\br=(\d+)", part)
            t = re.search(r"\bt=(\d+(?:\.\d+)?)", part)
            if name and r and t:
                self.windows[name.group(1)] = (int(r.group(1)), float(t.group(1)), now)

    def delay(self, now: datetime, low_water: int) -> float:
        wait = 0.0
        for remaining, reset, seen in self.windows.values():
            left = reset - (now - seen).total_seconds()
            if left <= 0:
                continue
            if remaining <= 0:
                wait = max(wait, left)
            elif remaining <= low_water:
                wait = max(wait, left / (remaining + 1))
        return wait

    def spend(self) -> None:
        self.windows = {k: (max(r - 1, 0), t, s) for k, (r, t, s) in self.windows.items()}
