"""The login shell of a plain pod (its sshd's ForceCommand): runs each SSH command with the pod's paths
mapped onto the pod's directories. Standard library only, run as `python -I podshell.py CONFIG`.

What is mapped (a path is a mount target such as /workspace, /root or /tmp, or anything below it):
  - the command line sshd received (SSH_ORIGINAL_COMMAND);
  - HOME (the pod's /root), TMPDIR (the pod's /tmp) and the working directory (HOME);
  - a shell script under a `.gpujob/` directory that the command runs (`bash FILE ...`): gpujob's own
    launcher, whose lines name the job's directories; it is rewritten once, in place, and marked.
Paths already inside a pod directory are left alone, so mapping twice changes nothing."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import sys
from pathlib import Path

MARK = "# gpujob-sim: pod paths mapped\n"


class PathMap:
    def __init__(self, mounts: dict[str, str]) -> None:
        self.mounts = mounts
        self.dirs = sorted(mounts.values(), key=len, reverse=True)
        targets = sorted(mounts, key=len, reverse=True)
        alt = "|".join(re.escape(t) for t in targets)
        # A target counts at a path boundary: not preceded by a path character, followed by / or an end.
        self.pattern = re.compile(rf"(?<![\w.~/-])({alt})(?=/|$|[^\w.-])")

    def __call__(self, text: str) -> str:
        def sub(m: re.Match[str]) -> str:
            if any(text.startswith(d, m.start()) for d in self.dirs):
                return m.group(0)  # already a pod directory (e.g. /tmp/... of the data dir)
            return self.mounts[m.group(1)]

        return self.pattern.sub(sub, text)

    def inside(self, path: str) -> bool:
        return any(path == d or path.startswith(d + "/") for d in self.dirs)


def map_launchers(command: str, mapped: PathMap) -> None:
    try:
        words = shlex.split(command)
    except ValueError:
        return
    for interp, path in itertools.pairwise(words):
        if os.path.basename(interp) not in ("bash", "sh") or "/.gpujob/" not in path:
            continue
        if not mapped.inside(path) or not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
            continue
        text = Path(path).read_text(errors="replace")
        if not text.startswith("#!") or MARK in text:
            continue
        first, _, rest = text.partition("\n")
        tmp = f"{path}.podshell-tmp"
        Path(tmp).write_text(f"{first}\n{MARK}{mapped(rest)}")
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)


def main(config_path: str) -> int:
    cfg = json.loads(Path(config_path).read_text())
    mapped = PathMap(cfg["mounts"])
    env = dict(os.environ)
    home = cfg["mounts"].get("/root") or env.get("HOME", "/")
    env["HOME"] = home
    if "/tmp" in cfg["mounts"]:
        env["TMPDIR"] = cfg["mounts"]["/tmp"]
    os.makedirs(cfg["tmux_dir"], mode=0o700, exist_ok=True)
    env["TMUX_TMPDIR"] = cfg["tmux_dir"]
    env["GPUJOB_SIM_POD"] = cfg["key"]
    env.pop("OLDPWD", None)
    env["PWD"] = home
    os.chdir(home)
    shell = env.get("SHELL") or "/bin/sh"
    command = env.pop("SSH_ORIGINAL_COMMAND", None)
    if command is None:  # an interactive login
        os.execve(shell, ["-" + os.path.basename(shell)], env)
    command = mapped(command)
    map_launchers(command, mapped)
    os.execve(shell, [shell, "-c", command], env)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
