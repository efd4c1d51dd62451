"""The Store contract, run against the local directory and a real PostgreSQL server alike."""

from __future__ import annotations

import json
import stat
import time

import pytest

from gpujob.errors import LockError
from gpujob.state import Store
from tests.state.conftest import Child


def test_documents(store: Store) -> None:
    assert store.read("pulls/bert.json") is None
    store.write("pulls/bert.json", b'{"a": 1}')
    store.write("pulls/bert.json", b'{"a": 2}')
    assert store.read("pulls/bert.json") == b'{"a": 2}'
    assert store.update("known_hosts.json", lambda old: (old or b"") + b"x") == b"x"
    assert store.update("known_hosts.json", lambda old: (old or b"") + b"y") == b"xy"
    assert store.create("project.json", b"first") == b"first"
    assert store.create("project.json", b"second") == b"first"
    store.write("launches/bert.json", b"{}")
    assert store.names("pulls/") == ["pulls/bert.json"]
    assert store.names() == ["known_hosts.json", "launches/bert.json", "project.json", "pulls/bert.json"]


def test_logs_keep_order_and_tail(store: Store) -> None:
    assert store.lines("journal/bert.jsonl") == []
    for i in range(5):
        store.append("journal/bert.jsonl", json.dumps({"i": i}).encode())
    store.append("journal/other.jsonl", b"{}")
    assert [json.loads(x)["i"] for x in store.lines("journal/bert.jsonl")] == [0, 1, 2, 3, 4]
    assert [json.loads(x)["i"] for x in store.lines("journal/bert.jsonl", last=2)] == [3, 4]
    assert "journal/bert.jsonl" in store.names("journal/")


def test_secret_made_once_public_half_readable_file_private(store: Store) -> None:
    calls = []

    def make() -> tuple[bytes, bytes]:
        calls.append(1)
        return b"-----PRIVATE-----\n", b"ssh-ed25519 AAAA test\n"

    assert store.create_secret("id_ed25519", make) == b"-----PRIVATE-----\n"
    assert store.create_secret("id_ed25519", make) == b"-----PRIVATE-----\n" and calls == [1]
    assert store.secret("id_ed25519") == b"-----PRIVATE-----\n"
    assert store.public("id_ed25519") == b"ssh-ed25519 AAAA test\n"
    path = store.secret_file("id_ed25519")
    assert path is not None
    from gpujob.state.scratch import held, on_disk

    if held(path) is not None:  # a remote store: in memory only, until a tool needs the file
        assert held(path) == b"-----PRIVATE-----\n" and not path.exists()
    assert on_disk(path).read_bytes() == b"-----PRIVATE-----\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.secret_file("nope") is None
    assert store.names() == ["id_ed25519"]


UPDATER = """
import json, sys
from gpujob.state import open_store
store = open_store(None)
for i in range(10):
    store.update("known_hosts.json", lambda old: json.dumps({**json.loads(old or b"{}"), f"{sys.argv[1]}-{i}": 1}).encode())
print("done", flush=True)
"""


def test_updates_from_several_processes_lose_nothing(store: Store, store_env: dict[str, str]) -> None:
    children = [Child(UPDATER, store_env, str(n)) for n in range(4)]
    for c in children:
        code, out, err = c.finish()
        assert code == 0 and out.strip() == "done", err
    assert len(json.loads(store.read("known_hosts.json") or b"{}")) == 40


HOLDER = """
import sys
from gpujob.state import open_store
with open_store(None).lock("bert", command="child apply"):
    print("ready", flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


def test_lock_names_its_holder_and_frees_when_released(store: Store, store_env: dict[str, str]) -> None:
    child = Child(HOLDER, store_env)
    try:
        assert child.line() == "ready"
        assert store.lock_held("bert")
        with pytest.raises(LockError) as err, store.lock("bert"):
            pass
        msg = err.value.render()
        assert "child apply" in msg and f"pid {child.proc.pid}" in msg and "since" in msg
        note = store.read_lock("bert")
        assert note is not None and note.pid == child.proc.pid
        child.say("go")
        assert child.line() == "released"
    finally:
        child.kill()
    assert not store.lock_held("bert") and store.read_lock("bert") is None
    with store.lock("bert", command="me") as info:
        assert info.command == "me" and store.lock_held("bert")
        with pytest.raises(LockError), store.lock("bert"):  # not re-entrant, even in one process
            pass


def test_sigkill_of_the_holder_frees_the_lock_at_once(store: Store, store_env: dict[str, str]) -> None:
    child = Child(HOLDER, store_env)
    try:
        assert child.line() == "ready"
        with pytest.raises(LockError, match="child apply"), store.lock("bert"):
            pass
    finally:
        child.kill()  # SIGKILL: no cleanup runs in the holder
    # No force-unlock: the lock died with the process (file lock: the OS; PostgreSQL: the server ends
    # the session when its socket closes). The server tidies up asynchronously, so the lock is waited
    # for (server-side, bounded) and the wait measured: milliseconds, not a keepalive timeout.
    started = time.monotonic()
    with store.lock("bert", timeout=30):
        waited = time.monotonic() - started
    assert waited < 3.0, f"the lock of a killed holder took {waited:.1f}s to free"
