"""What `logs`, `status` and `ssh` read from a pod, end to end against the simulator (real sshd pods, the
CLI as a process): a stopped pod is reported at once instead of waited for, hostile output reaches the
terminal only as visible escapes with the run's secret masked, and a 200 MB single-line log is cut on
the pod."""

from __future__ import annotations

import json
import re
import time

from tests.e2e.e2e_support import CANARY, Project, poll

HOSTILE = r"""import os, sys, time
sys.stdout.write("\x1b[2J\x1b[H" + "\x1b]52;c;cm0gLXJmIH4K\x07" + "screen cleared\n")
sys.stdout.write("bell\x07 cr\roverwritten back\x08 bidi\u202egnp.exe\n")
sys.stdout.write("\x1b[1;32mPlan: 0 to destroy\x1b[0m token=" + os.environ["E2E_CANARY_TOKEN"] + "\n")
sys.stdout.flush()
time.sleep(600)
"""

LONG = 200_000_000
BIG = f"""echo before the long line
head -c {LONG} /dev/zero | tr '\\000' x
echo
exec sleep 600
"""


def _running(p: Project, script: str, body: str) -> None:
    """The quickstart with its run replaced by `script`, applied, the run alive."""
    (p.dir / script).write_text(body)
    job = p.dir / "job.yaml"
    job.write_text(
        job.read_text().replace("command: python3 train.py", f"command: {_runner(script)} {script}")
    )
    p.gj("apply", "--auto-approve")
    poll("the run to be alive", lambda: (p.status().get("run") or {}).get("alive"))


def _logs_showing(p: Project, text: str, *args: str) -> str:
    """`gpujob logs ARGS` once its output holds `text` (the run prints it soon after it starts)."""

    def attempt() -> str:
        out = p.gj("logs", *args).stdout
        return out if text in out else ""

    return str(poll(f"the log to show {text!r}", attempt))


def _runner(script: str) -> str:
    return "python3" if script.endswith(".py") else "sh"


def test_logs_status_and_ssh_on_a_preempted_pod_say_so_at_once(project: Project) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    pod = p.live("pods")[0]["id"]
    assert p.sim.inject("preempt", pod_id=pod)["preempted"] == [pod]
    poll("the pod to be down", lambda: p.status()["machine"]["status"] == "EXITED")

    for args in (("logs", "-n", "4"), ("ssh", "--print")):
        started = time.monotonic()
        out = p.gj(*args, check=False, timeout=60)
        elapsed = time.monotonic() - started
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert elapsed < 5, (args, elapsed)
        (line,) = out.stderr.strip().splitlines()  # one line: the state, and what to run next
        assert f"pod {p.machine_name()} is EXITED, not running" in line and "`gpujob apply` starts it" in line
        assert "waiting for the SSH endpoint" not in out.stdout + out.stderr

    started = time.monotonic()
    st = p.gj("status", timeout=60)
    assert time.monotonic() - started < 5
    assert re.search(r"run: +unknown \(.*is EXITED, not running: `gpujob apply` starts it", st.stdout), (
        st.stdout
    )


def test_hostile_output_is_shown_visible_and_the_secret_masked_raw_or_not(project: Project) -> None:
    p = project
    _running(p, "hostile.py", HOSTILE)
    logs = _logs_showing(p, "to destroy", "-n", "10")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", logs), repr(logs)
    assert CANARY not in logs and "token=***" in logs
    assert "\\x1b[2J\\x1b[H\\x1b]52;c;cm0gLXJmIH4K\\x07screen cleared" in logs
    assert (
        "\\x1b[1;32mPlan: 0 to destroy\\x1b[0m" in logs
        # a redrawn line shows its last frame, and says that it hides one
        and "overwritten back\\x08 bidi\\u202egnp.exe  [1 earlier frame; --raw shows all]" in logs
    )

    raw = p.gj("logs", "-n", "10", "--raw").stdout
    assert "\x1b[2J" in raw and "\x1b]52;c;cm0gLXJmIH4K\x07" in raw and "\x1b[1;32mPlan" in raw
    assert CANARY not in raw and "token=***" in raw

    line = json.loads(p.gj("status", "--format", "json").stdout)[0]["run"]["last_log_line"]
    assert line == "\x1b[1;32mPlan: 0 to destroy\x1b[0m token=***"  # JSON: the real text, escaped by JSON
    text = p.gj("status").stdout
    assert "\x1b" not in text and CANARY not in text and "token=***" in text


def test_a_200_mb_single_line_log_is_cut_on_the_pod(project: Project) -> None:
    p = project
    _running(p, "big.sh", BIG)
    cut = f"…[cut {(LONG - 64 * 1024) / 1e6:.1f} MB]"
    logs = _logs_showing(p, cut, "-n", "4")
    assert logs.split("\n")[-3:] == ["before the long line", "x" * 64 * 1024 + cut, ""], logs[:300]
    assert len(logs) < 70_000

    st = json.loads(p.gj("status", "--format", "json").stdout)[0]
    assert st["run"]["alive"] is True and st["run"]["last_log_line"].endswith("x" + cut)
    assert cut in p.gj("status").stdout
