"""The cheap check between two full ticks: is each job's machine still up, and its run still going?

One GET of the machine (the platform's own word on a preemption or a stop), then the run status over
an SSH connection kept open between probes (no handshake each time, no API quota): a run that exited,
died, or a connection that broke wakes the loop at once, so a finished run's GPU is not billed until
the next full tick, and a loss is acted on within one probe interval. The loop also waits on those
connections between probes: a machine that goes down closes its connection, which wakes it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from gpujob.apply.sshapi import SSHApi
from gpujob.errors import GpujobError
from gpujob.live import LiveResource
from gpujob.naming import machine_kind_of

STATUS_TIMEOUT_S = 8.0


class RunProbe:
    def __init__(self, ssh: SSHApi) -> None:
        self.ssh = ssh
        self._conns: dict[str, tuple[str, Any, Any]] = {}  # job -> (machine id, context manager, remote)

    async def check(self, job: Any, provider: Any, machine_id: str) -> tuple[bool, Any, LiveResource | None]:
        """(wake: a full tick must look now, the run status read now or None, the machine read now)."""
        spec = job.loaded.spec
        kind = machine_kind_of(spec.platform, spec.machine.nodes)
        try:
            fresh = await provider.get(kind, machine_id)
        except GpujobError:
            return False, None, None  # the platform did not answer: the next full tick reads again
        if fresh is None or fresh.status != "running":
            await self.drop(job.name)
            return True, None, fresh
        status = await self._status(job, fresh, provider)
        if status is None:
            return True, None, fresh  # the connection broke: the machine is going, or its sshd is
        return not getattr(status, "alive", False), status, fresh  # an exited or dead run wakes it

    async def _status(self, job: Any, machine: LiveResource, provider: Any) -> Any:
        from gpujob.ssh.keys import KEY_NAME

        spec = job.loaded.spec
        conn = self._conns.get(job.name)
        if conn is not None and conn[0] != machine.id:
            await self.drop(job.name)
            conn = None
        try:
            if conn is None:
                endpoint = provider.ssh_endpoint(machine)
                key = job.state_dir.secret_file(KEY_NAME)
                if endpoint is None or key is None:
                    return None
                cm = self.ssh.open(
                    endpoint, key_path=key, known_hosts=job.state_dir, resource_id=machine.id,
                    timeout=STATUS_TIMEOUT_S,
                )  # fmt: skip
                remote = await asyncio.wait_for(cm.__aenter__(), STATUS_TIMEOUT_S)
                conn = (machine.id, cm, remote)
                self._conns[job.name] = conn
            return await asyncio.wait_for(self.ssh.run_status(conn[2], spec), STATUS_TIMEOUT_S)
        except (GpujobError, OSError, TimeoutError, EOFError):
            await self.drop(job.name)
            return None
        except Exception as exc:  # asyncssh's own errors: the connection is gone, whatever the class
            if type(exc).__module__.startswith("asyncssh"):
                await self.drop(job.name)
                return None
            raise

    def closed(self) -> list[Any]:
        """One awaitable per open connection, done when it closes: a preempted machine takes its sshd
        with it, so the loop can wake at that moment instead of at the next probe."""
        out = []
        for _, _, remote in self._conns.values():
            conn = getattr(remote, "conn", None)
            if conn is not None and hasattr(conn, "wait_closed"):
                out.append(conn.wait_closed())
        return out

    async def drop(self, job: str) -> None:
        conn = self._conns.pop(job, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn[1].__aexit__(None, None, None), STATUS_TIMEOUT_S)

    async def close(self) -> None:
        for job in list(self._conns):
            await self.drop(job)
