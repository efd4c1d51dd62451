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


def charts(data: dict[str, Any], style: Style, forecast: dict[str, Any] | None = None) -> list[str]:
    """The two charts of `series(...)`, or nothing when there are not two points of either; with a
    forecast (gpujob.cost.forecast.Forecast as JSON), each runs on to the P90 finish with the band
    between the P50 and P90 projections (`status --chart`)."""

    def pts(key: str) -> list[tuple[datetime, float]]:
        return [(datetime.fromisoformat(t), float(v)) for t, v in data.get(key, [])]

    lost = [datetime.fromisoformat(t) for t in data.get("lost", [])]
    steps, usd = pts("steps"), pts("usd")
    step_band, usd_band, finish = _bands(steps, usd, forecast)
    out = plot("steps over time" + (" against the forecast" if step_band else ""), steps, style, marks=lost,
               mark_label="run lost (preempted or killed)", band=step_band, band_marks=finish)  # fmt: skip
    money = plot(
        "money spent over time" + (" against the forecast" if usd_band else ""),
        usd,
        style,
        marks=lost,
        mark_label="run lost",
        value=lambda v: f"${v:,.2f}",
        color=YELLOW,
        band=usd_band,
        band_marks=finish,
    )
    return out + money


BAND_POINTS = 96


def _bands(
    steps: list[tuple[datetime, float]], usd: list[tuple[datetime, float]], f: dict[str, Any] | None
) -> Any:
    """(steps band, money band, finish marks): steps from the newest toward run.total_steps, reached at the
    P50 finish (high edge) and at the P90 finish (low edge); money at the rate until the P50 and P90 cost."""
    if not f or not steps or not f.get("total_steps"):
        return [], [], []
    now, done = max(steps)
    p50, p90 = datetime.fromisoformat(f["p50_finish"]), datetime.fromisoformat(f["p90_finish"])
    total, spent, rate = float(f["total_steps"]), (max(usd)[1] if usd else f["spent_usd"]), f["usd_per_hour"]
    span = max((p90 - now).total_seconds(), 1.0)

    def along(t: datetime, finish: datetime) -> float:
        left = max((finish - now).total_seconds(), 1.0)
        return min(total, done + (total - done) * (t - now).total_seconds() / left)

    times = [now + (p90 - now) * (i / BAND_POINTS) for i in range(1, BAND_POINTS + 1)] if span else []
    step_band = [(t, along(t, p90), along(t, p50)) for t in times]
    usd_band = [(t, min(f["p50_usd"], spent + rate * (t - now).total_seconds() / 3600),
                 min(f["p90_usd"], spent + rate * (t - now).total_seconds() / 3600)) for t in times]  # fmt: skip
    return step_band, usd_band, [(p50, "5"), (p90, "9")]
