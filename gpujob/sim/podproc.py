"""A pod is a real OpenSSH sshd on loopback. There are three ways to run one; `choose()` picks the
first this machine allows and says why it passed over the others:

  root-namespaces  run as root: the sshd is PID 1 of its own mount+pid namespace (gpujob/sim/podns.py)
  user-namespaces  an ordinary user on Linux: the same inside an unprivileged user namespace
  plain            no namespaces (macOS, locked-down kernels): a local sshd process whose sessions see
                   the pod's directories through path mapping (gpujob/sim/podplain.py)

In every mode the pod's disks are the same host directories (the engine wipes and keeps them per the
survival matrix) and a pod is killed with everything it started (tmux, the training run)."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gpujob.sim.gpuhost import install
from gpujob.sim.podlaunch import MARKER, PodLaunch, sshd_path

ENV_MARKER = "GPUJOB_SIM_POD"  # in the environment of every plain pod's processes: the pod key
Mode = Literal["root-namespaces", "user-namespaces", "plain"]
MODES: tuple[Mode, ...] = ("root-namespaces", "user-namespaces", "plain")


@dataclass(frozen=True)
class PodMode:
    name: Mode
    why: str  # why this mode was chosen (what ruled out the ones before it)

    @property
    def ssh_user(self) -> str:
        """The login name a client uses: root inside namespaces; the local user for plain sshd
        processes (an sshd that is not root serves only the user it runs as)."""
        if self.name == "plain":
            return pwd.getpwuid(os.getuid()).pw_name
        return "root"

    def describe(self) -> str:
        return {
            "root-namespaces": "real sshd pods in mount+pid namespaces (root)",
            "user-namespaces": "real sshd pods in unprivileged user namespaces (no root needed)",
            "plain": "real sshd pods as plain local processes, pod paths mapped (no namespaces)",
        }[self.name]


class PodsUnavailable(Exception):
    """No pod mode can run here; the message says what is missing and how to get it."""


def _missing_tools() -> str | None:
    if sshd_path() is None:
        where = (
            f" at GPUJOB_SIM_SSHD={os.environ['GPUJOB_SIM_SSHD']}"
            if os.environ.get("GPUJOB_SIM_SSHD")
            else ""
        )
        return (
            f"sshd (the OpenSSH server) is not installed{where}: install openssh-server (`make install` does)"
        )
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not installed: install openssh-client (`make install` does)"
    return None


def choose(requested: str = "auto") -> PodMode:
    """The pod mode for `requested` (auto | namespaces | plain | one of MODES), or PodsUnavailable."""
    missing = _missing_tools()
    if missing:
        raise PodsUnavailable(missing)
    if requested == "plain":
        return PodMode("plain", "asked for plain pods")
    if requested not in ("auto", "namespaces", *MODES):
        raise PodsUnavailable(f"unknown pod mode {requested!r}: auto, namespaces or plain")
    reasons = []
    wanted = [m for m in MODES[:2] if requested in ("auto", "namespaces", m)]
    for name in wanted:
        ok, why = namespaces_work(name)
        if ok:
            return PodMode(name, why)
        reasons.append(f"{name}: {why}")
    if requested == "auto":
        return PodMode("plain", "; ".join(reasons))
    raise PodsUnavailable("cannot run namespace pods here: " + "; ".join(reasons))


@functools.lru_cache(maxsize=4)
def namespaces_work(name: Mode) -> tuple[bool, str]:
    """Whether pods of mode `name` can run here: tried for real, with the same steps a pod takes."""
    from gpujob.sim import podns

    if platform.system() != "Linux":
        return False, f"namespaces are Linux-only (this is {platform.system()})"
    if name == "root-namespaces" and os.geteuid() != 0:
        return False, "not root"
    if shutil.which("unshare") is None:
        return False, "'unshare' is not installed (util-linux)"
    return podns.probe(user_ns=name == "user-namespaces")


def namespaces_available() -> tuple[bool, str]:
    """Whether namespace pods can run here (the mode the end-to-end tests use)."""
    try:
        mode = choose("namespaces")
    except PodsUnavailable as exc:
        return False, str(exc)
    return True, mode.name


def spawn(launch: PodLaunch, mode: PodMode) -> tuple[subprocess.Popen[bytes], int | None]:
    """Start a pod. Returns the process we started and the pod's init pid (its sshd) once known."""
    from gpujob.sim import podns, podplain

    prepare_keys(launch)
    if mode.name == "plain":
        proc = podplain.spawn(launch)
    else:
        proc = podns.spawn(launch, user_ns=mode.name == "user-namespaces")
    return proc, child_pid(proc.pid)


def prepare_keys(launch: PodLaunch) -> None:
    ctl = launch.ctl_dir
    ctl.mkdir(parents=True, exist_ok=True)
    os.chmod(ctl, 0o700)
    key = ctl / "host_key"
    if launch.new_host_key or not key.exists():
        for p in (key, key.with_suffix(".pub")):
            p.unlink(missing_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, capture_output=True
        )
    (ctl / "authorized_keys").write_text("".join(k.strip() + "\n" for k in launch.authorized_keys))
    (ctl / "pod_key").write_text(launch.key)
    for src in launch.mounts.values():
        src.mkdir(parents=True, exist_ok=True)
    if launch.gpu is not None:
        install(ctl, launch.gpu)


