"""What a simulated pod answers when asked about its GPUs, like a GPU host does.

Every pod gets `nvidia-smi`, `dmesg` and `df` first on its PATH (<ctl>/gpu/bin, set by the pod's sshd), reading
files written here at boot: the GPU model and count the pod was billed for (0: `No devices were found`,
RP1), the clock-event reasons (an idle GPU shows GpuIdle; a throttled host hardware and thermal
slowdown), and a kernel log (an Xid host logs `NVRM: Xid ...`). A fault (`gpujob sim inject gpu_fault
--kind xid|throttle`) is a property of the host: it stays with the pod across restarts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpujob.sim.podisks import DF

KINDS = ("xid", "throttle", "busy")
BUSY_MIB = 18432  # what a zombie holds on a "busy" host (U11): nvidia-smi lists no process for it
# The container's cgroup (gpujob.ssh.cgroup reads it through GPUJOB_CGROUP_DIR): 32 GiB, 4 vCPUs.
MEMORY_MAX = 32 * 1024**3
CPU_MAX = "400000 100000"
DRIVER = "550.54.15"
CUDA = "12.4"
BIN = "gpu/bin"  # under the pod's control dir

# Clock-event reason bits (nvidia-smi -q -d PERFORMANCE): idle, and the two hardware slowdowns.
IDLE, HW_SLOWDOWN, HW_THERMAL = 0x1, 0x8, 0x40


@dataclass(frozen=True)
class GpuHost:
    model: str  # what nvidia-smi calls it, e.g. "NVIDIA GeForce RTX 4090"
    count: int
    fault: str | None = None  # "xid" | "throttle"

    def fields(self, index: int) -> dict[str, str]:
        throttled = self.fault == "throttle"
        active = IDLE | (HW_SLOWDOWN | HW_THERMAL if throttled else 0)
        on = "Active" if throttled else "Not Active"
        values = {
            "index": str(index),
            "name": self.model,
            "uuid": f"GPU-5e1f0c7d-0000-4000-8000-{index:012d}",
            "driver_version": DRIVER,
            "memory.total [MiB]": "24564 MiB",
            "memory.total": "24564 MiB",
            "memory.used": f"{BUSY_MIB if self.fault == 'busy' else 1} MiB",
            "memory.used [MiB]": f"{BUSY_MIB if self.fault == 'busy' else 1} MiB",
            "temperature.gpu": "91" if throttled else "34",
            "clocks_throttle_reasons.active": f"0x{active:016X}",
            "clocks_throttle_reasons.gpu_idle": "Active",
            "clocks_throttle_reasons.hw_slowdown": on,
            "clocks_throttle_reasons.hw_thermal_slowdown": on,
            "clocks_throttle_reasons.sw_thermal_slowdown": "Not Active",
            "clocks_throttle_reasons.sw_power_cap": "Not Active",
        }
        for k in list(values):  # the newer spelling of the same fields
            if k.startswith("clocks_throttle_reasons."):
                values["clocks_event_reasons." + k.split(".", 1)[1]] = values[k]
        return values

    def kernel_log(self) -> str:
        lines = [
            "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007)",
            "[    4.211034] nvidia: loading out-of-tree module taints kernel.",
            f"[    4.533112] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {DRIVER}",
        ]
        if self.fault == "xid":
            lines += [
                "[ 8121.402211] NVRM: GPU at PCI:0000:01:00: GPU-5e1f0c7d-0000-4000-8000-000000000000",
                "[ 8121.402219] NVRM: Xid (PCI:0000:01:00): 79, pid=1912, name=python3, GPU has fallen off the bus.",
            ]
        return "\n".join(lines) + "\n"


_NVIDIA_SMI = r"""#!/bin/sh
# gpujob simulator: nvidia-smi of a simulated GPU host (gpujob/sim/gpuhost.py)
d=$(dirname "$0")/..
if [ "$(cat "$d/count")" = 0 ]; then echo "No devices were found"; exit 6; fi
q=""
list=""
for a in "$@"; do
  case "$a" in --query-gpu=*) q=${a#--query-gpu=};; -L|--list-gpus) list=1;; esac
done
if [ -n "$list" ]; then
  for f in "$d"/gpu.*; do
    awk -F'\t' '{v[$1]=$2} END{print "GPU " v["index"] ": " v["name"] " (UUID: " v["uuid"] ")"}' "$f"
  done
  exit 0
fi
if [ -n "$q" ]; then
  # the utilisation `gpujob sim inject gpu_util` set, with its unit unless --format says nounits
  u=$(cat "$d/util" 2>/dev/null); case "$*" in *nounits*) ;; *) [ -n "$u" ] && u="$u %";; esac
  for f in "$d"/gpu.*; do
    awk -F'\t' -v q="$q" -v u="$u" '{v[$1]=$2} END{if(u!="")v["utilization.gpu"]=u; n=split(q,k,","); s=""; for(i=1;i<=n;i++){x=(k[i] in v)?v[k[i]]:"[N/A]"; s=s (i>1?", ":"") x}; print s}' "$f"
  done
  exit 0
