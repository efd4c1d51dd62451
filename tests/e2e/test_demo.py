"""`make demo` as a newcomer runs it: the whole loop, or a non-zero exit with the real reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from gpujob.sim import podproc

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "quickstart" / "demo.sh"
# How Python's warnings module prints one: `path:line: SomeWarning: message`.
PY_WARNING = re.compile(r":\d+: \w*Warning: ")


def demo(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    env.update(PY=sys.executable, NO_COLOR="1", TMPDIR=str(tmp_path), **extra)
    return subprocess.run(["bash", str(DEMO)], env=env, capture_output=True, text=True, timeout=600)


def test_the_demo_shows_the_whole_loop_and_leaves_nothing_running(tmp_path: Path) -> None:
    res = demo(tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert f"# pods:       {podproc.choose().name}:" in out  # it says which pod mode it runs in
    assert "$ gpujob watch --once job.yaml" in out  # apply, status, logs and watch: each ran on the simulator
    for step in (
        "1. Validate",
        "3. Apply",
        "5. The platform preempts",
        "7. Pull",
        "9. Destroy",
        "10. The metered bill",
    ):
        assert step in out
    assert "resumed from step" in out and "all verified" in out
    assert "need explicit approval" in out  # the gate refused the unapproved destroy
    assert "The whole loop ran" in out and "simulator stopped" in out
    assert "\x1b[" not in out  # NO_COLOR: plain text
    # No Python warning reaches a newcomer's screen from any of them (a dependency's, like asyncssh's DSA
    # one, or ours).
    warned = [line for s in (res.stdout, res.stderr) for line in s.splitlines() if PY_WARNING.search(line)]
    assert warned == [], warned
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes left running: {left}"
    assert list(tmp_path.iterdir()) == []  # its work and simulator dirs are removed


def test_without_sshd_the_demo_exits_non_zero_with_the_reason(tmp_path: Path) -> None:
    res = demo(tmp_path, GPUJOB_SIM_SSHD=str(tmp_path / "no-such-sshd"))
    assert res.returncode != 0
    assert "sshd (the OpenSSH server) is not installed" in res.stderr
    assert "install openssh-server" in res.stderr
    assert "demo stopped" in res.stderr
    assert "The whole loop ran" not in res.stdout
