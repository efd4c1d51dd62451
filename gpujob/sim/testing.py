"""In-process simulator for tests and the benchmark.

    from gpujob.sim.testing import running_simulator
    with running_simulator(tmp_path, speed=0) as sim:
        env = sim.env              # GPUJOB_RUNPOD_API_URL, RUNPOD_API_KEY, ... (see gpujob sim env)
        sim.inject("capacity", count=2)
        sim.advance(7200)          # simulated clock
        sim.stall_ssh(pod_id, "sleep")  # with ssh_faults=True: its SSH commands stop answering
        sim.bill()["totals"]["total"]

Options are SimOptions fields (provision_seconds, boot_seconds, speed, balance, pods, stop_grace,
preempt_grace, new_host_on_restart, rate_limit_per_minute, ...). Every pod process is killed on exit,
also when the test failed."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any

from gpujob.sim.app import SimServer
from gpujob.sim.engine import SimOptions, Simulator


class Sim:
    def __init__(self, server: SimServer) -> None:
        self.server = server
        self.engine: Simulator = server.sim
        self.env: dict[str, str] = server.endpoints.env()
        self.runpod_url = server.endpoints.runpod_url
        self.paperspace_url = server.endpoints.paperspace_url
        self.data_dir = server.sim.data_dir

    def control(self, path: str, json_body: dict[str, Any] | None = None) -> Any:
        """Call /_sim/<path> (POST with a body, GET without)."""
        url = f"{self.runpod_url}/_sim/{path.lstrip('/').removeprefix('_sim/')}"
        data = None if json_body is None else json.dumps(json_body).encode()
        req = urllib.request.Request(
            url,
            data=data,
            method="POST" if data is not None else "GET",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read() or b"null")

    def bill(self) -> dict[str, Any]:
        return dict(self.control("bill"))

    def inject(self, fault: str, **params: Any) -> dict[str, Any]:
        return dict(self.control("inject", {"fault": fault, **params}))

    def stall_ssh(
        self, resource_id: str, mode: str | None, *, nbytes: int = 0, match: str = "", armed_by: str = ""
    ) -> None:
        """Make a pod's (or machine's) SSH commands stall: "sleep" (never answer), "after" (output stops
        after `nbytes`) or "take" (input stops being read after `nbytes`), only those containing `match`
        when given, and only once a command containing `armed_by` ran, when given; None ends it.
        Needs ssh_faults=True."""
        from gpujob.sim.ps_engine import machine_dir
        from gpujob.sim.rp_engine import pod_dir
        from gpujob.ssh.testing import set_ssh_fault

        if not self.engine.options.ssh_faults:
            raise RuntimeError("start the simulator with ssh_faults=True to stall its pods' SSH commands")
        pod, machine = pod_dir(self.engine, resource_id), machine_dir(self.engine, resource_id)
        ctl = (pod if pod.exists() else machine) / "ctl"
        set_ssh_fault(ctl / "ssh_fault", mode, nbytes=nbytes, match=match, armed_by=armed_by)

    def advance(self, seconds: float) -> float:
        return float(self.control("clock/advance", {"seconds": seconds})["now"])

    def now(self) -> float:
        return self.engine.now()


@contextmanager
def running_simulator(data_dir: Path, **options: Any) -> Iterator[Sim]:
    known = {f.name for f in fields(SimOptions)}
    unknown = set(options) - known
    if unknown:
        raise TypeError(
            f"unknown simulator option(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}"
        )
    server = SimServer(Path(data_dir), SimOptions(**options))
    try:
        yield Sim(server)
    finally:
        server.close()
