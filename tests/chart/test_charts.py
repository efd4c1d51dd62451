"""The terminal charts of `status` and `cost`: steps over time with lost runs marked, money over time.
Snapshot tests (tests/chart/snapshots/; GPUJOB_UPDATE_GOLDEN=1 rewrites them after a reviewed change),
in both styles: plain ASCII (piped, NO_COLOR, --no-color) and Unicode blocks with colour (a terminal)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpujob.chart import Style, plot
from gpujob.chart.jobs import charts, series
from gpujob.watch.ledger import MAX_TRAIL, Ledger, RunSegment

SNAPSHOTS = Path(__file__).with_name("snapshots")
T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def spot_ledger() -> Ledger:
    """A spot job over 10 minutes: 2 steps/s, preempted at 200 s (resumed from step 300 after 40 s)
    and at 420 s (resumed from 680), money at $1.20/h while a machine ran."""
    ledger = Ledger(job="bert", first_seen=T0)
    runs = [("a", 0, 200, 1, 401, 137), ("b", 240, 420, 301, 661, 137), ("c", 450, 600, 681, 981, 0)]
    for name, start, end, first, last, code in runs:
        seg = RunSegment(started_at=f"2026-12-02T12:0{name}", first_step=first, first_at=at(start))
        seg.last_step, seg.last_at, seg.exit_code = last, at(end), code
        ledger.segments.append(seg)
    for t in range(0, 601, 10):
        run = next((r for r in runs if r[1] <= t <= r[2]), None)
        if run is not None:
            step = run[3] + (t - run[1]) * 2
            ledger.observe_run(
                at(t),
                SimpleNamespace(
                    started_at=f"2026-12-02T12:0{run[0]}",
                    alive=True,
                    history=[],
                    exit_code=None,
                    progress_first=None,
                    progress=SimpleNamespace(step=step, age_s=0.0),
                ),
            )
        machine = SimpleNamespace(status="running", gpu_count=1, started_at=T0, created_at=T0)
        ledger.observe_money(at(t), machine, 1.20 if run is not None else 0.0)  # type: ignore[arg-type]
    return ledger


def check(name: str, lines: list[str]) -> None:
    path = SNAPSHOTS / name
    text = "\n".join(lines) + "\n"
    if os.environ.get("GPUJOB_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed:\n{text}"


@pytest.mark.parametrize("fancy", [False, True], ids=["plain", "terminal"])
def test_steps_and_money_over_time_snapshot(fancy: bool) -> None:
    data = series(spot_ledger())
    check(
        f"spot-{'terminal' if fancy else 'plain'}.txt", charts(data, Style(fancy=fancy, width=40, height=5))
    )


def test_the_plain_chart_is_ascii_without_escapes_and_marks_each_lost_run() -> None:
    lines = charts(series(spot_ledger()), Style(fancy=False, width=40, height=5))
    text = "\n".join(lines)
    assert text.isascii() and "\x1b" not in text
    steps = lines[: lines.index("  money spent over time")]
    marks = [
        line for line in steps if line.strip() and set(line.strip()) == {"x"} | ({" "} & set(line.strip()))
    ]
    assert len(marks) == 1 and marks[0].count("x") == 2  # two runs lost, two marks
    # each mark sits in the column of the lost run's last step (200 s and 420 s of 600 s)
    col = [i for i, c in enumerate(marks[0]) if c == "x"]
    axis = next(line for line in steps if "+---" in line)
    zero = axis.index("+") + 1
    assert [c - zero for c in col] == [int(200 / 600 * 40), int(420 / 600 * 40)]


def test_series_of_the_ledger_keeps_the_runs_exact_points_and_the_losses() -> None:
    data = series(spot_ledger())
    assert data["lost"] == [at(200).isoformat(), at(420).isoformat()]
    steps = dict(data["steps"])
    assert steps[at(200).isoformat()] == 401 and steps[at(240).isoformat()] == 301  # the drop: redone work
    usd = [v for _, v in data["usd"]]
    assert usd == sorted(usd) and usd[-1] == pytest.approx(1.20 * 540 / 3600, rel=0.05)


def test_a_trail_is_thinned_not_cut_short() -> None:
    ledger = Ledger(job="j", first_seen=T0)
    machine = SimpleNamespace(status="running", gpu_count=1, started_at=T0, created_at=T0)
    for t in range(3 * MAX_TRAIL):
        ledger.observe_money(at(t), machine, 3.6)  # type: ignore[arg-type]
    assert len(ledger.usd_trail) <= MAX_TRAIL
    assert ledger.usd_trail[0].at == at(0) and ledger.usd_trail[-1].at == at(3 * MAX_TRAIL - 1)


def test_nothing_to_draw_draws_nothing() -> None:
    assert plot("x", [], Style(fancy=False)) == []
    assert plot("x", [(T0, 1.0)], Style(fancy=False)) == []
    assert charts({"steps": [], "usd": [], "lost": []}, Style(fancy=True)) == []
