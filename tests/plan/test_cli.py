"""`gpujob plan` end to end with an injected live state: exit codes, formats, --out, secrets, colour."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpujob.cli import cmd_plan
from gpujob.cli.main import cli
from gpujob.live import LiveState
from gpujob.plan.model import Plan
from tests.owners import pin_project

GOLDEN = Path(__file__).parent.parent / "golden"
CANARY = "CANARY-cli-9d1e-never-print"


@pytest.fixture
def case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """copy a golden case to tmp and cd there; secrets named in env.json are set to a canary."""

    def use(name: str) -> Path:
        src = GOLDEN / name
        dst = tmp_path / name
        shutil.copytree(src, dst)
        monkeypatch.chdir(dst)
        for secret in ("HF_TOKEN", "WANDB_API_KEY"):
            monkeypatch.delenv(secret, raising=False)
        for secret in json.loads((dst / "env.json").read_text()):
            monkeypatch.setenv(secret, CANARY)
        monkeypatch.delenv("GPUJOB_STATE_DIR", raising=False)
        monkeypatch.delenv("GPUJOB_PROJECT_ID", raising=False)
        pin_project(dst / ".gpujob")
        return dst

    return use


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["plan", *args], catch_exceptions=False)


@pytest.mark.parametrize(
    ("name", "plain", "detailed"),
    [("runpod-running-noop", 0, 0), ("runpod-stop-parking", 0, 2), ("runpod-netvol-conflicts", 1, 1)],
)
def test_exit_codes(case, name: str, plain: int, detailed: int) -> None:  # type: ignore[no-untyped-def]
    case(name)
    assert invoke("--live-state", "live.json").exit_code == plain
    assert invoke("--live-state", "live.json", "--detailed-exitcode").exit_code == detailed


def test_text_output_is_the_golden_file_and_never_leaks_a_secret(case) -> None:  # type: ignore[no-untyped-def]
    folder = case("runpod-create-spot-netvol")
    for fmt, golden in (("text", "plan.txt"), ("markdown", "plan.md")):
        result = invoke("job.yaml", "--live-state", "live.json", "--format", fmt)
        assert result.exit_code == 0, result.output
        assert CANARY not in result.output
        assert result.output == (folder / golden).read_text()
    assert "\x1b[" not in result.output  # not a TTY: plain text


def test_out_saves_a_plan_with_fingerprints(case) -> None:  # type: ignore[no-untyped-def]
    folder = case("runpod-stop-parking")
    result = invoke("--live-state", "live.json", "-o", "plan.json", "--format", "json")
    assert result.exit_code == 0
    saved = Plan.model_validate_json((folder / "plan.json").read_text())
    live = LiveState.model_validate_json((folder / "live.json").read_text())
    assert saved.live_fingerprint == live.fingerprint()
    assert len(saved.spec_digest) == 64
    assert json.loads(result.stdout)["jobs"][0]["actions"][0]["id"] == "ablate.pod.stop"


def test_missing_secret_is_an_error_by_name_only(case, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    case("runpod-create-spot-netvol")
    monkeypatch.delenv("WANDB_API_KEY")
    result = invoke("--live-state", "live.json", "--detailed-exitcode")
    assert result.exit_code == 1
    assert "secret not set in this environment: WANDB_API_KEY" in result.output


def test_spec_errors_exit_1_without_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yaml").write_text("version: 1\nname: Bad Name\n")
    (tmp_path / "live.json").write_text('{"read_at": "2026-11-29T12:00:00Z"}')
    result = CliRunner().invoke(cli, ["plan", "--live-state", "live.json"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output and "job.yaml:" in result.output


def test_without_live_state_it_reads_through_the_hook(case, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    folder = case("runpod-running-noop")
    state = LiveState.model_validate_json((folder / "live.json").read_text())
    seen: list[list[str]] = []

    def fake_read(specs, **kw):  # type: ignore[no-untyped-def]
        assert kw["refresh_runs"] is True and [ls.spec.name for ls in kw["runs_for"]] == ["llama"]
        seen.append([s.name for s in specs])
        return state

    monkeypatch.setattr(cmd_plan, "read_live", fake_read)
    result = invoke("--detailed-exitcode")
    assert result.exit_code == 0 and seen == [["llama"]]
    assert "No changes" in result.output
