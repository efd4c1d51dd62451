"""A job's pictures from what `gpujob watch` recorded (gpujob.watch.ledger): steps over time with the
runs that were lost (preempted, killed) marked where their last step was, and money spent over time.
`series` computes (JSON-ready, for `status --format json`); `charts` draws them (gpujob.chart.plot)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpujob.chart import YELLOW, Style, plot


def series(ledger: Any) -> dict[str, Any]:
    """{"steps": [[iso, step]...], "usd": [[iso, usd]...], "lost": [iso...]} from a watch Ledger."""
    steps = {p.at: p.value for p in ledger.steps_trail}
    lost = []
    for a, b in zip(ledger.segments, ledger.segments[1:], strict=False):
        if a.exit_code != 0 and a.last_at is not None and b.first_at is not None:
            lost.append(a.last_at)
    for seg in ledger.segments:  # each run's own first and last step, exact from the launcher
        if seg.first_at is not None and seg.first_step is not None:
            steps.setdefault(seg.first_at, float(seg.first_step))
        if seg.last_at is not None and seg.last_step is not None:
            steps.setdefault(seg.last_at, float(seg.last_step))
    return {
        "steps": [[t.isoformat(), v] for t, v in sorted(steps.items())],
        "usd": [[p.at.isoformat(), p.value] for p in ledger.usd_trail],
        "lost": [t.isoformat() for t in sorted(lost)],
    }


def charts(data: dict[str, Any], style: Style) -> list[str]:
    """The two charts of `series(...)`, or nothing when there are not two points of either."""

    def pts(key: str) -> list[tuple[datetime, float]]:
        return [(datetime.fromisoformat(t), float(v)) for t, v in data.get(key, [])]

    lost = [datetime.fromisoformat(t) for t in data.get("lost", [])]
    out = plot(
        "steps over time", pts("steps"), style, marks=lost, mark_label="run lost (preempted or killed)"
    )
    money = plot(
        "money spent over time",
        pts("usd"),
        style,
        marks=lost,
        mark_label="run lost",
        value=lambda v: f"${v:,.2f}",
        color=YELLOW,
    )
    return out + money