def child_pid(parent: int, timeout: float = 5.0) -> int | None:
    """The first child of `parent` (a pod's sshd under its unshare / podinit), waiting for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except FileNotFoundError:
            if Path("/proc/self").exists():
                return None
            kids = [str(p) for p, pp in _parents().items() if pp == parent]
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


# --- finding and killing a pod's processes


def _pids() -> list[int]:
    if Path("/proc/self").exists():
        return [int(e) for e in os.listdir("/proc") if e.isdigit()]
    out = subprocess.run(["ps", "-A", "-o", "pid="], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process."""
    if not Path("/proc/self").exists():
        out = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
        pairs = [line.split() for line in out.splitlines() if line.strip()]
        return {int(a): int(b) for a, b in pairs}
    parents = {}
    for pid in _pids():
        try:
            parents[pid] = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return parents


def _argv(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return []
        out = subprocess.run(["ps", "-ww", "-o", "command=", "-p", str(pid)], capture_output=True).stdout
        return out.split()
    except OSError:
        return []


def _marked_key(argv: list[bytes]) -> str | None:
    """The pod key in the command line of a pod's first process (`unshare` or podinit.py)."""
    marker = MARKER.encode()
    if marker in argv[:-1]:
        return argv[argv.index(marker) + 1].decode(errors="replace")
    return None


def pod_key_of(pid: int) -> str | None:
    """The plain-pod key in a process's environment (None: not a plain pod's process). sshd rewrites
    its own environment area with its process title, so its processes are found as descendants."""
    needle = f"{ENV_MARKER}=".encode()
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None
        # No /proc (macOS): `ps -E` appends the environment of our own processes to the command.
        env = subprocess.run(
            ["ps", "-E", "-ww", "-o", "command=", "-p", str(pid)], capture_output=True
        ).stdout.split()
    except OSError:
        return None
    for item in env:
        if item.startswith(needle):
            return item[len(needle) :].decode(errors="replace")
    return None


def _ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _in_own_ns(pid: int) -> bool:
    ns = _ns(pid)
    return ns is not None and ns != _ns(os.getpid())


def members(pid1: int, key: str) -> list[int]:
    """Every process of the pod whose init (sshd) is `pid1`, pid1 excluded: the processes in its pid
    namespace, or (plain pods) the descendants of its podinit parent plus every process carrying the
    pod's key in its environment."""
    if _in_own_ns(pid1):
        ns = _ns(pid1)
        return [p for p in _pids() if p != pid1 and _ns(p) == ns]
    parents = _parents()
    top = parents.get(pid1)
    found: set[int] = set()
    if top is not None and _marked_key(_argv(top)) == key:
        frontier = [top]
        while frontier:
            kids = [p for p, pp in parents.items() if pp in frontier and p not in found]
            found.update(kids)
            frontier = kids
    found.update(p for p in parents if pod_key_of(p) == key)
    return sorted(found - {pid1, os.getpid(), top or -1})


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def largest(pid1: int, key: str) -> int | None:
    """The pod's process with the largest resident memory (the OOM killer's pick), its sshd and the
    sshd's sessions spared."""
    procs = [p for p in members(pid1, key) if b"sshd" not in b"".join(_argv(p)[:1])]
    return max(procs, key=_rss_kb, default=None)


def kill_one(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def is_pod_sshd(pid: int, key: str) -> bool:
    """Guard against pid reuse: a namespace pod's sshd sees our control dir with our pod key; a plain
    pod's sshd is the child of a podinit carrying our key."""
    from gpujob.sim.podns import CTL_MOUNT

    try:
        return Path(f"/proc/{pid}/root{CTL_MOUNT}/pod_key").read_text() == key
    except OSError:
        parent = _parents().get(pid)
        return parent is not None and _marked_key(_argv(parent)) == key


def kill_pod(pid1: int, key: str, grace: float = 0.0) -> None:
    """SIGTERM every process in the pod, SIGKILL what is left after `grace` seconds.
    In a namespace, SIGKILL of its init makes the kernel kill every other process in it."""
    in_ns = _in_own_ns(pid1)
    if grace > 0:
        procs = members(pid1, key)
        for pid in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while procs and time.monotonic() < deadline:
            procs = [p for p in procs if _alive(p)]
            time.sleep(0.02)
    victims = [pid1] if in_ns else [pid1, *members(pid1, key)]
    for _ in range(5):  # plain pods: a process forking while we kill is caught on the next pass
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if in_ns:
            break
        victims = [p for p in members(pid1, key) if _alive(p)]
        if not victims:
            break
    deadline = time.monotonic() + 5
    while _alive(pid1) and time.monotonic() < deadline:
        time.sleep(0.005)
    if not in_ns:
        from gpujob.sim import podplain

        podplain.cleanup(key)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        if Path("/proc/self").exists():
            return False
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


def find_strays(data_token: str) -> list[int]:
    """The first processes (`unshare`, podinit) of pods started for this data dir, by the marker and
    pod key in their command line."""
    out = []
    for pid in _pids():
        key = _marked_key(_argv(pid))
        if key is not None and key.startswith(data_token + ":"):
            out.append(pid)
    return out


def sweep(data_token: str) -> int:
    """Kill every pod process left by a simulator of this data dir (a crash, a worker racing a
    shutdown). Returns how many pods were found."""
    strays = find_strays(data_token)
    for pid in strays:
        key = _marked_key(_argv(pid)) or ""
        child = child_pid(pid, timeout=0.1)
        if child is not None:
            kill_pod(child, key)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in _pids():  # plain pods' processes whose podinit is already gone
        left = pod_key_of(pid)
        if left and left.startswith(data_token + ":") and pid != os.getpid():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return len(strays)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])
