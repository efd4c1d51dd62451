"""SSH sessions on asyncssh: `connect` opens one (dialled with retries by gpujob.ssh.dial, host keys
pinned per resource id by gpujob.ssh.hostkeys), and `Remote` runs its commands, streams and transfers
under deadlines, with errors mapped onto gpujob.errors."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import asyncssh

from gpujob.clock import Clock, SystemClock
from gpujob.errors import RemoteCommandError, SSHConnectError
from gpujob.invariant import InvariantError
from gpujob.live import SSHEndpoint
from gpujob.model import Model
from gpujob.quote import q
from gpujob.ssh.deadline import CLOSE_GRACE_S, Limits, OutputTooLarge, SSHStalled, Watch
from gpujob.ssh.dial import open_connection
from gpujob.ssh.hostkeys import HostKeyPins
from gpujob.ssh.packets import send_full_packets
from gpujob.state import Store

CHUNK = 1024 * 1024
RUN_OUTPUT_MAX = 16 * 1024 * 1024  # what `run` collects; bulk data goes through stream_out
STDERR_KEEP = 64 * 1024  # the tail of stderr kept for error messages


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


class Remote:
    """An open SSH connection to one machine. Every command, stream and transfer runs under a deadline
    (gpujob.ssh.deadline): nothing moving for `limits.idle_s`, or past its overall bound, raises
    SSHStalled naming the operation, the machine and what it left behind."""

    def __init__(
        self,
        conn: asyncssh.SSHClientConnection,
        endpoint: SSHEndpoint,
        resource_id: str,
        limits: Limits | None = None,
    ) -> None:
        self.conn = conn
        self.endpoint = endpoint
        self.resource_id = resource_id
        self.limits = limits or Limits.from_env()

    @property
    def where(self) -> str:
        return f"{self.endpoint.user}@{self.endpoint.host}:{self.endpoint.port} ({self.resource_id})"

    def _lost(self, exc: BaseException) -> SSHConnectError:
        return SSHConnectError(f"ssh connection to {self.where} lost: {type(exc).__name__}: {str(exc)[:200]}")

    def watch(
        self,
        what: str,
        *,
        size: int = 0,
        timeout: float | None = None,
        idle: float | None = None,
        left: str = "",
        expected: int | None = None,
    ) -> Watch:
        """The deadline of one operation moving (or making the remote read) `size` bytes."""
        total = timeout if timeout is not None else self.limits.for_bytes(size)
        return Watch(
            what,
            self.where,
            idle_s=min(idle if idle is not None else self.limits.idle_s, total),
            total_s=total,
            left=left,
            expected=expected,
            # a transfer (it says how much it moves) must keep the minimum rate over a sliding window
            min_rate=self.limits.min_rate if expected else None,
            window_s=self.limits.window_s,
        )

    async def run(
        self,
        cmd: str,
        *,
        check: bool = True,
        timeout: float | None = None,
        idle: float | None = None,
        input: bytes | str | None = None,
        what: str | None = None,
        max_output: int = RUN_OUTPUT_MAX,
        left: str = "",
    ) -> CommandResult:
        """Run `cmd` and collect its output (at most `max_output` bytes, else OutputTooLarge).
        `timeout` bounds the whole command (default: the command bound), `idle` the silence in it."""
        data = input.encode() if isinstance(input, str) else input
        watch = self.watch(what or f"remote command `{_short(cmd)}`", timeout=timeout, idle=idle, left=left)
        status, signal, out, err = await self._exchange(
            cmd, watch, feed=[data] if data else None, cap=max_output
        )
        if status is None and signal is None:
            raise self._lost(ConnectionError("the channel closed without an exit status"))
        err_text = _decode(err)
        code = status if signal is None else None
        if check and code != 0:
            raise RemoteCommandError(_short(cmd), code, _tail(err_text))
        return CommandResult(exit_status=code, stdout=_decode(out), stderr=err_text)

    async def put_bytes(self, data: bytes, path: str, mode: int = 0o644) -> None:
        """Write a remote file atomically (temp name in the same directory, then rename)."""
        d, _, name = path.rpartition("/")
        tmp = f"{d}/.{name}.gpujob-tmp"
        await self.run(
            f"umask 077 && mkdir -p {q(d or '/')} && cat > {q(tmp)} && chmod {mode:o} {q(tmp)} && mv -f {q(tmp)} {q(path)}",
            input=data,
            timeout=self.limits.for_bytes(len(data)),
            what=f"writing {path}",
            left=f"{path} is unchanged (the new copy goes to a temporary name first)",
        )

    async def get_bytes(self, path: str, max_size: int = RUN_OUTPUT_MAX) -> bytes:
        cmd = f"cat {q(path)}"
        found = await self._exchange(cmd, self.watch(f"reading {path}", size=max_size), cap=max_size)
        self._result(cmd, *found)
        return found[2]

    async def stream_in(
        self,
        cmd: str,
        chunks: Iterable[bytes] | AsyncIterator[bytes],
        *,
        size: int = 0,
        what: str | None = None,
        left: str = "",
    ) -> CommandResult:
        """Run `cmd` feeding its stdin from `chunks` (about `size` bytes) with flow control."""
        watch = self.watch(what or f"upload to `{_short(cmd)}`", size=size, left=left, expected=size or None)
        return self._result(cmd, *await self._exchange(cmd, watch, feed=chunks))

    async def stream_out(
        self,
        cmd: str,
        sink: Callable[[bytes], object],
        *,
        size: int = 0,
        what: str | None = None,
        left: str = "",
    ) -> CommandResult:
        """Run `cmd` passing its stdout (about `size` bytes) to `sink` chunk by chunk (for pulls).
        Raises on non-zero exit. An async sink applies backpressure."""
        watch = self.watch(
            what or f"download from `{_short(cmd)}`", size=size, left=left, expected=size or None
        )
        return self._result(cmd, *await self._exchange(cmd, watch, sink=sink))

    async def exchange(
        self,
        cmd: str,
        watch: Watch,
        *,
        feed: Iterable[bytes] | AsyncIterator[bytes] | None = None,
        sink: Callable[[bytes], object] | None = None,
    ) -> CommandResult:
        """Run `cmd` under an existing watch (several channels of one operation share its deadline),
        feeding stdin from `feed` and passing stdout to `sink`. Raises on non-zero exit."""
        return self._result(cmd, *await self._exchange(cmd, watch, feed=feed, sink=sink))

    async def _exchange(
        self,
        cmd: str,
        watch: Watch,
        *,
        feed: Iterable[bytes] | AsyncIterator[bytes] | None = None,
        sink: Callable[[bytes], object] | None = None,
        cap: int | None = None,
    ) -> tuple[int | None, tuple[str, bool, str, str] | None, bytes, bytes]:
        """One exec channel: stdin fed, stdout and stderr drained concurrently (a full stderr would
        stall stdout), every byte touching the watch. The channel is always closed, at most
        CLOSE_GRACE_S after a stall. Returns (exit status, exit signal, stdout, stderr tail)."""
        stdin = asyncssh.PIPE if feed is not None else asyncssh.DEVNULL
        try:
            proc = await watch.guard(self.conn.create_process(cmd, encoding=None, stdin=stdin))
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from exc
        if feed is not None:
            send_full_packets(proc.channel)
        out, err = bytearray(), bytearray()

        async def read_out() -> None:
            while chunk := await proc.stdout.read(CHUNK):
                watch.touch(len(chunk))
                if sink is None:
                    if cap is not None and len(out) + len(chunk) > cap:
                        raise OutputTooLarge(
                            f"{watch.what} on {self.where}: output larger than {cap} bytes; stopped reading",
                            hint="the remote printed far more than this command can; check the machine",
                        )
                    out.extend(chunk)
                    continue
                pending = sink(chunk)
                if inspect.isawaitable(pending):  # local backpressure (disk) is not remote silence
                    await pending
                    watch.touch()

        async def read_err() -> None:
            while chunk := await proc.stderr.read(CHUNK):
                watch.touch(len(chunk))
                err.extend(chunk)
                del err[:-STDERR_KEEP]

        async def write_in() -> None:
            if feed is None:
                raise InvariantError(
                    "internal error: stdin is fed only when there is input (please report this)"
                )
            try:
                if isinstance(feed, AsyncIterator):
                    async for chunk in feed:
                        proc.stdin.write(chunk)
                        await proc.stdin.drain()
                        watch.touch(len(chunk))
                else:
                    for chunk in feed:
                        proc.stdin.write(chunk)
                        await proc.stdin.drain()
                        watch.touch(len(chunk))
                proc.stdin.write_eof()
            except BrokenPipeError:
                return  # the command stopped reading (it failed): its exit status says why

        tasks = [asyncio.create_task(read_out()), asyncio.create_task(read_err())]
        if feed is not None:
            tasks.append(asyncio.create_task(write_in()))
        stalled = False
        try:
            await watch.all(tasks)
            await watch.guard(proc.wait_closed())
        except SSHStalled:
            stalled = True
            raise
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from exc
        finally:
            for task in tasks:
                task.cancel()
            if stalled:  # ask the remote to end it (OpenSSH >= 7.9 honours signals), never wait for it
                with suppress(asyncssh.Error, OSError, ValueError):
                    proc.kill()
            proc.close()
            if not stalled:
                with suppress(TimeoutError, asyncssh.Error, OSError):
                    await asyncio.wait_for(proc.wait_closed(), CLOSE_GRACE_S)
        return proc.exit_status, proc.exit_signal, bytes(out), bytes(err)

    def _result(
        self, cmd: str, status: int | None, signal: tuple[str, bool, str, str] | None, out: bytes, err: bytes
    ) -> CommandResult:
        if status is None:
            why = (
                f"remote process ended by signal {signal[0]}"
                if signal
                else "channel closed without exit status"
            )
            raise self._lost(ConnectionError(why))
        err_text = _decode(err)
        if status != 0:
            raise RemoteCommandError(_short(cmd), status, _tail(err_text))
        return CommandResult(exit_status=status, stdout="", stderr=err_text)


def _decode(data: Any) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


@asynccontextmanager
async def connect(
    endpoint: SSHEndpoint,
    *,
    key_path: Path,
    known_hosts: Path | Store,
    resource_id: str,
    timeout: float | None = None,
    expect_new_host: bool = False,
    clock: Clock | None = None,
    limits: Limits | None = None,
) -> AsyncIterator[Remote]:
    """Open an SSH connection, retrying with backoff until the endpoint answers or `timeout` passes.

    The host key is pinned on first contact per `resource_id` and must match afterwards; pass
    `expect_new_host=True` only when the platform is known to have moved the machine (re-pins).
    `timeout` defaults to the connect limit (GPUJOB_SSH_CONNECT_TIMEOUT)."""
    limits = limits or Limits.from_env()
    conn = await open_connection(
        endpoint,
        Path(key_path),
        HostKeyPins(Path(known_hosts) if isinstance(known_hosts, str | Path) else known_hosts),
        resource_id,
        limits.connect_s if timeout is None else timeout,
        expect_new_host,
        clock or SystemClock(),
    )
    try:
        yield Remote(conn, endpoint, resource_id, limits)
    finally:
        conn.close()
        with suppress(TimeoutError, asyncssh.Error, OSError):
            await asyncio.wait_for(conn.wait_closed(), CLOSE_GRACE_S)
