"""`gpujob status --chart`: steps and spend over time run on to the P90 finish, the band between the
P50 and P90 projections drawn after the newest point, the finishes marked 5 and 9."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpujob.chart import Style
from gpujob.chart.jobs import charts

T0 = datetime(2026, 12, 7, 10, tzinfo=UTC)


def at(h: float) -> str:
    return (T0 + timedelta(hours=h)).isoformat()


DATA = {"steps": [[at(0), 0], [at(1), 1000], [at(2), 2000]], "usd": [[at(0), 0], [at(2), 2.0]], "lost": []}
FORECAST = {"total_steps": 10000, "spent_usd": 2.0, "usd_per_hour": 1.0, "p50_usd": 10.0, "p90_usd": 12.0,
            "p50_finish": at(10), "p90_finish": at(12)}  # fmt: skip


def test_the_charts_run_to_the_p90_finish_with_the_band_and_its_marks() -> None:
    lines = charts(DATA, Style(fancy=False, width=48, height=5), FORECAST)
    text = "\n".join(lines)
    assert (
        "steps over time against the forecast" in text
        and "money spent over time against the forecast" in text
    )
    assert "10,000" in text and "$12.00" in text  # the axes reach the forecast's top
    assert "." in text and "=" in text  # the band: under its low edge, between its edges
    marks = [line for line in lines if "5" in line and "9" in line and "|" not in line and "+" not in line]
    assert any(line.strip().startswith("5") or " 5" in line for line in marks)
    assert "5 P50 finish" in text and "9 P90 finish" in text and "22:00:00 UTC" in text


def test_without_a_forecast_the_charts_are_as_before() -> None:
    plain = charts(DATA, Style(fancy=False))
    assert "against the forecast" not in "\n".join(plain) and "P50" not in "\n".join(plain)
    assert plain == charts(DATA, Style(fancy=False), None)
