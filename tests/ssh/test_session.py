from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gpujob.errors import RemoteCommandError, SSHConnectError
from gpujob.live import SSHEndpoint
from gpujob.quote import exports, join, q, remote_path, session_name, with_env
from gpujob.ssh.deadline import SSHStalled
from gpujob.ssh.keys import ensure_project_key
from gpujob.ssh.session import connect
from gpujob.ssh.testing import SSHD, local_sshd, running_sshd

NASTY = [
    "plain",
    "with space",
    "single ' quote",
    'double " quote',
    "dollar $HOME and ${PATH}",
    "semi; rm -rf /tmp/nothing-here",
    "back `id` tick $(id)",
    "new\nline",
    "",
    "tab\tand \\ backslash",
    "glob * ? [a]",
    "ünïcødé",
]


def test_project_key_is_private_and_idempotent(tmp_path: Path) -> None:
    key, line = ensure_project_key(tmp_path / "st")
    assert line.startswith("ssh-ed25519 ")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "st").stat().st_mode) == 0o700
    before = key.read_bytes()
    os.chmod(key, 0o644)
    key2, line2 = ensure_project_key(tmp_path / "st")
    assert (key2, line2) == (key, line)
    assert key.read_bytes() == before
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_quote_helpers_refuse_bad_names() -> None:
    with pytest.raises(ValueError):
        exports({"BAD NAME": "x"})
    with pytest.raises(ValueError):
        remote_path("/workspace/../etc")
    with pytest.raises(ValueError):
        remote_path("relative/path")
    with pytest.raises(ValueError):
        session_name("a.b:c")
    assert remote_path("/workspace//code/") == "/workspace/code"


def test_run_and_quoting_roundtrip(sshd: SSHD, state: Path) -> None:
    async def go() -> None:
        async with connect(
            sshd.endpoint,
            key_path=state / "id_ed25519",
            known_hosts=state / "known_hosts.json",
            resource_id="pod-1",
        ) as remote:
            for value in NASTY:
                # Three ways in, one round trip: a quoted word, a one-line env prefix, export lines.
                cmd = (
                    f"printf '%s\\0' {q(value)}; "
                    + with_env({"GPUJOB_T": value}, 'printf "%s\\0" "$GPUJOB_T"; ')
                    + exports({"A_B": value})
                    + 'printf "%s" "$A_B"'
                )
                res = await remote.run(cmd)
                assert res.stdout.split("\0") == [value, value, value]
            res = await remote.run("printf '%s|' " + join(NASTY))
            assert res.stdout == "".join(v + "|" for v in NASTY)
            res = await remote.run("cat", input=b"\x00\x01binary\xff")
            assert res.stdout.encode("utf-8", "replace").startswith(b"\x00\x01binary")
            with pytest.raises(RemoteCommandError) as err:
                await remote.run("echo oops >&2; exit 7")
            assert err.value.exit_status == 7 and "oops" in err.value.stderr_tail
            res = await remote.run("exit 3", check=False)
            assert res.exit_status == 3
            with pytest.raises(SSHStalled, match=r"`sleep 5` on .* stalled: no data for 0.3s"):
                await remote.run("sleep 5", timeout=0.3)
            target = f"{state}/remote dir/file $x;.txt"
            await remote.put_bytes(b"hello\n", target, 0o600)
            assert Path(target).read_bytes() == b"hello\n"
            assert stat.S_IMODE(Path(target).stat().st_mode) == 0o600
            assert await remote.get_bytes(target) == b"hello\n"

    asyncio.run(go())


def test_host_key_pinned_then_change_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    key, line = ensure_project_key(state)
    pins = state / "known_hosts.json"
    with running_sshd(tmp_path / "own") as server:
        server.authorize(line)

        async def hello(**kw: Any) -> str:
            async with connect(
                server.endpoint, key_path=key, known_hosts=pins, resource_id="pod-x", **kw
            ) as r:  # type: ignore[arg-type]
                return (await r.run("echo hi")).stdout.strip()

        assert asyncio.run(hello()) == "hi"
        pinned = json.loads(pins.read_text())["pod-x"]
        assert pinned["key"].startswith("ssh-ed25519 ")
        assert stat.S_IMODE(pins.stat().st_mode) == 0o600
        assert asyncio.run(hello()) == "hi"  # the pin matches
        server.new_host_key()
        with pytest.raises(SSHConnectError) as err:
            asyncio.run(hello(timeout=5))
        assert "changed" in str(err.value) and pinned["fingerprint"] in str(err.value)
        assert json.loads(pins.read_text())["pod-x"] == pinned  # never overwritten silently

        # A different resource id on the same address is a different machine: pinned on first use.
        async def other() -> None:
            async with connect(server.endpoint, key_path=key, known_hosts=pins, resource_id="pod-y") as r:
                await r.run("true")

        asyncio.run(other())
        # The caller knows the platform moved the pod: re-pin.
        assert asyncio.run(hello(expect_new_host=True)) == "hi"
        assert json.loads(pins.read_text())["pod-x"]["fingerprint"] != pinned["fingerprint"]
        assert asyncio.run(hello()) == "hi"


