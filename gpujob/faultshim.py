"""The SSH stall shim's protocol (the script gpujob/sim/ssh_fault.sh): the sshd ForceCommand that runs
every command through it, and the fault file it reads. The simulator's pods and the local test sshd
(gpujob.ssh.testing) both stall commands through it, so neither imports the other for it."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

FAULT_SHIM = Path(__file__).resolve().parent / "sim" / "ssh_fault.sh"


def force_command(fault_file: Path | str) -> str:
    """The sshd ForceCommand that runs every command through the stall shim (gpujob/sim/ssh_fault.sh),
    transparent until `fault_file` names a fault."""
    return f"exec /bin/sh {shlex.quote(str(FAULT_SHIM))} {shlex.quote(str(fault_file))}"


def set_ssh_fault(
    fault_file: Path, mode: str | None, *, nbytes: int = 0, match: str = "", armed_by: str = ""
) -> None:
    """Stall the commands (those containing `match`; all when empty): mode "sleep" (never answer),
    "after" (output stops after `nbytes`), "trickle" (one byte of output every `nbytes` seconds) or
    "take" (input is taken up to `nbytes`, then no more).
    With `armed_by`, the stall starts only once a command containing it finished. None clears it."""
    nxt = fault_file.with_name(fault_file.name + ".next")
    if mode is None:
        fault_file.unlink(missing_ok=True)
        nxt.unlink(missing_ok=True)
        return
    if mode not in ("sleep", "after", "take", "trickle"):
        raise ValueError(f"unknown ssh fault {mode!r}: sleep, after, take or trickle")
    line = f"{mode} {int(nbytes)} {match}\n"
    if armed_by:
        _write(nxt, line)
        line = f"arm 0 {armed_by}\n"
    else:
        nxt.unlink(missing_ok=True)
    _write(fault_file, line)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
