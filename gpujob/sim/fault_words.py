"""The active faults in words, for `gpujob sim status`: one line each, with the options given."""

from __future__ import annotations

from typing import Any

# What a fault's dump holds when nobody asked for it (gpujob.sim.faults.Fault's defaults).
_DEFAULTS = {"status": 500, "seconds": 0.0, "public_port": True, "factor": 1.0}


def fault_line(fault: dict[str, Any]) -> str:
    """`capacity --gpu RTX4090 (next 1)`: the fault, the options it was given, how many events remain."""
    opts = [
        f"--{k.replace('_', '-')} {v}"
        for k, v in fault.items()
        if k not in ("fault", "count")
        and (_DEFAULTS.get(k, object()) != v or (k, fault["fault"]) == ("status", "http_error"))
    ]
    left = "until cleared" if fault.get("count") is None else f"next {fault['count']}"
    return " ".join([str(fault["fault"]), *opts, f"({left})"])


def fault_lines(active: list[dict[str, Any]]) -> str:
    """After the `faults` label: "none", or the first fault and the others on lines of their own."""
    if not active:
        return "none"
    return ("\n" + " " * 14).join(fault_line(f) for f in active)