def test_connect_retries_until_endpoint_answers(tmp_path: Path) -> None:
    state = tmp_path / "state"
    key, line = ensure_project_key(state)
    server = SSHD(tmp_path / "late")
    server.authorize(line)
    # Until sshd is up, the port belongs to something that accepts and hangs up (a booting machine's
    # port mapping); sshd is started only after gpujob's first attempt was turned away.
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", server.port))
    lsock.listen()
    turned_away = threading.Event()

    def boot() -> None:
        conn, _ = lsock.accept()
        conn.close()
        lsock.close()
        turned_away.set()
        server.start()

    booter = threading.Thread(target=boot)
    booter.start()

    async def go() -> str:
        async with connect(
            server.endpoint, key_path=key, known_hosts=state / "kh.json", resource_id="p", timeout=30
        ) as r:
            return (await r.run("echo up")).stdout.strip()

    try:
        assert asyncio.run(go()) == "up"
        assert turned_away.is_set()
    finally:
        booter.join(30)
        server.stop()


def test_connect_retries_while_the_key_is_not_yet_installed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    key, line = ensure_project_key(state)
    with running_sshd(tmp_path / "keys-late", log_level="VERBOSE") as server:
        rejected = threading.Event()

        def install_key_after_first_rejection() -> None:
            deadline = time.monotonic() + 20
            while "Failed publickey" not in server.log() and time.monotonic() < deadline:
                time.sleep(0.02)  # polls the sshd log until gpujob's first attempt was rejected
            rejected.set()
            server.authorize(line)

        helper = threading.Thread(target=install_key_after_first_rejection)
        helper.start()

        async def go() -> str:
            # A machine apply just created or started (expect_new_host): its key may come after sshd.
            async with connect(
                server.endpoint,
                key_path=key,
                known_hosts=state / "kh.json",
                resource_id="p",
                expect_new_host=True,
            ) as r:
                return (await r.run("echo in")).stdout.strip()

        try:
            assert asyncio.run(go()) == "in"
            assert rejected.is_set() and "Failed publickey" in server.log()
        finally:
            helper.join(30)


def test_a_running_machine_that_refuses_the_key_fails_at_once_naming_it(tmp_path: Path) -> None:
    """Not one this apply just made: another key is trusted there, so retrying the same one cannot help."""
    from gpujob.errors import SSHKeyRefused

    state = tmp_path / "state"
    key, _ = ensure_project_key(state)
    with running_sshd(tmp_path / "other-key") as server:

        async def go() -> None:
            async with connect(
                server.endpoint, key_path=key, known_hosts=state / "kh.json", resource_id="p", timeout=30
            ):
                pass

        started = time.monotonic()
        with pytest.raises(SSHKeyRefused) as err:
            asyncio.run(go())
    assert time.monotonic() - started < 10  # not the 30 s connect limit
    text = err.value.render()
    assert f"refused gpujob's project SSH key {key} (SHA256:" in text and f"state store {state}" in text
    assert "GPUJOB_STATE_URL" in text


def test_connect_gives_up_with_clear_error(tmp_path: Path) -> None:
    key, _ = ensure_project_key(tmp_path / "st")
    ep = SSHEndpoint(host="127.0.0.1", port=1, user="root")

    async def go() -> None:
        async with connect(
            ep, key_path=key, known_hosts=tmp_path / "kh.json", resource_id="gone", timeout=1.5
        ):
            pass

    with pytest.raises(SSHConnectError) as err:
        asyncio.run(go())
    assert "gone" in str(err.value) and "within" in str(err.value)


def test_local_sshd_helper(tmp_path: Path) -> None:
    with local_sshd(tmp_path) as (endpoint, key):

        async def go() -> str:
            async with connect(
                endpoint, key_path=key, known_hosts=tmp_path / "kh.json", resource_id="r"
            ) as r:
                return (await r.run("whoami")).stdout.strip()

        assert asyncio.run(go()) == endpoint.user


def test_only_the_ssh_package_imports_asyncssh_and_host_keys_are_always_checked() -> None:
    root = Path(__file__).resolve().parents[2] / "gpujob"
    offenders = []
    for path in root.rglob("*.py"):
        text = path.read_text()
        rel = path.relative_to(root).as_posix()
        if re.search(r"^\s*(import asyncssh|from asyncssh)", text, re.M) and not rel.startswith("ssh/"):
            offenders.append(rel)
        if re.search(r"known_hosts\s*=\s*None", text):
            offenders.append(f"{rel}: known_hosts=None disables host key checking")
    assert offenders == []
