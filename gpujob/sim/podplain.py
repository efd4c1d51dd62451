"""Plain pods: where namespaces are unavailable (macOS, kernels that forbid unprivileged user
namespaces, containers without CAP_SYS_ADMIN), a pod is a local sshd process running as the user who
runs the simulator, on its own port, with its own host key and authorized_keys.

Without a mount namespace the pod's paths (/workspace, /root, /tmp, ...) cannot be bind mounts, so
every session runs through gpujob/sim/podshell.py (sshd's ForceCommand), which maps them onto the
pod's directories: in the command line, in HOME / TMPDIR, and in gpujob's own launcher scripts on the
pod. A program that opens `/workspace/...` by a literal path it computes itself does not see the pod's
directory; one that uses the job contract's environment (GPUJOB_CHECKPOINT_DIR, HOME, TMPDIR) does.

The sshd runs under gpujob/sim/podinit.py, which carries the pod's marker and key in its command line
and (on Linux) adopts the pod's daemonized processes, so a stop or preemption finds every one of them as
its descendants. Each session also carries GPUJOB_SIM_POD=<pod key> in its environment (tmux and the
run inherit it), which is how they are found where there is no subreaper (macOS)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gpujob.sim.podlaunch import MARKER, PodLaunch, sshd_config, sshd_path, stall_shim

SHELL_SCRIPT = Path(__file__).with_name("podshell.py")
INIT_SCRIPT = Path(__file__).with_name("podinit.py")


def tmux_dir(key: str) -> Path:
    """A short per-pod directory for tmux's socket (a socket path must stay under ~100 bytes, and the
    pod's own /tmp may be deep inside the data dir)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"gjpod-{os.getuid()}-{digest}"


def spawn(launch: PodLaunch) -> subprocess.Popen[bytes]:
    ctl = launch.ctl_dir
    config = {
        "key": launch.key,
        "mounts": {t: str(p.resolve()) for t, p in launch.mounts.items()},
        "tmux_dir": str(tmux_dir(launch.key)),
    }
    (ctl / "podshell.json").write_text(json.dumps(config, indent=1))
    force = shlex.join([sys.executable, "-I", str(SHELL_SCRIPT), str(ctl / "podshell.json")])
    (ctl / "sshd_config").write_text(
        sshd_config(launch, str(ctl), stall_shim(launch, shlex.quote(str(ctl)), force))
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # a root sshd's privilege-separation dir
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    sshd = [str(sshd_path()), "-D", "-f", str(ctl / "sshd_config"), "-E", str(ctl / "sshd.log")]
    cmd = [sys.executable, "-I", str(INIT_SCRIPT), MARKER, launch.key, "--", *sshd]
    with open(ctl / "boot.log", "wb") as log:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
            start_new_session=True,
        )


def cleanup(key: str) -> None:
    shutil.rmtree(tmux_dir(key), ignore_errors=True)
