"""scripts/system-deps.sh, the one list of system packages behind `make install` and .ci/run: what it
says and does when something is missing, as root and as an ordinary user, with and without a terminal.
The package manager and sudo are stand-ins on PATH that record their arguments and "install" by
taking the requirement off the pretend-missing list; everything else is the real script."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.readable import readable_copy

APT = """#!/bin/sh
echo "apt-get $*" >> "$LOG"
case "$*" in *install*) for p in "$@"; do
  case "$p" in openssh-server) sed -i '/^sshd$/d' "$MISSING" ;; tmux) sed -i '/^tmux$/d' "$MISSING" ;; esac
done ;; esac
"""
SUDO = """#!/bin/sh
echo "sudo $*" >> "$LOG"
[ "$1" = -n ] && exit 0
exec "$@"
"""


@pytest.fixture
def fakes() -> Iterator[dict[str, str]]:
    tmp_path = Path(tempfile.mkdtemp(prefix="gpujob-deps-"))  # pytest's tmp dirs are private to root
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("apt-get", APT), ("sudo", SUDO)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    missing = tmp_path / "missing"
    missing.write_text("sshd\ntmux\n")
    log = tmp_path / "log"
    log.touch()
    for p in (tmp_path, bin_dir, missing, log):
        p.chmod(0o777 if p.is_dir() or p in (missing, log) else 0o755)
    # The script runs from a copy: uid 65534 cannot read a checkout inside a private (0700) directory.
    scripts = readable_copy("scripts/system-deps.sh")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    env.update(
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        GPUJOB_DEPS_PRETEND_MISSING=str(missing),
        LOG=str(log),
        MISSING=str(missing),
        SCRIPT=str(scripts / "scripts" / "system-deps.sh"),
    )
    yield env
    shutil.rmtree(tmp_path)
    shutil.rmtree(scripts)


def run(env: dict[str, str], *args: str, user: bool = False) -> subprocess.CompletedProcess[str]:
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] if user else []
    return subprocess.run(
        [*prefix, "bash", env["SCRIPT"], *args],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def test_check_names_the_missing_packages_and_the_one_command(fakes: dict[str, str]) -> None:
    res = run(fakes, "check")
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "missing system packages: openssh-server tmux" in lines[0]
    assert "apt-get install -y -qq --no-install-recommends openssh-server tmux" in lines[0]
    assert Path(fakes["LOG"]).read_text() == ""  # check installs nothing


def test_root_without_a_terminal_installs_and_rechecks(fakes: dict[str, str]) -> None:
    if os.geteuid() != 0:
        pytest.skip("the root path needs root")
    res = run(fakes, "install")
    assert res.returncode == 0, res.stderr
    calls = Path(fakes["LOG"]).read_text().splitlines()
    assert calls[0] == "apt-get update -qq"
    assert calls[1].endswith("install -y -qq --no-install-recommends openssh-server tmux")
    assert not any(c.startswith("sudo") for c in calls)  # root needs no sudo
    assert "systemctl disable --now ssh" in res.stdout  # the side effect of openssh-server is named
    assert run(fakes, "check").returncode == 0


def test_a_user_without_a_terminal_gets_one_line_and_nothing_runs(fakes: dict[str, str]) -> None:
    res = run(fakes, "install", user=os.geteuid() == 0)
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1
    assert "sudo apt-get update -qq && sudo env DEBIAN_FRONTEND=noninteractive apt-get install" in res.stderr
    assert Path(fakes["LOG"]).read_text() == ""


def test_a_user_on_a_terminal_is_asked_first_then_sudo_installs(fakes: dict[str, str]) -> None:
    out, code = on_terminal(fakes, answer="y\n")
    assert code == 0, out
    assert "Run: sudo apt-get" in out and "[Y/n]" in out
    calls = Path(fakes["LOG"]).read_text().splitlines()
    assert calls[0] == "sudo apt-get update -qq" and "apt-get install" in calls[-1]


def test_a_user_who_says_no_gets_nothing_installed(fakes: dict[str, str]) -> None:
    out, code = on_terminal(fakes, answer="n\n")
    assert code == 1 and "not installed" in out
    assert Path(fakes["LOG"]).read_text() == ""


def on_terminal(env: dict[str, str], answer: str) -> tuple[str, int]:
    """Run `install` as an ordinary user with a pseudo-terminal, answering the question."""
    prefix = (
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] if os.geteuid() == 0 else []
    )
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(prefix[0] if prefix else "bash", [*prefix, "bash", env["SCRIPT"], "install"], env)
    out = b""
    answered = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
        if not answered and b"[Y/n]" in out:
            os.write(fd, answer.encode())
            answered = True
    _, status = os.waitpid(pid, 0)
    return out.decode(errors="replace"), os.waitstatus_to_exitcode(status)
