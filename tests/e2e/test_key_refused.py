"""A machine that refuses the project SSH key (its state store was swapped or lost): every command that
reaches the machine fails at once, naming the key and the store it came from, instead of retrying for
the whole connect limit and blaming sshd."""

from __future__ import annotations

import subprocess
import time

from tests.e2e.e2e_support import Project


def test_a_refused_project_key_fails_at_once_naming_the_key_and_its_store(project: Project) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    key = p.state / "id_ed25519"
    assert key.exists()
    # Another key where the machine's trusted one was: what a checkout with another (or a lost) store has.
    key.unlink()
    (p.state / "id_ed25519.pub").unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(key)], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    for command in (["status"], ["logs", "-n", "5"], ["pull"]):
        started = time.monotonic()
        res = p.gj(*command, check=False)
        elapsed = time.monotonic() - started
        out = res.stdout + res.stderr
        assert res.returncode != 0 and elapsed < 10, (command, elapsed, out)  # the connect limit is 30 s
        assert f"refused gpujob's project SSH key {key} ({fingerprint}" in out, (command, out)
        assert f"from the state store {p.state}" in out and "GPUJOB_STATE_URL" in out, (command, out)
