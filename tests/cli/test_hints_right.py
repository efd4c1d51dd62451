"""Hints that fit the situation (issue 29): a command that only reads never suggests one that creates."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def gj(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    return subprocess.run(
        [sys.executable, "-m", "gpujob", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60
    )


@pytest.mark.parametrize("command", ["status", "logs", "pull", "ssh"])
def test_a_read_with_no_job_file_names_itself_and_init_never_apply(tmp_path: Path, command: str) -> None:
    res = gj(tmp_path, command)
    assert res.returncode == 1 and "no job files found here" in res.stderr
    assert f"gpujob {command} path/to/job.yaml" in res.stderr and "`gpujob init`" in res.stderr
    assert "apply" not in res.stderr


def test_a_read_with_a_job_file_one_level_down_names_that_one(tmp_path: Path) -> None:
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "job.yaml").write_text("version: 1\n")
    res = gj(tmp_path, "status")
    assert "`gpujob status bert/job.yaml`" in res.stderr and "apply" not in res.stderr


def test_another_projects_running_copy_points_a_local_checkout_at_the_team_state_store(
    tmp_path: Path,
) -> None:
    """The teammate case: this checkout keeps its state locally, so it is a project of its own; the
    shared store (GPUJOB_STATE_URL) is what makes it the team's. With a database store already in use
    that is not the answer, and the hint keeps to the project id."""
    from types import SimpleNamespace

    from gpujob.plan.ownership_findings import _owner_fix

    job = tmp_path / "job.yaml"
    local = _owner_fix(SimpleNamespace(loaded=SimpleNamespace(path=job), env={}), "p-theirs")  # type: ignore[arg-type]
    assert local.startswith("if your team keeps gpujob's state in a database, set GPUJOB_STATE_URL=")
    assert "GPUJOB_PROJECT_ID=p-theirs" in local
    shared = SimpleNamespace(
        loaded=SimpleNamespace(path=job), env={"GPUJOB_STATE_URL": "postgresql://db.example.com/gpujob"}
    )
    text = _owner_fix(shared, "p-theirs")  # type: ignore[arg-type]
    assert "GPUJOB_STATE_URL" not in text and "GPUJOB_PROJECT_ID=p-theirs" in text


def test_a_key_from_the_database_store_names_that_store(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The decrypted key is a temp file: the note beside it says which store it came from, so a
    machine that refuses it is reported with the right store (a local key's store is its directory)."""
    from gpujob.ssh.dial import key_origin
    from gpujob.ssh.keys import ensure_project_key
    from gpujob.state.pg import PgStore
    from tests.state.conftest import STATE_KEY

    monkeypatch.setenv("GPUJOB_STATE_KEY", STATE_KEY)
    store = PgStore(pg_url, "team")
    path, _ = ensure_project_key(store)
    assert key_origin(path) == store.location and "workspace team" in key_origin(path)
    assert key_origin(Path("/src/.gpujob/id_ed25519")) == "/src/.gpujob"
