"""`make bench` must run to the end without errors. This is a smoke run (few repetitions, small data);
it checks that every figure was measured against its floor, never how fast anything was.

One case per suite (`python -m bench --quick --only SUITE`), so the suites run side by side on the test
workers and none holds one worker for minutes; together they are the whole `make bench --quick`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import SUITES

ROOT = Path(__file__).resolve().parents[2]

# The figures each suite must report (a substring of the figure's name).
EXPECTED = {
    "startup": ["gpujob --help"],
    "live_read": ["plan read of 50 jobs"],
    "transfer": ["first sync", "pull+verify"],
    "resume": ["resume:"],
    "goodput": ["goodput under preemption", "watch: preemption"],
    "failover": ["failover: preemption"],
    "memory": ["peak RSS"],
    "log_memory": ["with a 200 MB log line: peak RSS"],
    "sweep": ["sweep: API calls per live read", "sweep: wrapper overhead per cell"],
}


def test_every_suite_of_make_bench_has_its_smoke_case() -> None:
    assert list(EXPECTED) == SUITES  # a new suite gets its case (and its figures) here


@pytest.mark.parametrize("suite", SUITES)
def test_every_benchmark_suite_runs_and_measures(suite: str, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", suite, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    payload = json.loads(out.read_text())
    assert payload["cores"] >= 1
    if suite == "transfer":
        assert payload["cipher"] and not payload["cipher"].startswith("unknown"), payload["cipher"]
    results = payload["results"]
    figures = {r["figure"] for r in results}
    for expected in EXPECTED[suite]:
        assert any(expected in f for f in figures), f"{expected!r} missing from {sorted(figures)}"
    for r in results:
        assert not r["error"], r
        assert r["figure_samples"] and r["floor_samples"], r
        assert r["met"] in (True, False)  # a ratio was computed
