"""The month's spend of one job (gpujob.cost.monthly.month_of): watch's ledger or the cost engine's figure,
whichever is more, with its source; a job never watched counts the cost engine's alone."""

from __future__ import annotations

from datetime import UTC, datetime

from gpujob.cost.history import History
from gpujob.cost.monthly import Billed, month_of

START = datetime(2026, 11, 1, tzinfo=UTC)
H = History.model_validate({"usd": 30.0, "usd_trail": [{"at": "2026-10-30T00:00:00Z", "value": 10.0}]})


def test_a_job_never_watched_counts_the_cost_engines_figure() -> None:
    usd, source = month_of(None, Billed(7.5, "gpujob cost (runpod billing)"), START)
    assert usd == 7.5 and source == "gpujob cost (runpod billing), never watched: since its first resource"


def test_the_larger_count_wins_less_what_watch_counted_before_the_month() -> None:
    assert month_of(H, None, START) == (20.0, "watch's ledger")
    assert month_of(H, Billed(25.0, "gpujob cost (runpod billing)"), START) == (20.0, "watch's ledger")
    usd, source = month_of(H, Billed(45.0, "gpujob cost (runpod billing)"), START)  # spent unwatched since
    assert usd == 35.0 and source.endswith("less watch's count before the month")
    assert month_of(None, None, START) == (0.0, "")
