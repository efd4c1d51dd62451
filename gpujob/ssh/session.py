"""SSH sessions on asyncssh: connect with retries, host keys pinned per resource id, remote commands
with errors mapped onto gpujob.errors. The only module of gpujob that touches asyncssh's connection API."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncssh

from gpujob.clock import Clock, SystemClock
from gpujob.errors import RemoteCommandError, SSHConnectError
from gpujob.live import SSHEndpoint
from gpujob.model import Model
from gpujob.ssh.quote import q

# Measured on loopback (see the report of the SSH layer): AES-GCM is the fastest cipher asyncssh
# offers through `cryptography`; chacha20 is kept as a fallback for servers without AES-GCM.
CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes256-ctr",
)
WINDOW = 8 * 1024 * 1024  # a larger flow-control window keeps the pipe full on bulk transfers
MAX_PKT = 256 * 1024
CHUNK = 1024 * 1024


class CommandResult(Model):
    exit_status: int | None
    stdout: str
    stderr: str


def _short(cmd: str) -> str:
    """The command as shown in errors: first line, bounded. Commands never carry secret values."""
    first = cmd.strip().splitlines()[0] if cmd.strip() else ""
    return first[:200] + (" ..." if len(first) > 200 or "\n" in cmd.strip() else "")


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


class _PinningClient(asyncssh.SSHClient):
    """Called by asyncssh only for a host key that is not already trusted (the pin)."""

    def __init__(self, accept_unknown: bool) -> None:
        self.accept_unknown = accept_unknown
        self.seen: asyncssh.SSHKey | None = None

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        self.seen = key
        return self.accept_unknown


class HostKeyPins:
    """gpujob's own known_hosts: a JSON file {resource_id: {key, fingerprint, host, port, pinned_at}}.

    Keyed by the platform's resource id, not host:port, because cloud hosts reuse addresses."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise SSHConnectError(f"cannot read pinned host keys {self.path}: {exc}") from exc
        return data if isinstance(data, dict) else {}

    def get(self, resource_id: str) -> asyncssh.SSHKey | None:
        entry = self.load().get(resource_id)
        return asyncssh.import_public_key(entry["key"]) if entry else None

    def pin(self, resource_id: str, key: asyncssh.SSHKey, endpoint: SSHEndpoint) -> None:
        from filelock import FileLock

        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            data = self.load()
            data[resource_id] = {
                "key": key.export_public_key("openssh").decode().strip(),
                "fingerprint": key.get_fingerprint("sha256"),
                "host": endpoint.host,
                "port": endpoint.port,
                "pinned_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh, indent=2, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)


class Remote:
    """An open SSH connection to one machine."""

    def __init__(self, conn: asyncssh.SSHClientConnection, endpoint: SSHEndpoint, resource_id: str) -> None:
        self.conn = conn
        self.endpoint = endpoint
        self.resource_id = resource_id

    def _lost(self, exc: BaseException) -> SSHConnectError:
        where = f"{self.endpoint.user}@{self.endpoint.host}:{self.endpoint.port} ({self.resource_id})"
        return SSHConnectError(f"ssh connection to {where} lost: {type(exc).__name__}: {str(exc)[:200]}")

    async def run(
        self, cmd: str, *, check: bool = True, timeout: float | None = None, input: bytes | str | None = None
    ) -> CommandResult:
        data = input.encode() if isinstance(input, str) else input
        try:
            # asyncssh only closes stdin when there is input: without this, `cat` and friends would
            # wait forever for an EOF that never comes.
            extra: dict[str, Any] = {"input": data} if data else {"stdin": asyncssh.DEVNULL}
            proc = await self.conn.run(cmd, check=False, timeout=timeout, encoding=None, **extra)
        except asyncssh.TimeoutError as exc:
            err = exc.stderr if isinstance(exc.stderr, bytes) else b""
            raise RemoteCommandError(
                _short(cmd), None, f"timed out after {timeout}s\n" + _tail(err.decode("utf-8", "replace"))
            ) from exc
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from exc
        out = _decode(proc.stdout)
        err_text = _decode(proc.stderr)
        status = proc.exit_status if proc.exit_signal is None else None
        if check and status != 0:
            raise RemoteCommandError(_short(cmd), status, _tail(err_text))
        return CommandResult(exit_status=status, stdout=out, stderr=err_text)

    async def put_bytes(self, data: bytes, path: str, mode: int = 0o644) -> None:
        """Write a remote file atomically (temp name in the same directory, then rename)."""
        d, _, name = path.rpartition("/")
        tmp = f"{d}/.{name}.gpujob-tmp"
        await self.run(
            f"umask 077 && mkdir -p {q(d or '/')} && cat > {q(tmp)} && chmod {mode:o} {q(tmp)} && mv -f {q(tmp)} {q(path)}",
            input=data,
        )

    async def get_bytes(self, path: str) -> bytes:
        chunks: list[bytes] = []
        await self.stream_out(f"cat {q(path)}", chunks.append)
        return b"".join(chunks)

    async def stream_in(
        self, cmd: str, chunks: Iterable[bytes] | AsyncIterator[bytes], *, timeout: float | None = None
    ) -> CommandResult:
        """Run `cmd` feeding its stdin from `chunks` with flow control (for tar streams)."""
        try:
            async with self.conn.create_process(cmd, encoding=None) as proc:
                if isinstance(chunks, AsyncIterator):
                    async for chunk in chunks:
                        proc.stdin.write(chunk)
                        await proc.stdin.drain()
                else:
                    for chunk in chunks:
                        proc.stdin.write(chunk)
                        await proc.stdin.drain()
                proc.stdin.write_eof()
                done = await proc.wait(check=False, timeout=timeout)
        except (asyncssh.Error, OSError, BrokenPipeError) as exc:
            raise self._lost(exc) from exc
        return self._result(cmd, done)

    async def stream_out(
        self, cmd: str, sink: Callable[[bytes], object], *, timeout: float | None = None
    ) -> CommandResult:
        """Run `cmd` passing its stdout to `sink` chunk by chunk (for pulls). Raises on non-zero exit."""
        try:
            async with self.conn.create_process(cmd, encoding=None, stdin=asyncssh.DEVNULL) as proc:
                while True:
                    chunk = await proc.stdout.read(CHUNK)
                    if not chunk:
                        break
                    pending = sink(chunk)
                    if inspect.isawaitable(pending):  # an async sink applies backpressure
                        await pending
                done = await proc.wait(check=False, timeout=timeout)
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from exc
        return self._result(cmd, done)

    def _result(self, cmd: str, done: asyncssh.SSHCompletedProcess) -> CommandResult:
        if done.exit_signal is not None and done.exit_status is None:
            raise self._lost(ConnectionError(f"remote process ended by signal {done.exit_signal[0]}"))
        err = _decode(done.stderr)
        if done.exit_status != 0:
            raise RemoteCommandError(_short(cmd), done.exit_status, _tail(err))
        return CommandResult(exit_status=done.exit_status, stdout="", stderr=err)


def _decode(data: Any) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


@asynccontextmanager
async def connect(
    endpoint: SSHEndpoint,
    *,
    key_path: Path,
    known_hosts: Path,
    resource_id: str,
    timeout: float = 30,
    expect_new_host: bool = False,
    clock: Clock | None = None,
) -> AsyncIterator[Remote]:
    """Open an SSH connection, retrying with backoff until the endpoint answers or `timeout` passes.

    The host key is pinned on first contact per `resource_id` and must match afterwards; pass
    `expect_new_host=True` only when the platform is known to have moved the machine (re-pins)."""
    conn = await _open(
        endpoint,
        Path(key_path),
        HostKeyPins(known_hosts),
        resource_id,
        timeout,
        expect_new_host,
        clock or SystemClock(),
    )
    try:
        yield Remote(conn, endpoint, resource_id)
    finally:
        conn.close()
        with suppress(TimeoutError, asyncssh.Error, OSError):
            await asyncio.wait_for(conn.wait_closed(), 5)


async def _open(
    endpoint: SSHEndpoint,
    key_path: Path,
    pins: HostKeyPins,
    resource_id: str,
    timeout: float,
    expect_new: bool,
    clock: Clock,
) -> asyncssh.SSHClientConnection:
    where = f"{endpoint.user}@{endpoint.host}:{endpoint.port} ({resource_id})"
    try:
        client_key = asyncssh.read_private_key(key_path)
    except (OSError, asyncssh.KeyImportError) as exc:
        raise SSHConnectError(f"cannot read SSH key {key_path}: {exc}") from exc
    pinned = pins.get(resource_id)
    started = clock.now()

    def elapsed() -> float:
        return (clock.now() - started).total_seconds()

    delay, last = 0.1, "no attempt made"
    while True:
        client = _PinningClient(accept_unknown=pinned is None or expect_new)
        remaining = timeout - elapsed()
        try:
            conn = await asyncssh.connect(
                endpoint.host,
                endpoint.port,
                username=endpoint.user,
                client_keys=[client_key],
                known_hosts=([pinned] if pinned and not expect_new else [], [], []),
                client_factory=lambda c=client: c,  # type: ignore[misc]
                connect_timeout=max(1.0, min(remaining, 10.0)),
                login_timeout=max(1.0, min(remaining, 20.0)),
                config=None,
                agent_path=None,
                agent_forwarding=False,
                password=None,
                kbdint_auth=False,
                gss_auth=False,
                preferred_auth="publickey",
                encryption_algs=list(CIPHERS),
                compression_algs=None,
                keepalive_interval=15,
                keepalive_count_max=4,
                window=WINDOW,
                max_pktsize=MAX_PKT,
            )
        except (asyncssh.Error, OSError, TimeoutError) as exc:
            if pinned is not None and not expect_new and client.seen is not None and client.seen != pinned:
                raise SSHConnectError(
                    f"host key of {where} changed: pinned {pinned.get_fingerprint('sha256')}, "
                    f"offered {client.seen.get_fingerprint('sha256')}; refusing to connect",
                    hint="if the platform really moved this machine, re-run with the new host accepted; "
                    "otherwise someone else may be answering on this address",
                ) from exc
            last = f"{type(exc).__name__}: {str(exc)[:200]}"
        else:
            if client.seen is not None and (pinned is None or expect_new):
                pins.pin(resource_id, client.seen, endpoint)
            elif pinned is not None and not expect_new:
                pass  # the pin matched (asyncssh trusted it without asking the client)
            return conn
        if elapsed() + delay > timeout:
            raise SSHConnectError(
                f"could not connect to {where} within {timeout:.0f}s: {last}",
                hint="the machine may still be starting, or its SSH key not yet installed; run apply again",
            )
        await clock.sleep(delay)
        delay = min(delay * 1.6, 2.0)
