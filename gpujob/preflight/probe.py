"""One remote command that reads the host's GPUs, kernel log and torch, and its parser."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

FIELDS = (
    "index",
    "name",
    "clocks_throttle_reasons.hw_slowdown",
    "clocks_throttle_reasons.hw_thermal_slowdown",
    "clocks_throttle_reasons.sw_thermal_slowdown",
    "ecc.errors.uncorrected.volatile.total",
    "memory.used",
    "memory.total",
)
_TORCH = (
    "import importlib.util as u\n"
    'if u.find_spec("torch") is None:\n'
    '    print("@@torch none")\n'
    "else:\n"
    "    import torch\n"
    '    print("@@torch", torch.__version__, torch.version.cuda, torch.cuda.is_available(), '
    "torch.cuda.device_count())\n"
)
SCRIPT = f"""
echo @@smi
if command -v nvidia-smi >/dev/null 2>&1; then
  out=$(nvidia-smi --query-gpu={",".join(FIELDS)} --format=csv,noheader 2>&1); rc=$?
  printf '%s\\n' "$out" | head -n 64; echo "@@smi_rc $rc"
else
  echo "@@smi_rc 127"
fi
echo @@kmsg
if k=$(dmesg 2>/dev/null) && [ -n "$k" ]; then
  printf '%s\\n' "$k" | grep -i 'NVRM: Xid' | tail -n 20; echo "@@kmsg_rc 0"
else
  echo "@@kmsg_rc 1"
fi
echo @@torch
PY=$(command -v python3 || command -v python)
if [ -n "$PY" ]; then timeout 120 "$PY" -c '{_TORCH}' 2>&1 | tail -n 3; else echo "@@torch none"; fi
"""


@dataclass
class Gpu:
    index: str
    name: str
    values: dict[str, str]

    def active(self, reason: str) -> bool:
        return self.values.get(f"clocks_throttle_reasons.{reason}", "").strip().lower() == "active"

    def memory_mib(self, which: str) -> int | None:
        """memory.used / memory.total in MiB ("18432 MiB" or a bare number), None when not reported."""
        raw = self.values.get(f"memory.{which}", "").strip().split(" ")[0]
        return int(raw) if raw.isdigit() else None

    def uncorrected_ecc(self) -> int:
        raw = self.values.get("ecc.errors.uncorrected.volatile.total", "").strip()
        return int(raw) if raw.isdigit() else 0


@dataclass
class HostReport:
    smi_rc: int  # nvidia-smi's exit status; 127: not installed
    smi_text: str  # what it printed
    gpus: list[Gpu] = field(default_factory=list)
    kernel_log: bool = False  # the kernel log could be read
    xid_lines: list[str] = field(default_factory=list)
    torch: str = "none"  # "none" | "<version> <cuda> <available> <count>" | "error: <last line>"


def parse(text: str) -> HostReport:
    """The probe's output as a report; a section that is missing reads as "could not tell"."""
    lines: dict[str, list[str]] = {"smi": [], "kmsg": [], "torch": []}
    section, rc, kmsg_ok, torch = "", 127, False, ""
    for line in text.splitlines():
        if line.startswith("@@smi_rc "):
            rc = int(line.split()[1])
        elif line.startswith("@@kmsg_rc "):
            kmsg_ok = line.split()[1] == "0"
        elif line.startswith("@@torch "):
            torch = line[len("@@torch ") :].strip()
        elif line in ("@@smi", "@@kmsg", "@@torch"):
            section = line[2:]
        elif section:
            lines[section].append(line)
    report = HostReport(
        smi_rc=rc,
        smi_text="\n".join(lines["smi"]).strip(),
        kernel_log=kmsg_ok,
        xid_lines=[ln for ln in lines["kmsg"] if "xid" in ln.lower()],
    )
    if rc == 0:
        for row in lines["smi"]:
            cells = [c.strip() for c in row.split(",")]
            # the memory fields came last and later (U11): a row without them is read as before
            if len(FIELDS) - 2 <= len(cells) <= len(FIELDS) and cells[0].isdigit():
                report.gpus.append(Gpu(cells[0], cells[1], dict(zip(FIELDS, cells, strict=False))))
    if not torch:
        last = [ln.strip() for ln in lines["torch"] if ln.strip()][-1:]
        torch = f"error: {last[0]}" if last else "none"
    report.torch = torch
    return report


def xid_codes(lines: list[str]) -> list[tuple[str, str]]:
    """(code, what the driver said) of each Xid line, e.g. ("79", "GPU has fallen off the bus.")."""
    out = []
    for line in lines:
        m = re.search(r"Xid \([^)]*\): (\d+)", line)
        if m:
            tail = line[m.end() :].split(", ")
            said = next((t.strip() for t in reversed(tail) if t and "=" not in t), "")
            out.append((m.group(1), said))
    return out


async def read_gpu_host(remote: Any) -> str:
    """Run the probe on an open connection (gpujob.ssh.session.Remote) and return its output."""
    result = await remote.run(
        SCRIPT, check=False, timeout=180.0, what="the preflight (nvidia-smi, dmesg, torch)"
    )
    return str(result.stdout)
