"""Dialling a machine: one asyncssh connection with gpujob's key, ciphers and window, retried with
backoff on the injected clock until the endpoint answers, the host key checked against its pin, and a
refused project key named with the store it came from."""

from __future__ import annotations

from pathlib import Path

import asyncssh

from gpujob.clock import Clock
from gpujob.errors import SSHConnectError, SSHKeyRefused
from gpujob.live import SSHEndpoint
from gpujob.ssh.hostkeys import HostKeyPins, PinningClient

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


def key_origin(key_path: Path) -> str:
    """The state store a project key file came from: a database store leaves an `.origin` note beside
    the decrypted copy; a local store's key lives in the store's own directory."""
    try:
        return key_path.with_name(f"{key_path.name}.origin").read_text().strip()
    except OSError:
        return str(key_path.parent)


def key_refused(where: str, key_path: Path, key: asyncssh.SSHKey) -> SSHKeyRefused:
    return SSHKeyRefused(
        f"{where} refused gpujob's project SSH key {key_path} ({key.get_fingerprint('sha256')}, from the "
        f"state store {key_origin(key_path)}): the machine trusts another key",
        hint="it was set up from another state store: run gpujob with that one (your team's database in "
        "GPUJOB_STATE_URL, or the checkout whose .gpujob/ made the machine)",
    )


async def open_connection(
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
        from gpujob.state.scratch import held

        data = held(key_path)  # a remote store's key never touches a disk on its way to asyncssh
        client_key = (
            asyncssh.import_private_key(data) if data is not None else asyncssh.read_private_key(key_path)
        )
    except (OSError, asyncssh.KeyImportError) as exc:
        raise SSHConnectError(f"cannot read SSH key {key_path}: {exc}") from exc
    pinned = pins.get(resource_id)
    started = clock.now()

    def elapsed() -> float:
        return (clock.now() - started).total_seconds()

    delay, last = 0.1, "no attempt made"
    while True:
        client = PinningClient(accept_unknown=pinned is None or expect_new)
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
            if isinstance(exc, asyncssh.PermissionDenied) and not expect_new:
                # A machine already running with its key in place refused it: the same key again cannot
                # help. (One just created or started may not have installed the key yet: retried.)
                raise key_refused(where, key_path, client_key) from None
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
