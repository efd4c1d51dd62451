"""A PostgreSQL team state against the simulator, with the CLI as processes: the database password in
any form libpq takes (URL query, key=value, PGPASSWORD) appears in no output of status, and the
decrypted project SSH key does not outlive `logs -f` killed by SIGTERM or SIGHUP (a CI job cancelled,
a terminal closed)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from urllib.parse import urlsplit

from gpujob.state import scratch
from tests.e2e.e2e_support import Project, poll

KEY = "e2e-team-secrets-key-4c1d9e7a2b"
QUERY_PW = "QueryPassw0rd-e2e-71"
KV_PW = "KvPassw0rd-e2e-83"
ENV_PW = "EnvPassw0rd-e2e-95"


def _shared(p: Project, url: str) -> None:
    p.env.update(GPUJOB_STATE_URL=url, GPUJOB_STATE_WORKSPACE="team", GPUJOB_STATE_KEY=KEY)


def _kv(url: str, password: str) -> str:
    u = urlsplit(url)
    return (
        f"host={u.hostname} port={u.port} dbname={u.path.lstrip('/')} user={u.username} password='{password}'"
    )


def test_no_password_form_reaches_status_output(project: Project, pg_url: str) -> None:
    p = project
    _shared(p, f"{pg_url}?password={QUERY_PW}")  # trust auth: the server ignores it, gpujob must not show it
    p.gj("apply", "--auto-approve")
    poll("the run to be alive", lambda: (p.status().get("run") or {}).get("alive"))
    seen = []
    for url in (f"{pg_url}?password={QUERY_PW}", _kv(pg_url, KV_PW)):
        p.env["GPUJOB_STATE_URL"] = url
        p.env["PGPASSWORD"] = ENV_PW
        for args in (("status",), ("status", "--format", "json"), ("plan", "--no-color"), ("state", "show")):
            done = p.gj(*args, check=False)
            seen.append(done.stdout + done.stderr)
            assert done.returncode in (0, 2), (args, done.stdout + done.stderr)
    # the plan-only CI setup: another workspace (the pod does not trust its key), the project pinned
    project_id = p.project_id
    for url in (f"{pg_url}?password={QUERY_PW}", _kv(pg_url, KV_PW)):
        ci = {
            **p.env,
            "GPUJOB_STATE_URL": url,
            "GPUJOB_STATE_WORKSPACE": "ci",
            "GPUJOB_PROJECT_ID": project_id,
        }
        ci["GPUJOB_SSH_CONNECT_TIMEOUT"] = "3"
        done = Project(dir=p.dir, env=ci, sim=p.sim).gj("status", check=False)
        seen.append(done.stdout + done.stderr)
        assert done.returncode == 1, done.stdout + done.stderr  # it cannot read the run
    # the same command against an unreachable database names it, without the password
    u = urlsplit(pg_url)
    p.env["GPUJOB_STATE_URL"] = (
        f"host={u.hostname} port=1 user={u.username} password='{KV_PW}' connect_timeout=5"
    )
    failed = p.gj("status", check=False)
    seen.append(failed.stdout + failed.stderr)
    assert failed.returncode == 1
    text = "\n".join(seen)
    for secret in (QUERY_PW, KV_PW, ENV_PW):
        assert secret not in text
    assert "quickstart" in text and "cannot use the state database" in text


def _key_dirs(pid: int) -> list[Path]:
    base = Path(scratch.base() or "/tmp")
    return [d for d in base.glob(f"{scratch.PREFIX}{pid}-*") if d.is_dir()]


def test_the_decrypted_key_is_gone_after_logs_f_is_killed(project: Project, pg_url: str) -> None:
    """asyncssh takes the key from memory: while `logs -f` follows the run no decrypted key is on any
    disk, and its private directory is gone once SIGTERM or SIGHUP ends it. `gpujob ssh --print`, which
    hands the key to OpenSSH, writes it and removes it when it exits."""
    p = project
    _shared(p, pg_url)
    p.gj("apply", "--auto-approve")
    poll("the run to be alive", lambda: (p.status().get("run") or {}).get("alive"))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        follower = p.popen("logs", "-f", split=True)  # its first stdout line is the log's
        try:
            assert follower.stdout is not None
            first = follower.stdout.readline()  # it is connected and following
            assert first, "logs -f printed nothing"
            dirs = _key_dirs(follower.pid)
            assert dirs, "no private directory for the state's secrets"
            assert [f for d in dirs for f in d.rglob("*") if f.name == "id_ed25519"] == []
            os.kill(follower.pid, sig)
            follower.wait(30)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait(30)
        assert follower.returncode == -sig, follower.returncode
        assert _key_dirs(follower.pid) == [], f"the private directory outlived {sig.name}"

    printed = p.gj("ssh", "--print")
    key = Path(printed.stdout.split(" -i ", 1)[1].split()[0])
    assert key.name == "id_ed25519" and not key.exists()  # written for OpenSSH, removed at exit
