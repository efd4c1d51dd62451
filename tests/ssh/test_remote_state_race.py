"""remote_state against the run's keep rotation: the file may go between any two steps of the command.
The exact shell text gpujob sends (listing.state_command) runs under sh with a `stat` or `sha256sum` that
deletes the file just before it acts, as a rotation landing at that instant would."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from gpujob.ssh.listing import state_command


def _run(cmd: str, bin_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if bin_dir is not None:
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=env, timeout=30)


def _racing(tmp_path: Path, tool: str) -> Path:
    """A stand-in for `tool` that deletes the file it is about to read and then fails as the real one
    would on a missing file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    victim = tmp_path / "ckpt" / "step_000042.json"
    script = bin_dir / tool
    script.write_text(
        f"#!/bin/sh\nrm -f '{victim}'\necho \"{tool}: cannot open: No such file\" >&2\nexit 1\n"
    )
    script.chmod(0o755)
    return bin_dir


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    d = tmp_path / "ckpt"
    d.mkdir()
    f = d / "step_000042.json"
    f.write_bytes(b'{"step": 42}')
    return f


def test_a_present_file_answers_size_and_sha256(ckpt: Path) -> None:
    r = _run(state_command(str(ckpt)))
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{ckpt.stat().st_size} {hashlib.sha256(ckpt.read_bytes()).hexdigest()}"


@pytest.mark.parametrize("tool", ["stat", "sha256sum"])
def test_a_file_rotated_away_mid_command_is_gone_not_a_failure(ckpt: Path, tmp_path: Path, tool: str) -> None:
    bin_dir = _racing(tmp_path, tool)
    if tool == "sha256sum":  # make the command choose sha256sum as its hasher (openssl is preferred)
        (bin_dir / "openssl").write_text("#!/bin/sh\nexit 1\n")
        (bin_dir / "openssl").chmod(0o755)
    r = _run(state_command(str(ckpt)), bin_dir)
    assert not ckpt.exists()  # the stand-in did run: the race happened
    assert (r.returncode, r.stdout) == (0, ""), r.stderr


def test_a_file_still_there_that_cannot_be_read_fails(ckpt: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "stat").write_text("#!/bin/sh\nexit 1\n")  # fails without the file going anywhere
    (bin_dir / "stat").chmod(0o755)
    r = _run(state_command(str(ckpt)), bin_dir)
    assert ckpt.exists() and r.returncode == 1 and "cannot read" in r.stderr
