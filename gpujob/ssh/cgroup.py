"""The run's container as its cgroup sees it (U41: on a shared host `free` and `uptime` describe the
whole machine; the cgroup is yours): the memory limit, the `oom_kill` counter of memory.events, the CPU
quota (U40), and the boot id, so a run's end says what ended it (U3): "killed: out of memory (limit X)",
"machine rebooted" or "killed by a signal".

The launcher notes the counter and the boot id as the run starts (`oom_kill.start`, `boot_id`) and,
when a new run starts after one the counter says was OOM-killed, adds a line to `ooms` (consecutive
OOM-killed runs; a run that ends otherwise clears it). The status read prints them with the readings
now. `GPUJOB_CGROUP_DIR` (default /sys/fs/cgroup) is where the files are: the simulator's pods point it
at their simulated cgroup, as their PATH points at a simulated nvidia-smi."""

from __future__ import annotations

from collections.abc import Mapping

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # U40: sized to the CPU quota unless run.env sets them

# Shell functions: cgroup v2 files, v1's where v2's are missing. Each prints a number or nothing.
FUNCTIONS = r"""CG=${GPUJOB_CGROUP_DIR:-/sys/fs/cgroup}
cg_mem_max() { v=$(cat "$CG/memory.max" 2>/dev/null || cat "$CG/memory/memory.limit_in_bytes" 2>/dev/null); case "$v" in ''|max|*[!0-9]*) ;; *) echo "$v";; esac; }
cg_oom_kill() { v=$(awk '$1=="oom_kill"{print $2}' "$CG/memory.events" 2>/dev/null); [ -n "$v" ] || v=$(awk '$1=="oom_kill"{print $2}' "$CG/memory/memory.oom_control" 2>/dev/null); echo "$v"; }
cg_cpus() { set -- $(cat "$CG/cpu.max" 2>/dev/null); case "${1:-}" in ''|max|*[!0-9]*) return;; esac; [ -n "${2:-}" ] && [ "$2" -gt 0 ] && echo $(( ($1 + $2 - 1) / $2 )); }
cg_boot() { head -c 64 /proc/sys/kernel/random/boot_id 2>/dev/null | tr -cd '0-9a-f-'; }
"""


def status_lines(jobdir_var: str = "$J") -> str:
    """What the status read prints of the cgroup and the run's start readings, `key=value` lines."""
    j = jobdir_var
    return (
        FUNCTIONS
        + f"""echo "mem_max=$(cg_mem_max)"
echo "oom_kill=$(cg_oom_kill)"
echo "oom_kill_start=$(head -c 20 "{j}/oom_kill.start" 2>/dev/null | tr -cd '0-9')"
echo "ooms=$(wc -l < "{j}/ooms" 2>/dev/null | tr -cd '0-9')"
echo "boot_id=$(cg_boot)"
echo "boot_id_start=$(head -c 64 "{j}/boot_id" 2>/dev/null | tr -cd '0-9a-f-')"
"""
    )


def _int(value: str | None) -> int | None:
    value = (value or "").strip()
    return int(value) if value.isdigit() and len(value) < 20 else None


def readings(kv: Mapping[str, str]) -> dict[str, object]:
    """RunStatus fields from the status read's lines."""
    now, start = _int(kv.get("oom_kill")), _int(kv.get("oom_kill_start"))
    boot, boot_start = kv.get("boot_id") or "", kv.get("boot_id_start") or ""
    return {
        "memory_limit": _int(kv.get("mem_max")),
        "oom_kills": (now - start) if now is not None and start is not None and now >= start else None,
        "earlier_ooms": _int(kv.get("ooms")) or 0,
        "rebooted": bool(boot and boot_start and boot != boot_start),
    }


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}".replace(".0 ", " ")
        size /= 1024
    return f"{n} B"


SIGNALS = {9: "SIGKILL", 15: "SIGTERM", 2: "SIGINT", 1: "SIGHUP", 6: "SIGABRT", 11: "SIGSEGV"}
OOM = "killed: out of memory"


def ended_how(
    *,
    alive: bool,
    exit_code: int | None,
    started: bool,
    oom_kills: int | None,
    memory_limit: int | None,
    rebooted: bool,
) -> str | None:
    """What ended the run (U3), or None while it runs, when it exited on its own or nothing tells."""
    if alive or not started:
        return None
    if oom_kills:
        limit = human_bytes(memory_limit) if memory_limit else "no limit set"
        return f"{OOM} (limit {limit}; the cgroup's oom_kill counter rose by {oom_kills})"
    if rebooted and exit_code is None:
        return "machine rebooted (a new boot id since the run started; no exit code, no OOM kill)"
    if exit_code is not None and exit_code > 128:
        sig = exit_code - 128
        return f"killed by a signal ({SIGNALS.get(sig, f'signal {sig}')}, exit {exit_code}; not an OOM kill)"
    return None
