"""What only the PostgreSQL store has: a versioned schema made on first use, sealed secrets, sessions
that carry the lock, and force-unlock that ends a holder's session."""

from __future__ import annotations

import base64
import os
import shutil

import pytest

from gpujob.errors import LockError, StateError, StateKeyError
from gpujob.ssh.keys import ensure_project_key
from gpujob.state.pg import PgStore
from gpujob.state.pgschema import VERSION
from gpujob.state.pgtesting import PgServer
from tests.state.conftest import STATE_KEY, Child


def tables(server: PgServer, url: str) -> str:
    """Every row of every gpujob table as text (what someone with SELECT on the tables sees)."""
    db = url.rsplit("/", 1)[1]
    out = []
    for (name,) in server.sql("SELECT tablename FROM pg_tables WHERE tablename LIKE 'gpujob_%'", db):
        out += [str(row) for row in server.sql(f"SELECT t::text FROM {name} t", db)]
        out += [str(row) for row in server.sql(f"SELECT encode(t::text::bytea, 'hex') FROM {name} t", db)]
    return "\n".join(out)


def test_schema_is_made_on_first_use_and_versioned(pg_server: PgServer, pg_url: str) -> None:
    db = pg_url.rsplit("/", 1)[1]
    assert pg_server.sql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'gpujob_%'", db) == [(0,)]
    store = PgStore(pg_url, "w")
    assert store.read("pulls/x.json") is None  # first use
    names = {
        r[0] for r in pg_server.sql("SELECT tablename FROM pg_tables WHERE tablename LIKE 'gpujob_%'", db)
    }
    assert names == {"gpujob_schema", "gpujob_documents", "gpujob_logs", "gpujob_secrets", "gpujob_locks"}
    assert pg_server.sql("SELECT version FROM gpujob_schema", db) == [(VERSION,)]
    PgStore(pg_url, "w").write("a.json", b"{}")  # a second user finds it current and changes nothing
    assert pg_server.sql("SELECT count(*) FROM gpujob_schema", db) == [(1,)]
    pg_server.sql(f"UPDATE gpujob_schema SET version = {VERSION + 1}", db)
    with pytest.raises(StateError, match=f"version {VERSION + 1}, newer than this gpujob understands"):
        PgStore(pg_url, "w").read("a.json")


def test_workspaces_do_not_see_each_other(pg_url: str) -> None:
    a, b = PgStore(pg_url, "a"), PgStore(pg_url, "b")
    a.write("pulls/bert.json", b"{}")
    a.append("journal/bert.jsonl", b"{}")
    assert b.read("pulls/bert.json") is None and b.names() == [] and b.lines("journal/bert.jsonl") == []
    with a.lock("bert"), b.lock("bert"):  # same job name, other workspace: another lock
        pass


def test_unreachable_database_is_one_clear_error() -> None:
    store = PgStore("postgresql://nobody:hunter2pw@127.0.0.1:1/x", "w")
    with pytest.raises(StateError) as err:
        store.read("a.json")
    text = err.value.render()
    assert "cannot use the state database postgresql://nobody@127.0.0.1:1/x" in text
    assert "hunter2pw" not in text
    from gpujob.redact import redact

    assert redact("echo hunter2pw") == "echo ***"  # masked wherever gpujob shows text


