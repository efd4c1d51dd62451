"""The simulator's faults and each one's options, without pydantic: `gpujob sim inject` builds its help
and checks its arguments from this before it reaches the simulator, which checks them again."""

from __future__ import annotations

from typing import Any

from gpujob.invariant import holds

FAULTS = (
    "preempt",
    "capacity",
    "http_error",
    "latency",
    "drop",
    "create_500_but_created",
    "low_balance",
    "auto_shutdown",
    "zero_gpu",
    "no_direct_ssh",
    "no_sshd",
    "bid_too_low",
    "spot_floor",
    "gpu_fault",
    "oom",
    "disk_fill",
    "gpu_util",
    "partition",
    "migrate",
    "clear",
)
# Consumed at a matching event later (the others act when injected).
QUEUED = {
    "capacity",
    "http_error",
    "latency",
    "drop",
    "create_500_but_created",
    "zero_gpu",
    "no_direct_ssh",
    "no_sshd",
    "bid_too_low",
    "spot_floor",
    "gpu_fault",
    "partition",
}
# Each fault's options, and what it does (the help of `gpujob sim inject` is made from this).
OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "preempt": (
        ("pod_id", "grace", "seconds", "machine_id"),
        "spot pods (or one) interrupted; a cluster member / network machine lost",
    ),
    "capacity": (
        ("count", "platform", "gpu", "region", "cloud"),
        "the next create of matching GPUs (or --count N) finds no stock; catalogs show none till then",
    ),
    "http_error": (
        ("count", "platform", "path", "method", "status", "retry_after"),
        "matching requests answer --status (default 500)",
    ),
    "latency": (("count", "platform", "path", "method", "seconds"), "matching requests wait --seconds"),
    "drop": (("count", "platform", "path", "method"), "matching requests get no answer (connection closed)"),
    "create_500_but_created": (("count", "platform"), "a create answers 500, yet the resource exists"),
    "low_balance": ((), "the account runs dry: RunPod pods stop, creates are refused"),
    "auto_shutdown": (("machine_id",), "Paperspace auto-shutdown fires (on every machine, or one)"),
    "zero_gpu": (
        ("count", "platform", "pod_id", "gpu"),
        "the next start of a pod comes back with 0 GPUs (RP1)",
    ),
    "no_direct_ssh": (
        ("count", "platform", "gpu", "cloud", "public_port"),
        "the next pods get no ssh.direct (a community host); --public-port false hides port 22",
    ),
    "no_sshd": (
        ("count", "pod_id"),
        "the next RunPod pod boots (or one pod's) start no sshd: RUNNING, SSH refused (RP10)",
    ),
    "bid_too_low": (
        ("count", "platform", "gpu"),
        "the next spot rent or bid resume is refused as under the floor",
    ),
    "spot_floor": (
        ("platform", "gpu", "factor"),
        "the minimum bid of matching GPUs is times --factor until cleared",
    ),
    "gpu_fault": (
        ("kind", "count", "platform", "gpu", "pod_id"),
        "the next N pods (default 1; or --pod-id's host) get a faulty GPU: --kind xid|throttle|busy",
    ),
    "oom": (("pod_id",), "the pod's cgroup OOM-kills its largest process (memory.events oom_kill + 1)"),
    "disk_fill": (("pod_id", "percent"), "running pods' df reports every disk --percent full (0: real)"),
    "gpu_util": (
        ("pod_id", "percent"),
        "running pods' nvidia-smi reports --percent GPU use (none: not reported)",
    ),
    "partition": (
        ("pod_id",),
        "a cluster member (or all) loses its private network; SSH still works (until cleared)",
    ),
    "migrate": (
        ("pod_id",),
        "RunPod's pod migration: stopped pod --pod-id comes back with a new id and IP, same volume",
    ),
    "clear": (("balance",), "every fault ends; the balance is refilled (or set to --balance)"),
}
holds(set(OPTIONS) == set(FAULTS), "every simulator fault has its options")


def unknown_options(kind: str, params: dict[str, Any]) -> str | None:
    """Why `params` (besides "fault") do not fit fault `kind`, naming its valid options; None when they do."""
    valid = OPTIONS[kind][0]
    extra = sorted(k for k in params if k != "fault" and k not in valid)
    if not extra:
        return None
    names = ", ".join("--" + k.replace("_", "-") for k in extra)
    takes = ", ".join("--" + k.replace("_", "-") for k in valid) or "no options"
    return f"{kind} has no option {names}; it takes {takes}"
