"""`gpujob doctor` on the team setup, as users run it (tests/cli_process.py), against a real PostgreSQL server:
it names the store, exits 1 with the database down or a wrong GPUJOB_STATE_KEY, and writes nothing
(no table made in an empty database, no row changed in a used one)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from gpujob.state.pgtesting import PgServer
from tests.cli_process import run_gpujob

KEY = "doctor-team-key-0123456789abcdef"


def doctor(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_") and k != "CI"}
    clean.update(env, NO_COLOR="1")
    return run_gpujob(["doctor", "--no-api", *args], cwd=cwd or Path.cwd(), env=clean, timeout=120)


def line(out: str, check: str) -> str:
    found = [ln for ln in out.splitlines() if f" {check}  " in ln]
    assert found, out
    return found[0].split()[0]


def snapshot(pg: PgServer, db: str) -> list[tuple[object, ...]]:
    tables = pg.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", db)
    rows: list[tuple[object, ...]] = list(tables)
    for (t,) in tables:
        rows += pg.sql(f"SELECT * FROM {t} ORDER BY 1, 2", db)
    return rows


def sealed_store(url: str, monkeypatch_env: dict[str, str]) -> None:
    """A workspace as an apply leaves it: a record and the sealed SSH key."""
    code = (
        "from gpujob.state.pg import PgStore\n"
        "s = PgStore(__import__('sys').argv[1], 'team')\n"
        "s.write('pulls/bert.json', b'{}')\n"
        "s.put_secret('id_ed25519', b'PRIVATE KEY', b'ssh-ed25519 AAAA')\n"
    )
    subprocess.run([sys.executable, "-c", code, url], env=monkeypatch_env, check=True, timeout=60)


def test_names_the_store_and_makes_no_table_in_an_empty_database(pg_server: PgServer, pg_url: str) -> None:
    db = pg_url.rsplit("/", 1)[1]
    done = doctor({"GPUJOB_STATE_URL": pg_url, "GPUJOB_STATE_WORKSPACE": "team"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"PostgreSQL {pg_url} (workspace team), chosen by GPUJOB_STATE_URL" in done.stdout
    assert "no gpujob tables yet" in done.stdout
    assert line(done.stdout, "state key") == "WARN"  # not set: apply would need it
    assert snapshot(pg_server, db) == []  # looked, made nothing


def test_right_key_ok_wrong_key_exit_1_and_nothing_written(pg_server: PgServer, pg_url: str) -> None:
    db = pg_url.rsplit("/", 1)[1]
    env = {"GPUJOB_STATE_URL": pg_url, "GPUJOB_STATE_WORKSPACE": "team", "GPUJOB_STATE_KEY": KEY}
    sealed_store(pg_url, {**os.environ, **env})
    before = snapshot(pg_server, db)

    ok = doctor(env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "GPUJOB_STATE_KEY decrypts every sealed secret (id_ed25519)" in ok.stdout
    assert "workspace team: 1 record(s)" in ok.stdout

    wrong = doctor({**env, "GPUJOB_STATE_KEY": "not-the-team-key-at-all-0000"})
    assert wrong.returncode == 1, wrong.stdout
    assert line(wrong.stdout, "state key") == "FAIL"
    assert (
        "does not decrypt id_ed25519" in wrong.stdout
        and "fix: use the team's GPUJOB_STATE_KEY" in wrong.stdout
    )
    assert "not-the-team-key-at-all-0000" not in wrong.stdout + wrong.stderr

    typo = doctor({**env, "GPUJOB_STATE_WORKSPACE": "taem"})
    assert line(typo.stdout, "state reachable") == "WARN" and "while the database has: team" in typo.stdout

    report = json.loads(doctor(env, "--format", "json").stdout)
    assert report["exit_code"] == 0 and {c["check"] for c in report["setup"]} >= {"state store", "state key"}
    assert snapshot(pg_server, db) == before  # every look was read-only


def test_database_down_exits_1_with_a_fix() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    url = f"postgresql://gpujob:s3cret-pass@127.0.0.1:{port}/gpujob"
    done = doctor({"GPUJOB_STATE_URL": url})
    assert done.returncode == 1, done.stdout
    assert f"PostgreSQL postgresql://gpujob@127.0.0.1:{port}/gpujob (workspace default)" in done.stdout
    assert line(done.stdout, "state reachable") == "FAIL" and "fix: start the database" in done.stdout
    assert "s3cret-pass" not in done.stdout + done.stderr


def test_local_store_and_simulator_urls(tmp_path: Path) -> None:
    (tmp_path / ".gpujob").mkdir()
    (tmp_path / ".gpujob" / "pulls").mkdir()
    (tmp_path / ".gpujob" / "pulls" / "bert.json").write_text("{}")
    done = doctor({"GPUJOB_RUNPOD_API_URL": "http://127.0.0.1:9/v2"}, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"local directory {tmp_path / '.gpujob'}" in done.stdout and "1 file(s)" in done.stdout
    assert (
        line(done.stdout, "API URLs") == "WARN"
        and "point at a simulator: RunPod API http://127.0.0.1:9/v2" in done.stdout
    )
    assert "fix: for the real platforms unset GPUJOB_RUNPOD_API_URL" in done.stdout
    ci = doctor({"CI": "true"}, cwd=tmp_path)
    assert line(ci.stdout, "state sharing") == "WARN"
