"""The SSH layer as the applier sees it: a few functions, injectable so unit tests use fakes.

The defaults are gpujob.ssh's (imported on first use: asyncssh is heavy). `expect_new_host` (the
platform moved a pod, so its host key legitimately changes) reaches `connect` only when it is set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpujob.live import SSHEndpoint


def _absent(name: str) -> Any:
    raise NotImplementedError(f"this SSH layer has no {name}")


@dataclass
class SSHApi:
    ensure_project_key: Callable[[Any], tuple[Path, str]]  # (a Store or a local state dir) -> key
    connect: Callable[..., Any]
    sync_tree: Callable[..., Any]
    pull_checkpoints: Callable[..., Any]
    launch_run: Callable[..., Any]
    run_status: Callable[..., Any]
    # The teardown gate's reads (fakes that never reach a gate may leave them out).
    list_checkpoints: Callable[..., Any] = field(default=lambda *a, **k: _absent("list_checkpoints"))
    quiesce_run: Callable[..., Any] = field(default=lambda *a, **k: _absent("quiesce_run"))
    recorded_checkpoint_dir: Callable[..., Any] = field(
        default=lambda *a, **k: _absent("recorded_checkpoint_dir")
    )
    push_checkpoints: Callable[..., Any] = field(default=lambda *a, **k: _absent("push_checkpoints"))
    move_checkpoints: Callable[..., Any] = field(default=lambda *a, **k: _absent("move_checkpoints"))
    # The workload quiesce (gpujob.ssh.workload) and one file's size and sha256 (gpujob.outputs).
    quiesce_workload: Callable[..., Any] = field(default=lambda *a, **k: _absent("quiesce_workload"))
    file_state: Callable[..., Any] = field(default=lambda *a, **k: _absent("file_state"))
    # The preflight's read of the GPU host (gpujob.preflight); None: no preflight (fakes without a shell).
    read_gpu_host: Callable[..., Any] | None = None
    # Bytes and inodes used on the durable mount and / (gpujob.disks.usage); None: not read (fakes).
    read_disks: Callable[..., Any] | None = None

    @classmethod
    def default(cls) -> SSHApi:
        from gpujob.plan.capability import installed
        from gpujob.ssh import carry, keys, launcher, listing, pull, session, sync, workload

        extra: dict[str, Any] = {}  # e.g. the preflight's host read, disk usage (gpujob.plan.capability)
        for cap in installed():
            extra |= cap.ssh_functions()
        return cls(
            ensure_project_key=keys.ensure_project_key,
            connect=session.connect,
            sync_tree=sync.sync_tree,
            pull_checkpoints=pull.pull_checkpoints,
            launch_run=launcher.launch_run,
            run_status=launcher.run_status,
            list_checkpoints=pull.list_remote,
            quiesce_run=launcher.quiesce_run,
            recorded_checkpoint_dir=launcher.recorded_checkpoint_dir,
            push_checkpoints=carry.push_checkpoints,
            move_checkpoints=carry.move_checkpoints,
            quiesce_workload=workload.quiesce_workload,
            file_state=listing.remote_state,
            **extra,
        )

    def open(
        self,
        endpoint: SSHEndpoint,
        *,
        key_path: Path,
        known_hosts: Any,  # a Store holding known_hosts.json, or a JSON file's path
        resource_id: str,
        expect_new_host: bool = False,
        timeout: float | None = None,
    ) -> Any:
        """`timeout` None: the SSH layer's connect limit (GPUJOB_SSH_CONNECT_TIMEOUT)."""
        kwargs: dict[str, Any] = {
            "key_path": key_path,
            "known_hosts": known_hosts,
            "resource_id": resource_id,
        }
        if timeout is not None:
            kwargs["timeout"] = timeout
        if expect_new_host:
            kwargs["expect_new_host"] = True
        return self.connect(endpoint, **kwargs)
