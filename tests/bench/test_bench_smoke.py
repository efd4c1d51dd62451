"""`make bench` must run to the end without errors. This is a smoke run (few repetitions, small data);
it checks that every figure was measured against its floor, never how fast anything was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_benchmark_suite_runs_and_measures(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    payload = json.loads(out.read_text())
    assert payload["cores"] >= 1
    assert payload["cipher"] and not payload["cipher"].startswith("unknown"), payload["cipher"]
    results = payload["results"]
    figures = {r["figure"] for r in results}
    for expected in (
        "gpujob --help",
        "plan read of 50 jobs",
        "first sync",
        "pull+verify",
        "resume:",
        "goodput under preemption",
        "watch: preemption",
        "failover: preemption",
        "peak RSS",
        "with a 200 MB log line: peak RSS",
        "sweep: API calls per live read",
        "sweep: wrapper overhead per cell",
    ):
        assert any(expected in f for f in figures), f"{expected!r} missing from {sorted(figures)}"
    for r in results:
        assert not r["error"], r
        assert r["figure_samples"] and r["floor_samples"], r
        assert r["met"] in (True, False)  # a ratio was computed
