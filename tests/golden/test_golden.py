"""One folder per scenario: job files + live.json (+ env.json, pulls.json) -> plan.txt, plan.md, plan.json.

Each case is planned with the secrets named in env.json set to a canary value, and every rendering is
checked never to contain it. Colour is off. gpujob's version is normalised so a release does not churn
the files.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gpujob import __version__
from gpujob.live import LiveState
from gpujob.plan.model import Plan
from gpujob.plan.planner import build_plan
from gpujob.plan.records import PullRecord
from gpujob.render import render_plan
from gpujob.spec.load import discover_job_files, load_specs
from tests.owners import PROJECT

HERE = Path(__file__).parent
CASES = sorted(p.name for p in HERE.iterdir() if p.is_dir() and (p / "live.json").exists())
CANARY = "CANARY-7f3a9c-do-not-print"
OUTPUTS = {"plan.txt": "text", "plan.md": "markdown", "plan.json": "json"}


def make_plan(case: Path) -> Plan:
    live = LiveState.model_validate_json((case / "live.json").read_text())
    names = json.loads((case / "env.json").read_text()) if (case / "env.json").exists() else []
    pulls = {}
    if (case / "pulls.json").exists():
        pulls = {
            k: PullRecord.model_validate(v) for k, v in json.loads((case / "pulls.json").read_text()).items()
        }
    files = [p.relative_to(case) for p in discover_job_files(case)]
    loaded = [dataclasses.replace(ls, project=PROJECT) for ls in load_specs(files)]
    plan = build_plan(loaded, live, now=live.read_at, env={n: CANARY for n in names}, pull_records=pulls)
    return plan.model_copy(update={"gpujob_version": "0.0.0+golden"})


def test_enough_cases() -> None:
    assert len(CASES) >= 12, CASES


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str, update_golden: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = HERE / case
    monkeypatch.chdir(folder)  # job file paths in the plan stay relative: job.yaml:12:3
    plan = make_plan(folder)
    for name, fmt in OUTPUTS.items():
        got = render_plan(plan, fmt, color=False)
        assert CANARY not in got, f"{case}/{name} leaks a secret value"
        assert "\x1b[" not in got
        path = folder / name
        if update_golden:
            path.write_text(got)
            continue
        assert path.exists(), f"{case}/{name} missing: run pytest tests/golden --update-golden and review it"
        assert got == path.read_text(), (
            f"{case}/{name} differs; review, then pytest tests/golden --update-golden"
        )


@pytest.mark.parametrize("case", CASES)
def test_json_round_trips(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = HERE / case
    monkeypatch.chdir(folder)
    plan = make_plan(folder)
    again = Plan.model_validate_json(render_plan(plan, "json"))
    assert again == plan
    assert json.loads(render_plan(plan, "json"))["format_version"] == 1
    assert __version__  # the real version is what the CLI writes; goldens use a fixed one
