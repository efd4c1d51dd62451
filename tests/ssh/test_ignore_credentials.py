"""A sync never ships keys or cloud credentials that sit in the project tree (catalogue A17)."""

from __future__ import annotations

from pathlib import Path

from gpujob.ssh.ignore import walk


def test_keys_and_credentials_are_never_synced(tmp_path: Path) -> None:
    for rel in (
        "train.py",
        "pkg/model.py",
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".netrc",
        "certs/server.pem",
        "deploy/id_rsa",
        "id_ed25519",
        ".env",
        ".gpujob/id_ed25519",
    ):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    sent = sorted(e.rel for e in walk(tmp_path, []))
    assert sent == ["pkg/model.py", "train.py"]
