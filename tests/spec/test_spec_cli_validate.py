from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpujob.cli.main import cli


def invoke(*args: str):
    result = CliRunner().invoke(cli, ["validate", *args])
    assert "Traceback" not in result.output
    return result


def test_clean_files_exit_0(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo)
    result = invoke(
        "examples/runpod-spot-netvol/job.yaml", "examples/runpod-ondemand", "examples/paperspace-core"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "ok: 3 file(s) valid\n"


def test_problems_across_files_exit_1(write, runpod_job, paperspace_job) -> None:
    a = write(runpod_job.replace("interval: 15m", "interval: 15"), "a.job.yaml")
    b = write(
        paperspace_job.replace("  template: ml-in-a-box\n", "  template: ml-in-a-box\n  spot: true\n"),
        "b.job.yaml",
    )
    c = write(runpod_job.replace("bert", "fine"), "c.job.yaml")
    result = invoke(str(a), str(b), str(c))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{a}:12:13: checkpoint.interval: 15 is not a duration")
    assert lines[1].startswith(f"{b}:8:3: machine.spot: spot is not available on paperspace")
    assert lines[-1] == "2 problem(s) in 2 file(s)"


def test_json_format(write, runpod_job) -> None:
    bad = write(runpod_job.replace("gpu: [A100-80GB, H100-80GB]", "gpu: [A100-80GB, H100-80G]"))
    result = invoke("--format", "json", str(bad))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["files"] == [str(bad)]
    (problem,) = report["problems"]
    assert problem == {
        "file": str(bad), "line": 5, "col": 20, "key_path": "machine.gpu[1]",
        "message": "unknown GPU 'H100-80G' on runpod", "hint": "did you mean 'H100-80GB'?",
    }  # fmt: skip
    good = write(runpod_job, "good.yaml")
    ok = invoke("--format", "json", str(good))
    assert ok.exit_code == 0 and json.loads(ok.stdout) == {"ok": True, "files": [str(good)], "problems": []}


def test_default_discovers_job_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runpod_job) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "a.yaml").write_text(runpod_job)
    (tmp_path / "b.job.yaml").write_text(runpod_job.replace("name: bert", "name: other"))
    result = invoke()
    assert result.exit_code == 0 and result.stdout == "ok: 2 file(s) valid\n"
    (tmp_path / "job.yaml").write_text("version: 1\n")
    result = invoke()
    assert result.exit_code == 1 and result.stdout.startswith("job.yaml:1:1: ")


def test_cross_file_name_clash(write, runpod_job) -> None:
    a, b = write(runpod_job, "a.job.yaml"), write(runpod_job, "b.job.yaml")
    result = invoke(str(a), str(b))
    assert result.exit_code == 1 and "job name 'bert' is also used by" in result.stdout


def test_nothing_to_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke()
    assert result.exit_code == 1
    assert "no job files found" in result.stderr and result.stdout == ""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke(str(empty)).exit_code == 1


def test_missing_path_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    result = invoke(str(tmp_path / "nope.yaml"))
    assert (
        result.exit_code == 1
        and result.stdout.splitlines()[0] == f"{tmp_path / 'nope.yaml'}:1:1: no such file"
    )


def test_subprocess_validate(repo: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gpujob", "validate", "examples/broken/python-object-tag.yaml", "examples/broken/not-utf8.yaml"],
        cwd=repo, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "2 problem(s) in 2 file(s)"
    ok = subprocess.run(
        [sys.executable, "-m", "gpujob", "validate", "examples/runpod-ondemand/job.yaml"],
        cwd=repo, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (ok.returncode, ok.stdout) == (0, "ok: 1 file(s) valid\n")
