"""`gpujob state migrate`: local -> PostgreSQL -> local loses no record, and merges nothing by accident."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpujob.apply.journal import Journal
from gpujob.errors import GpujobError, LockError
from gpujob.plan.records import PulledFile, PullRecord, save_pull_record
from gpujob.ssh.keys import ensure_project_key
from gpujob.state.local import LocalStore
from gpujob.state.migrate import migrate
from gpujob.state.pg import PgStore
from tests.state.conftest import STATE_KEY

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def a_used_project(root: Path) -> None:
    """A .gpujob/ as weeks of use leave it: every kind of record gpujob keeps."""
    ensure_project_key(root)
    for job in ("bert", "resnet"):
        j = Journal(root, job)
        for i in range(30):
            j.append("intent" if i % 2 else "done", NOW, action_id=f"{job}.pod.create", detail=f"step {i}")
        rec = PullRecord(
            job=job,
            platform="runpod",
            remote_dir="/workspace/ckpt",
            local_dir=str(root.parent / "ckpt"),
            remote_files={"step_1.pt": "a" * 64},
            files=[PulledFile(name="step_1.pt", size=3, sha256="a" * 64, verified=True, at=NOW)],
            at=NOW,
        )
        save_pull_record(root, rec)
    (root / "known_hosts.json").write_text(json.dumps({"pod-1": {"key": "ssh-ed25519 AAAA", "port": 22}}))
    (root / "launches").mkdir()
    (root / "launches" / "bert.json").write_text('{"job": "bert"}')
    (root / "project.json").write_text('{"id": "k3f9a2c1"}\n')
    (root / "events.jsonl").write_text('{"event": "preempted"}\n{"event": "recovered"}\n')
    (root / "watch").mkdir()
    (root / "watch" / "bert.json").write_text('{"recoveries": 2}')


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".lock")
    }


def gj(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpujob", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_local_to_postgresql_and_back_round_trips_every_record(tmp_path: Path, pg_url: str) -> None:
    project = tmp_path / "repo"
    a_used_project(project / ".gpujob")
    before = files(project / ".gpujob")
    assert len(before) == 11  # key + .pub, 2 journals, 2 pulls, pins, launch, project, events, ledger
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_STATE")}
    env["GPUJOB_STATE_KEY"] = STATE_KEY

    there = gj("state", "migrate", "--to", pg_url, "--workspace", "vision", cwd=project, env=env)
    assert there.returncode == 0, there.stderr
    assert "copied 6 document(s), 3 log(s) (62 line(s)), 1 secret(s)" in there.stdout
    assert "read back and compared" in there.stdout

    back_env = {**env, "GPUJOB_STATE_URL": pg_url, "GPUJOB_STATE_WORKSPACE": "vision"}
    home = tmp_path / "other-checkout"
    home.mkdir()
    back = gj("state", "migrate", "--to", str(home / ".gpujob"), cwd=home, env=back_env)
    assert back.returncode == 0, back.stderr
    after = files(home / ".gpujob")
    assert after == before  # byte for byte, file for file
    assert (home / ".gpujob" / "id_ed25519").stat().st_mode & 0o077 == 0

    # Running it again is harmless: everything is already there and identical.
    again = gj("state", "migrate", "--to", pg_url, "--workspace", "vision", cwd=project, env=env)
    assert again.returncode == 0, again.stderr
    assert "copied 0 document(s), 0 log(s) (0 line(s)), 0 secret(s); 10 already there" in again.stdout


def test_a_destination_with_other_records_is_refused_and_left_alone(
    tmp_path: Path, pg_url: str, monkeypatch
) -> None:
    monkeypatch.setenv("GPUJOB_STATE_KEY", STATE_KEY)
    a_used_project(tmp_path / "a")
    dst = PgStore(pg_url, "w")
    dst.write("pulls/bert.json", b'{"another": "project"}')
    with pytest.raises(
        GpujobError, match=r"already holds different records: pulls/bert.json; nothing was copied"
    ):
        migrate(LocalStore(tmp_path / "a"), dst)
    assert dst.names() == ["pulls/bert.json"]


def test_refused_while_an_apply_holds_a_lock(tmp_path: Path, pg_url: str) -> None:
    src = LocalStore(tmp_path / "a")
    a_used_project(tmp_path / "a")
    with src.lock("bert"), pytest.raises(LockError, match="bert are locked"):
        migrate(src, PgStore(pg_url, "w"))
