"""What a pod is started with, whatever mode runs it (gpujob.sim.podproc): its launch request, the sshd it
runs and that sshd's config, and the stall shim that injects SSH faults."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from gpujob.faultshim import FAULT_SHIM
from gpujob.sim.gpuhost import GpuHost, path_for

MARKER = "gpujob-sim-pod"  # followed by the pod key in the command line of a pod's unshare / podinit
SBIN = ("/usr/sbin", "/usr/local/sbin", "/opt/homebrew/sbin", "/sbin")


@dataclass
class PodLaunch:
    key: str  # "<data dir>:<platform>:<resource id>", written into the control dir and the env
    ctl_dir: Path
    mounts: dict[str, Path]  # target inside the pod -> host dir
    listen: str
    port: int
    authorized_keys: list[str]
    env: dict[str, str] = field(default_factory=dict)
    new_host_key: bool = False
    # Every command through the stall shim (gpujob/sim/ssh_fault.sh), copied into the control dir:
    # transparent until <ctl>/ssh_fault names a fault (gpujob.sim.testing.Sim.stall_ssh).
    ssh_faults: bool = False
    # What the pod answers about its GPUs (nvidia-smi, the kernel log): gpujob/sim/gpuhost.py.
    gpu: GpuHost | None = None


def sshd_path() -> str | None:
    """The OpenSSH server pods run: GPUJOB_SIM_SSHD when set, else sshd on PATH or in an sbin dir."""
    override = os.environ.get("GPUJOB_SIM_SSHD")
    if override:
        return override if os.access(override, os.X_OK) else None
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(SBIN)
    return shutil.which("sshd", path=path)


def stall_shim(launch: PodLaunch, ctl: str, then: str = "") -> list[str]:
    """The sshd_config line that runs each command through the stall shim (`ctl`: the control dir as
    the sshd sees it; `then`: the program that runs the client's command, if not `$SHELL -c`)."""
    if not launch.ssh_faults:
        return [f"ForceCommand {then}"] if then else []
    shutil.copy(FAULT_SHIM, launch.ctl_dir / "ssh_fault.sh")
    return [f"ForceCommand exec /bin/sh {ctl}/ssh_fault.sh {ctl}/ssh_fault {then}".rstrip()]


def sshd_config(launch: PodLaunch, ctl: str, extra: list[str] | None = None) -> str:
    """The pod's sshd_config; `ctl` is where the control dir is seen by the sshd."""
    lines = [
        f"Port {launch.port}",
        f"ListenAddress {launch.listen}",
        f"HostKey {ctl}/host_key",
        "PidFile none",
        f"AuthorizedKeysFile {ctl}/authorized_keys",
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
    tools = (launch.ctl_dir / "bin").is_dir()  # the platform's self-stop commands (gpujob.sim.selfstop)
    if launch.gpu is not None or tools:
        path = path_for(ctl) if launch.gpu is not None else path_for(ctl).split(":", 1)[1]
        safe["PATH"] = f"{ctl}/bin:{path}" if tools else path  # the host's nvidia-smi and dmesg next
    if launch.gpu is not None:
        safe["GPUJOB_CGROUP_DIR"] = f"{ctl}/gpu/cgroup"  # the container's cgroup (gpujob.sim.gpuhost)
    if safe:
        lines.append("SetEnv " + " ".join(f"{k}={v}" for k, v in sorted(safe.items())))
    return "\n".join(lines + (extra or [])) + "\n"
