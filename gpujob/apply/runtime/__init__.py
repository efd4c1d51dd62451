"""The run over SSH, as the steps and the read commands use it: reach the machine (remote), start the
run (launch), pull its checkpoints (pulling), report transfers (transfer). Below the steps and above
the gate's pure checks; it never sees a JobContext."""

from gpujob.apply.localfiles import local_sha256
from gpujob.apply.runtime.launch import LAUNCH_ATTEMPTS, RunEnded, collect_secrets, launch, sync_patterns
from gpujob.apply.runtime.pulling import MAX_LANES, pull, pull_dir, pull_over
from gpujob.apply.runtime.remote import (
    ATTEMPT_S,
    ENDPOINT_WAIT_S,
    ENV_ENDPOINT_WAIT,
    ENV_POLL,
    NOT_COMING,
    POLL_S,
    MachineNotRunning,
    Target,
    Unreachable,
    connect_wait_s,
    endpoint_wait_s,
    open_remote,
    poll_s,
    read_status_once,
    wait_for_endpoint,
)
from gpujob.apply.runtime.transfer import LARGE_TRANSFER, transfer_progress, transfer_reporting

__all__ = [
    "ATTEMPT_S",
    "ENDPOINT_WAIT_S",
    "ENV_ENDPOINT_WAIT",
    "ENV_POLL",
    "LARGE_TRANSFER",
    "LAUNCH_ATTEMPTS",
    "MAX_LANES",
    "NOT_COMING",
    "POLL_S",
    "MachineNotRunning",
    "RunEnded",
    "Target",
    "Unreachable",
    "collect_secrets",
    "connect_wait_s",
    "endpoint_wait_s",
    "launch",
    "local_sha256",
    "open_remote",
    "poll_s",
    "pull",
    "pull_dir",
    "pull_over",
    "read_status_once",
    "sync_patterns",
    "transfer_progress",
    "transfer_reporting",
    "wait_for_endpoint",
]
