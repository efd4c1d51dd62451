"""How a provider client tells a person at a terminal what it waits for: one short line per retry wait
on stderr when it is a terminal, nothing extra when piped or under CI=true (the log keeps every retry)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

API_NAMES = {"runpod": "RunPod", "paperspace": "Paperspace"}

RetryNotice = Callable[[str], None]
# Per platform, the highest attempt announced while its calls fail together: reads run in parallel
# (a platform may have two clients, REST and GraphQL) and a person at the one terminal needs one line
# per wait, not one per call (the log keeps each). Cleared when a call ends, however it ends.
ANNOUNCED: dict[str, int] = {}


def terminal_notice(stream: Any = None, env: Mapping[str, str] | None = None) -> RetryNotice | None:
    """Where a client tells a person what it waits for: stderr when it is a terminal, else nowhere (a
    pipe or CI=true gets the plain output and nothing extra; the log still records every retry)."""
    e = os.environ if env is None else env
    fixed = stream
    if e.get("CI", "").strip().lower() in ("1", "true", "yes"):
        return None
    if not (fixed or sys.stderr).isatty():
        return None

    def show(line: str) -> None:
        out = fixed or sys.stderr  # looked up at each line: a live progress display may wrap stderr
        out.write(line + "\n")
        out.flush()

    return show


def retry_line(platform: str, why: str, delay: float, attempt: int, attempts: int) -> str:
    """One short line per wait, e.g. "RunPod API: 503, retrying in 2.1 s (attempt 2/6)"."""
    return f"{API_NAMES.get(platform, platform)} API: {why}, retrying in {delay:.1f} s (attempt {attempt}/{attempts})"
