"""A pod is a real OpenSSH sshd on loopback, running as PID 1 of its own mount+pid namespace.

Inside the namespace the pod's directories are bind-mounted over /workspace, /root, /tmp (and any
custom mount path), so sessions see the pod's disks while the host's paths stay untouched. Killing the
namespace's PID 1 makes the kernel kill every process in the pod (tmux, the training run).

Mount trick: the data dir may itself live under /tmp or /root (pytest's tmp_path, the default state
dir), which the pod mounts hide. So every source is first bound onto a staging dir under the pod's
control dir (itself bound at /run/gpujob-pod), and only then onto its target."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
CTL_MOUNT = "/run/gpujob-pod"
MARKER = "gpujob-sim-pod"


def namespaces_available() -> tuple[bool, str]:
    """Whether pods can run here: root, unshare, sshd, and a mount+pid namespace that really works."""
    if os.geteuid() != 0:
        return (
            False,
            "the simulator's pods need root (mount and pid namespaces); run as root or in a root container",
        )
    for tool in ("unshare", "ssh-keygen"):
        if shutil.which(tool) is None:
            return False, f"'{tool}' is not installed (util-linux / openssh-client)"
    if not Path(SSHD).exists():
        return False, f"{SSHD} is missing: install openssh-server"
    try:
        probe = subprocess.run(
            [
                "unshare",
                "--mount",
                "--pid",
                "--fork",
                "--mount-proc",
                "sh",
                "-c",
                "mount --make-rprivate / && echo $$",
            ],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"unshare failed: {exc}"
    if probe.returncode != 0 or probe.stdout.strip() != "1":
        return (
            False,
            f"cannot create mount+pid namespaces here: {probe.stderr.strip() or probe.stdout.strip()}",
        )
    return True, "ok"


@dataclass
class PodLaunch:
    key: str  # "<platform>:<resource id>", written into the control dir and the command line
    ctl_dir: Path
    mounts: dict[str, Path]  # target inside the pod -> host dir
    listen: str
    port: int
    authorized_keys: list[str]
    env: dict[str, str] = field(default_factory=dict)
    new_host_key: bool = False


def _sshd_config(launch: PodLaunch) -> str:
    lines = [
        f"Port {launch.port}",
        f"ListenAddress {launch.listen}",
        f"HostKey {CTL_MOUNT}/host_key",
        "PidFile none",
        f"AuthorizedKeysFile {CTL_MOUNT}/authorized_keys",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        "PrintMotd no",
        "MaxStartups 100:30:200",
        "MaxSessions 50",
        "Subsystem sftp internal-sftp",
    ]
    safe = {
        k: v
        for k, v in launch.env.items()
        if k.isidentifier() and v and all(c.isalnum() or c in "._-/:@+=," for c in v)
    }
    if safe:
        lines.append("SetEnv " + " ".join(f"{k}={v}" for k, v in sorted(safe.items())))
    return "\n".join(lines) + "\n"


def prepare(launch: PodLaunch) -> None:
    ctl = launch.ctl_dir
    (ctl / "mnt").mkdir(parents=True, exist_ok=True)
    os.chmod(ctl, 0o700)
    key = ctl / "host_key"
    if launch.new_host_key or not key.exists():
        for p in (key, key.with_suffix(".pub")):
            p.unlink(missing_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, capture_output=True
        )
    (ctl / "authorized_keys").write_text("".join(k.strip() + "\n" for k in launch.authorized_keys))
    (ctl / "sshd_config").write_text(_sshd_config(launch))
    (ctl / "pod_key").write_text(launch.key)
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    Path(CTL_MOUNT).mkdir(parents=True, exist_ok=True)
    for i, (target, src) in enumerate(launch.mounts.items()):
        src.mkdir(parents=True, exist_ok=True)
        Path(target).mkdir(parents=True, exist_ok=True)
        (ctl / "mnt" / str(i)).mkdir(exist_ok=True)


def spawn(launch: PodLaunch) -> subprocess.Popen[bytes]:
    """Start the pod's namespace + sshd. Returns the `unshare` process; the sshd is its only child."""
    prepare(launch)
    q = shlex.quote
    script = ["set -e", "mount --make-rprivate /", f"mount --bind {q(str(launch.ctl_dir))} {CTL_MOUNT}"]
    for i, src in enumerate(launch.mounts.values()):
        script.append(f"mount --bind {q(str(src))} {CTL_MOUNT}/mnt/{i}")
    for i, target in enumerate(launch.mounts):
        script.append(f"mount --bind {CTL_MOUNT}/mnt/{i} {q(target)}")
    script.append(f"exec {SSHD} -D -f {CTL_MOUNT}/sshd_config -E {CTL_MOUNT}/sshd.log")
    cmd = [
        "unshare",
        "--mount",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
        "sh",
        "-c",
        "\n".join(script),
        MARKER,
        launch.key,
    ]
    return subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def child_pid(parent: int, timeout: float = 5.0) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            return None
        if kids:
            return int(kids[0])
        time.sleep(0.005)
    return None


def wait_ready(host: str, port: int, proc: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> bool:
    """True once sshd answers with its SSH banner (what RUNNING means in the simulator)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=1.0) as s:
                if s.recv(8).startswith(b"SSH-"):
                    return True
        except OSError:
            pass
        time.sleep(0.01)
    return False


def _ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def members(pid1: int) -> list[int]:
    """Every process in the pid namespace whose init is `pid1` (host pids), pid1 excluded."""
    ns = _ns(pid1)
    if ns is None or ns == _ns(os.getpid()):
        return []
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != pid1 and _ns(int(entry)) == ns:
            out.append(int(entry))
    return out


def is_pod_sshd(pid: int, key: str) -> bool:
    """Guard against pid reuse: the process must see our control dir with our pod key."""
    try:
        return Path(f"/proc/{pid}/root{CTL_MOUNT}/pod_key").read_text() == key
    except OSError:
        return False


def kill_pod(pid1: int, grace: float = 0.0) -> None:
    """SIGTERM every process in the pod, SIGKILL the namespace's init after `grace` seconds."""
    if grace > 0:
        procs = members(pid1)
        for pid in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while procs and time.monotonic() < deadline:
            procs = [p for p in procs if Path(f"/proc/{p}").exists() and _state(p) != "Z"]
            time.sleep(0.02)
    try:
        os.kill(pid1, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid1}").exists() and _state(pid1) != "Z" and time.monotonic() < deadline:
        time.sleep(0.005)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def find_strays(data_token: str) -> list[int]:
    """unshare processes started for pods of this data dir (by their command line marker)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"unshare")
            and MARKER.encode() in argv
            and any(data_token.encode() in a for a in argv)
        ):
            out.append(int(entry))
    return out


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
