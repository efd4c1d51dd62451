"""The parent of a plain pod's sshd: `python -I podinit.py gpujob-sim-pod KEY -- sshd ...`.

It plays the part `unshare` plays for namespace pods: its command line carries the pod marker and key
(how a restarted simulator finds pods left behind), and on Linux it is a child subreaper, so a process
the pod daemonizes (tmux's server, a nohup'd run) stays its descendant instead of moving to PID 1.
That makes "every process of the pod" a plain tree walk. It reaps its children and exits when none is
left. Standard library only."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> int:
    cmd = argv[argv.index("--") + 1 :]
    if sys.platform.startswith("linux"):
        # Where this fails, members are found by the GPUJOB_SIM_POD environment marker alone.
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    child = os.fork()
    if child == 0:
        try:
            os.execv(cmd[0], cmd)
        finally:
            os._exit(127)
    code = 0
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return code
        if pid == child:
            code = os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
