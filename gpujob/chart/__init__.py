"""Small terminal charts: a value over time as columns, with events marked under the axis.

`plot` draws; `gpujob.chart.jobs` turns what `gpujob watch` recorded of a job (gpujob.watch.ledger)
into series. On a terminal the columns are Unicode blocks with eighth-steps and colour; piped, or with
NO_COLOR / --no-color, the same chart is plain ASCII (whole rows of `#`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

EIGHTHS = " ▁▂▃▄▅▆▇█"
CYAN, YELLOW, RED, DIM, RESET = "\x1b[36m", "\x1b[33m", "\x1b[31m", "\x1b[2m", "\x1b[0m"


@dataclass(frozen=True)
class Style:
    fancy: bool  # Unicode blocks and colour (a terminal), else plain ASCII
    width: int = 48  # columns of the plot area
    height: int = 5  # rows of the plot area

    @property
    def mark(self) -> str:
        return "▲" if self.fancy else "x"


def terminal_style(fancy: bool) -> Style:
    """The style for stdout: as wide as the terminal allows (up to 72 columns) when drawing for one."""
    if not fancy:
        return Style(fancy=False)
    import shutil

    return Style(fancy=True, width=max(20, min(72, shutil.get_terminal_size().columns - 16)))


def _columns(
    points: Sequence[tuple[datetime, float]], start: datetime, end: datetime, width: int
) -> list[float | None]:
    """The value each column shows: the last point at or before the column's end (None before the
    first point)."""
    span = max((end - start).total_seconds(), 1e-9)
    cols: list[float | None] = [None] * width
    ordered = sorted(points)
    i, last = 0, None
    for c in range(width):
        edge = (c + 1) / width * span
        while i < len(ordered) and (ordered[i][0] - start).total_seconds() <= edge + 1e-9:
            last = ordered[i][1]
            i += 1
        cols[c] = last
    return cols


def _column(start: datetime, end: datetime, width: int, at: datetime) -> int:
    span = max((end - start).total_seconds(), 1e-9)
    return min(width - 1, max(0, int((at - start).total_seconds() / span * width)))


def plot(
    title: str,
    points: Sequence[tuple[datetime, float]],
    style: Style,
    *,
    marks: Sequence[datetime] = (),
    mark_label: str = "",
    value: Callable[[float], str] = lambda v: f"{v:,.0f}",
    color: str = CYAN,
    band: Sequence[tuple[datetime, float, float]] = (),
    band_marks: Sequence[tuple[datetime, str]] = (),
) -> list[str]:
    """Lines of a chart of `points` (time, value >= 0) from the first to the last time; `marks` are
    times to flag under the axis (e.g. preemptions). `band`: (time, low, high) of a forecast after the
    last point, drawn after it (below low ▒/=, between low and high ░/.), the axis running to its end,
    `band_marks` (time, letter) flagged under it. Empty when there is nothing to draw."""
    if len(points) < 2:
        return []
    times = [t for t, _ in points] + [t for t, _, _ in band]
    start, end = min(times), max(times)
    if end <= start:
        return []
    cols = _columns(points, start, end, style.width)
    now = max(t for t, _ in points)
    lows = _columns([(t, lo) for t, lo, _ in band], start, end, style.width) if band else []
    highs = _columns([(t, hi) for t, _, hi in band], start, end, style.width) if band else []
    future = [bool(band) and _column(start, end, style.width, now) < c for c in range(style.width)]
    top = max([v for _, v in points] + [hi for _, _, hi in band])
    top = top if top > 0 else 1.0
    labels = [value(top), value(0)]
    pad = max(len(x) for x in labels)
    rows: list[str] = []
    for r in range(style.height, 0, -1):  # r = 1 is the bottom row
        cells = []
        for c, v in enumerate(cols):
            if future[c]:
                cells.append(_band_cell(lows[c], highs[c], top, r, style))
                continue
            level = 0.0 if v is None else max(0.0, v) / top * style.height  # in rows
            fill = level - (r - 1)
            if style.fancy:
                cells.append(EIGHTHS[max(0, min(8, round(fill * 8)))])
            else:
                cells.append("#" if fill >= 0.5 else " ")
        line = "".join(cells).rstrip()
        if style.fancy and line:
            line = f"{color}{line}{RESET}"
        label = labels[0] if r == style.height else labels[1] if r == 1 else ""
        rows.append(f"  {label:>{pad}} |{line}")
    axis = ["-"] * style.width
    below = [" "] * style.width
    for at in marks:
        if start <= at <= end:
            below[_column(start, end, style.width, at)] = style.mark
    for at, letter in band_marks:
        if start <= at <= end:
            below[_column(start, end, style.width, at)] = letter
    out = [f"  {title}", *rows, f"  {'':>{pad}} +{''.join(axis)}"]
    marked = "".join(below).rstrip()
    if marked:
        flag = f"{RED}{marked}{RESET}" if style.fancy else marked
        out.append(f"  {'':>{pad}}  {flag}")
    left, right = f"{start:%H:%M:%S}", f"{end:%H:%M:%S} UTC"
    gap = max(1, style.width - len(left) - len(right))
    lost = any(start <= m <= end for m in marks)
    legend = f"   {style.mark} {mark_label}" if lost and mark_label else ""
    legend += "".join(f"   {letter} {what}" for letter, what in _BAND_LEGEND if band_marks)
    out.append(f"  {'':>{pad}}  {left}{' ' * gap}{right}{legend}")
    return out


_BAND_LEGEND = (("5", "P50 finish"), ("9", "P90 finish"))


def _band_cell(low: float | None, high: float | None, top: float, r: int, style: Style) -> str:
    """One cell of row r (1 = bottom) in the forecast band: under its low edge, or between its edges."""
    if low is None or high is None:
        return " "
    lo, hi = max(0.0, low) / top * style.height, max(0.0, high) / top * style.height
    if lo - (r - 1) >= 0.5:
        return "▒" if style.fancy else "="
    if hi - (r - 1) >= 0.5:
        return "░" if style.fancy else "."
    return " "
