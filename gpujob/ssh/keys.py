"""The per-project SSH client key: generated locally, private half never leaves this machine."""

from __future__ import annotations

import os
from pathlib import Path

KEY_NAME = "id_ed25519"


def ensure_project_key(state_dir: Path) -> tuple[Path, str]:
    """Return (private_key_path, public_key_line), generating an ed25519 key on first use.

    Idempotent and safe against two gpujob processes racing: generation happens under a file lock
    and the private key is written to a temp file created 0600 and renamed into place, so a reader
    never sees a half-written or world-readable key.
    """
    import asyncssh
    from filelock import FileLock

    state_dir = Path(state_dir)
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(state_dir, 0o700)
    private = state_dir / KEY_NAME
    public = state_dir / f"{KEY_NAME}.pub"
    with FileLock(str(state_dir / f".{KEY_NAME}.lock")):
        if private.exists():
            # Tighten permissions left loose by a copy or an editor; ssh refuses such keys anyway.
            if private.stat().st_mode & 0o077:
                os.chmod(private, 0o600)
            key = asyncssh.read_private_key(private)
        else:
            key = asyncssh.generate_private_key("ssh-ed25519", comment=f"gpujob@{state_dir.parent.name}")
            _write_atomic(private, key.export_private_key("openssh"), 0o600)
        line = key.export_public_key("openssh").decode().strip()
        if not public.exists() or public.read_text().strip() != line:
            _write_atomic(public, (line + "\n").encode(), 0o644)
    return private, line


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
