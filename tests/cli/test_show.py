"""`gpujob show PLAN.json` renders a saved plan as `gpujob plan` did, and hostile text stays text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"


def gpujob(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "gpujob", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60)  # fmt: skip


@pytest.mark.parametrize("case", ["runpod-destroy", "runpod-replace-gpu", "multi-job-duplicates"])
def test_show_renders_the_saved_plan_as_plan_did(case: str) -> None:
    saved = GOLDEN / case / "plan.json"
    for fmt, golden in (("text", "plan.txt"), ("markdown", "plan.md"), ("json", "plan.json")):
        res = gpujob("show", str(saved), "--format", fmt)
        assert res.returncode == 0, res.stderr
        assert res.stdout == (GOLDEN / case / golden).read_text(), fmt


def test_show_makes_hostile_text_plain(tmp_path: Path) -> None:
    data = json.loads((GOLDEN / "runpod-destroy" / "plan.json").read_text())
    evil = "pod\x1b[2J\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\x9b31m"
    data["jobs"][0]["actions"][1]["reasons"] = [evil]
    data["jobs"][0]["actions"][1]["resource_name"] = evil
    (tmp_path / "plan.json").write_text(json.dumps(data))
    res = gpujob("show", str(tmp_path / "plan.json"))
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout and "\x9b" not in res.stdout
    assert "pod\\x1b[2J\\x1b]8;;https://evil.example\\x07click" in res.stdout
    md = gpujob("show", str(tmp_path / "plan.json"), "--format", "markdown").stdout
    assert "\x1b" not in md and "\x07" not in md and "\x9b" not in md


def test_show_refuses_what_is_not_a_plan(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"jobs": 3}')
    res = gpujob("show", str(tmp_path / "x.json"))
    assert res.returncode == 1 and "not a gpujob plan file" in res.stderr and "gpujob plan -o" in res.stderr
    res = gpujob("show", str(tmp_path / "missing.json"))
    assert res.returncode == 1 and "cannot read it" in res.stderr