fi
echo "+-----------------------------------------------------------------------------------------+"
echo "| NVIDIA-SMI $(cat "$d/driver")   Driver Version: $(cat "$d/driver")   CUDA Version: $(cat "$d/cuda")     |"
for f in "$d"/gpu.*; do
  awk -F'\t' '{v[$1]=$2} END{print "|   " v["index"] "  " v["name"] "   " v["temperature.gpu"] "C   " v["memory.total"] " |"}' "$f"
done
"""

_DMESG = r"""#!/bin/sh
# gpujob simulator: the kernel log of a simulated GPU host (gpujob/sim/gpuhost.py)
cat "$(dirname "$0")/../kmsg"
"""


def fill_disks(ctl_dir: Path, percent: float | None) -> None:
    """Make the pod's df report every disk `percent` full (None: the real figures again)."""
    marker = ctl_dir / "gpu" / "disk_fill"
    if percent is None:
        marker.unlink(missing_ok=True)
    elif marker.parent.is_dir():
        marker.write_text(f"{percent:g}")


def set_utilisation(ctl_dir: Path, percent: float | None) -> None:
    """Make the pod's nvidia-smi report its GPUs `percent` utilised (None: not reported, [N/A])."""
    marker = ctl_dir / "gpu" / "util"
    if percent is None:
        marker.unlink(missing_ok=True)
    elif marker.parent.is_dir():
        marker.write_text(f"{int(percent)}")


def oom_kill(ctl_dir: Path) -> int:
    """The kernel's OOM kill in the pod's cgroup: its memory.events oom_kill counter rises by one (the
    simulator then kills the pod's largest process). Returns the counter."""
    events = ctl_dir / "gpu" / "cgroup" / "memory.events"
    counts = dict(line.split() for line in events.read_text().splitlines() if line.strip())
    counts["oom"] = str(int(counts.get("oom", "0")) + 1)
    counts["oom_kill"] = str(int(counts.get("oom_kill", "0")) + 1)
    events.write_text("".join(f"{k} {v}\n" for k, v in counts.items()))
    return int(counts["oom_kill"])


def _cgroup(d: Path) -> None:
    cg = d / "cgroup"
    cg.mkdir(exist_ok=True)
    (cg / "memory.max").write_text(f"{MEMORY_MAX}\n")
    (cg / "cpu.max").write_text(CPU_MAX + "\n")
    if not (cg / "memory.events").exists():  # the counter outlives a restart of the container
        (cg / "memory.events").write_text("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n")


def install(ctl_dir: Path, host: GpuHost) -> None:
    """Write the host's answers and its two commands under <ctl>/gpu, and the container's cgroup."""
    d = ctl_dir / "gpu"
    (d / "bin").mkdir(parents=True, exist_ok=True)
    _cgroup(d)
    for old in d.glob("gpu.*"):
        old.unlink()
    (d / "count").write_text(str(host.count))
    (d / "driver").write_text(DRIVER)
    (d / "cuda").write_text(CUDA)
    for i in range(host.count):
        (d / f"gpu.{i}").write_text("".join(f"{k}\t{v}\n" for k, v in host.fields(i).items()))
    (d / "kmsg").write_text(host.kernel_log())
    for name, text in (("nvidia-smi", _NVIDIA_SMI), ("dmesg", _DMESG), ("df", DF)):
        p = d / "bin" / name
        p.write_text(text)
        p.chmod(0o755)


def path_for(ctl_seen: str) -> str:
    """The PATH a pod's sessions get: the host's commands first, then the usual system directories."""
    return f"{ctl_seen}/{BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
