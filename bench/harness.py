"""Alternating, repeated measurement of a figure against its floor; medians and min–max."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field


@dataclass
class Result:
    figure: str
    floor_name: str
    target: float  # the ratio must be <= target (or >= when higher_is_better)
    higher_is_better: bool = False
    unit: str = "s"
    figure_samples: list[float] = field(default_factory=list)
    floor_samples: list[float] = field(default_factory=list)
    note: str = ""
    error: str = ""

    @property
    def figure_median(self) -> float:
        return statistics.median(self.figure_samples) if self.figure_samples else float("nan")

    @property
    def floor_median(self) -> float:
        return statistics.median(self.floor_samples) if self.floor_samples else float("nan")

    @property
    def ratio(self) -> float:
        if not self.figure_samples or not self.floor_samples or self.floor_median == 0:
            return float("nan")
        return self.figure_median / self.floor_median

    @property
    def met(self) -> bool | None:
        if self.error or self.ratio != self.ratio:
            return None
        return self.ratio >= self.target if self.higher_is_better else self.ratio <= self.target

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.update(
            figure_median=self.figure_median,
            floor_median=self.floor_median,
            ratio=self.ratio,
            met=self.met,
        )
        return d


def alternate(
    result: Result, figure: Callable[[], float], floor: Callable[[], float], *, repeat: int, warmup: int = 1
) -> Result:
    """Run figure and floor alternately so machine noise hits both alike. Each callable returns its measurement."""
    for _ in range(warmup):
        figure()
        floor()
    for _ in range(repeat):
        result.figure_samples.append(figure())
        result.floor_samples.append(floor())
    return result


def timed_command(argv: list[str], **kwargs: object) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
        return time.perf_counter() - start

    return run


PY = sys.executable