def test_secrets_are_sealed_and_nothing_secret_is_in_the_tables(
    pg_server: PgServer, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUJOB_STATE_KEY", STATE_KEY)
    store = PgStore(pg_url, "w")
    key_path, public_line = ensure_project_key(store)
    from gpujob.state.scratch import held

    assert not key_path.exists()  # in memory only: asyncssh reads it from there
    private = held(key_path)
    assert private is not None
    assert private.startswith(b"-----BEGIN OPENSSH PRIVATE KEY-----")
    # The key material in every form it could take: the file, its base64 body, the raw key bytes.
    body = b"".join(private.splitlines()[1:-1])
    raw = base64.b64decode(body)
    import asyncssh

    seed = asyncssh.import_private_key(private).pyca_key.private_bytes_raw()  # the 32-byte ed25519 seed
    dump = tables(pg_server, pg_url)
    for needle in (body.decode()[:40], body.decode()[-40:], raw.hex(), seed.hex(), STATE_KEY):
        assert needle not in dump, "secret material readable in the database"
    assert public_line.split()[1] in dump  # the public half is meant to be readable
    # People who may plan (no key) read everything else, and are told what they lack for the secret.
    monkeypatch.delenv("GPUJOB_STATE_KEY")
    reader = PgStore(pg_url, "w")
    assert reader.public("id_ed25519") is not None
    with pytest.raises(StateKeyError, match="GPUJOB_STATE_KEY is not set"):
        reader.secret_file("id_ed25519")
    monkeypatch.setenv("GPUJOB_STATE_KEY", "another-key-of-enough-length")
    with pytest.raises(StateKeyError, match="is not the key it was stored with"):
        PgStore(pg_url, "w").secret("id_ed25519")


def test_a_sealed_row_moved_to_another_name_does_not_open(
    pg_server: PgServer, pg_url: str, monkeypatch
) -> None:
    monkeypatch.setenv("GPUJOB_STATE_KEY", STATE_KEY)
    store = PgStore(pg_url, "w")
    store.put_secret("id_ed25519", b"secret-bytes", b"pub")
    db = pg_url.rsplit("/", 1)[1]
    pg_server.sql(
        "INSERT INTO gpujob_secrets SELECT 'w', 'other', public, sealed, now(), 'x' FROM gpujob_secrets", db
    )
    with pytest.raises(StateKeyError):
        store.secret("other")


def _env(url: str) -> dict[str, str]:
    return {
        "GPUJOB_STATE_URL": url,
        "GPUJOB_STATE_WORKSPACE": "w",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }


HOLDER = """
import sys
from gpujob.state import open_store
store = open_store(None)
with store.lock("bert", command="stuck apply"):
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        store.append("journal/bert.jsonl", b"{}")
        print("wrote", flush=True)
    except Exception as exc:
        print("refused:", type(exc).__name__, str(exc).splitlines()[0], flush=True)
"""


def _other_host(unshare: str) -> tuple[str, ...]:
    """A UTS namespace of its own: as root directly, as an ordinary user inside a user namespace."""
    return (unshare, "--uts") if os.geteuid() == 0 else (unshare, "--user", "--map-root-user", "--uts")


def test_force_unlock_ends_the_session_of_a_holder_on_another_host(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**_env(pg_url), "PATH": os.environ["PATH"]}
    # The holder runs under another host name (its own UTS namespace), as a stuck CI runner would.
    unshare = shutil.which("unshare")
    assert unshare, "util-linux unshare is needed (see .ci/run)"
    code = f"import socket; socket.sethostname('ci-runner-7'); exec({HOLDER!r})"
    child = Child(code, env, prefix=_other_host(unshare))
    try:
        assert child.line() == "ready"
        store = PgStore(pg_url, "w")
        note = store.read_lock("bert")
        assert note is not None and note.host == "ci-runner-7" and note.holder_alive() is None
        with pytest.raises(LockError, match="stuck apply"), store.lock("bert"):
            pass
        assert store.force_unlock("bert") is True
        with store.lock("bert"):  # free now, without waiting for the holder
            child.say("go")
            answer = child.line()
        # The old holder lost its session, and with it the right to write: it stops, it does not carry on.
        assert answer.startswith("refused: StateError") and "lost the connection" in answer
    finally:
        child.kill()


def test_force_unlock_refuses_a_live_holder_on_this_host(pg_url: str) -> None:
    child = Child(HOLDER, _env(pg_url))
    try:
        assert child.line() == "ready"
        with pytest.raises(LockError, match="still running on this host"):
            PgStore(pg_url, "w").force_unlock("bert")
        assert PgStore(pg_url, "w").lock_held("bert")
    finally:
        child.kill()


def readme_sql() -> list[str]:
    """The role set-up docs/team-state.md gives, statement by statement."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "team-state.md").read_text()
    block = text.split("```sql\n", 1)[1].split("```", 1)[0]
    lines = [ln for ln in block.splitlines() if not ln.startswith("--")]
    return [s.strip().replace("'…'", "'pw'") for s in " ".join(lines).split(";") if s.strip()]


def test_the_readme_planning_role_reads_records_but_not_the_key(
    pg_server: PgServer, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUJOB_STATE_KEY", STATE_KEY)
    admin = PgStore(pg_url, "w")
    ensure_project_key(admin)
    admin.write("pulls/bert.json", b'{"job": "bert"}')
    admin.append("journal/bert.jsonl", b'{"phase": "begin"}')
    db = pg_url.rsplit("/", 1)[1]
    for statement in readme_sql():
        if "CREATE ROLE" in statement and pg_server.sql(
            f"SELECT 1 FROM pg_roles WHERE rolname = '{statement.split()[2]}'", db
        ):
            continue  # roles are per server; another test's database made them already
        pg_server.sql(statement, db)
    monkeypatch.delenv("GPUJOB_STATE_KEY")
    planner = PgStore(pg_server.url(db, user="gpujob_plan"), "w")
    assert planner.read("pulls/bert.json") == b'{"job": "bert"}'
    assert planner.lines("journal/bert.jsonl") == [b'{"phase": "begin"}']
    assert planner.public("id_ed25519") is not None and "id_ed25519" in planner.names()
    assert not planner.lock_held("bert")
    with pytest.raises(StateError, match="permission denied"):
        planner.write("pulls/bert.json", b"{}")
    monkeypatch.setenv("GPUJOB_STATE_KEY", STATE_KEY)  # even with the key: the role cannot read the column
    with pytest.raises(StateError, match="permission denied"):
        planner.secret("id_ed25519")


def test_force_unlock_command_frees_a_job_held_from_another_host(pg_url: str, tmp_path) -> None:
    import subprocess
    import sys

    env = {**_env(pg_url), "PATH": os.environ["PATH"], "CI": "true"}
    unshare = shutil.which("unshare")
    assert unshare
    code = f"import socket; socket.sethostname('ci-runner-9'); exec({HOLDER!r})"
    child = Child(code, env, prefix=_other_host(unshare))
    try:
        assert child.line() == "ready"
        done = subprocess.run(
            [sys.executable, "-m", "gpujob", "force-unlock", "bert", "--yes"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "ci-runner-9" in done.stdout  # it said whose lock it removed
        store = PgStore(pg_url, "w")
        assert not store.lock_held("bert") and store.read_lock("bert") is None
        child.say("go")
        assert child.line().startswith("refused: StateError")
    finally:
        child.kill()


def test_switching_without_migrating_does_not_make_a_second_ssh_key(
    pg_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpujob.state import open_store

    (tmp_path / ".git").mkdir()
    job = tmp_path / "job.yaml"
    ensure_project_key(tmp_path / ".gpujob")  # months of local use: pods trust this key
    monkeypatch.setenv("GPUJOB_STATE_URL", pg_url)
    monkeypatch.setenv("GPUJOB_STATE_WORKSPACE", "switched")
    monkeypatch.setenv("GPUJOB_STATE_KEY", STATE_KEY)
    with pytest.raises(StateError, match=r"has one, and the machines made from there trust it") as err:
        ensure_project_key(open_store(job))
    assert "gpujob state migrate --from" in err.value.render()
    assert PgStore(pg_url, "switched").names() == []
