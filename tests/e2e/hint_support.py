"""Hints as the CLI prints them: find every command in them, run each in a fresh shell."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BIN = str(Path(sys.executable).parent)  # where this interpreter's `gpujob` entry point lives
COMMAND = re.compile(r"`(gpujob [^`]+)`")
PLACEHOLDER = re.compile(r"\.\.\.|…|\b(ID|PATH|JOB|JOBFILE|ACTION_ID)\b")


def hint_commands(text: str) -> list[str]:
    """Every gpujob command in a hint, in order: the backticked commands after `hint:` (an error's own
    line, or a failed step's "(hint: ...)") and in "Re-run `...`" lines (gpujob.errors.command_text)."""
    out: list[str] = []
    for line in text.splitlines():
        if "hint:" in line:
            part = line.split("hint:", 1)[1]
        elif line.lstrip().startswith("Re-run `"):
            part = line
        else:
            continue
        out += COMMAND.findall(part)
    return list(dict.fromkeys(out))  # a failed step's hint is printed as it fails and again in the summary


def printed_hints(proc: subprocess.CompletedProcess[str], *, at_least: int = 1) -> list[str]:
    """The hint commands of one run; a hint that only describes (or holds a placeholder) fails here."""
    text = proc.stdout + proc.stderr
    cmds = hint_commands(text)
    assert len(cmds) >= at_least, f"expected a runnable hint, got:\n{text}"
    for cmd in cmds:
        assert not PLACEHOLDER.search(cmd), f"hint command with a placeholder: {cmd!r}\n{text}"
    return cmds


def run_hint(cmd: str, cwd: Path, env: dict[str, str], *, ok: int = 0) -> subprocess.CompletedProcess[str]:
    """The hint exactly as printed, in a fresh `bash -c`, where it was printed."""
    env = {**env, "PATH": f"{BIN}:{env.get('PATH', '')}"}
    got = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert got.returncode == ok, (
        f"hint `{cmd}` exited {got.returncode} (wanted {ok}) in {cwd}:\n{got.stdout}\n{got.stderr}"
    )
    return got
