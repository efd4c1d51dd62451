"""gpujob's own host-key pins: the first key a machine shows is pinned per platform resource id, and
every later connection must show the same one."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncssh

from gpujob.errors import SSHConnectError
from gpujob.live import SSHEndpoint
from gpujob.state import Store


class PinningClient(asyncssh.SSHClient):
    """Called by asyncssh only for a host key that is not already trusted (the pin)."""

    def __init__(self, accept_unknown: bool) -> None:
        self.accept_unknown = accept_unknown
        self.seen: asyncssh.SSHKey | None = None

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        self.seen = key
        return self.accept_unknown


class HostKeyPins:
    """gpujob's own known_hosts: a JSON document {resource_id: {key, fingerprint, host, port, pinned_at}},
    known_hosts.json in the project's store (or any JSON file, given its path).

    Keyed by the platform's resource id, not host:port, because cloud hosts reuse addresses."""

    NAME = "known_hosts.json"

    def __init__(self, where: Path | Store) -> None:
        from gpujob.state.local import LocalStore

        if isinstance(where, str | Path):
            self.store: Store = LocalStore(Path(where).parent)
            self.name = Path(where).name
        else:
            self.store, self.name = where, self.NAME

    @staticmethod
    def parse(data: bytes | None, where: str = "pinned host keys") -> dict[str, dict[str, Any]]:
        if data is None:
            return {}
        try:
            parsed = json.loads(data)
        except ValueError as exc:
            raise SSHConnectError(f"cannot read {where}: {exc}") from exc
        return parsed if isinstance(parsed, dict) else {}

    def load(self) -> dict[str, dict[str, Any]]:
        return self.parse(
            self.store.read(self.name), f"pinned host keys {self.name} in {self.store.location}"
        )

    def get(self, resource_id: str) -> asyncssh.SSHKey | None:
        entry = self.load().get(resource_id)
        return asyncssh.import_public_key(entry["key"]) if entry else None

    def pin(self, resource_id: str, key: asyncssh.SSHKey, endpoint: SSHEndpoint) -> None:
        entry = {
            "key": key.export_public_key("openssh").decode().strip(),
            "fingerprint": key.get_fingerprint("sha256"),
            "host": endpoint.host,
            "port": endpoint.port,
            "pinned_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }

        def change(old: bytes | None) -> bytes:
            data = self.parse(old)
            data[resource_id] = entry
            return json.dumps(data, indent=2, sort_keys=True).encode()

        self.store.update(self.name, change)
