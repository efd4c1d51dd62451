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
also when the test failed.

One simulator can serve many tests in turn (tests/e2e/conftest.py keeps one per xdist worker):
`sim.reset()` between them kills every pod and machine process and empties the account (pods, volumes,
machines, keys, faults, clock, options back to those it started with), and `sim.leftovers()` names
what a test would otherwise inherit."""

from __future__ import annotations

import copy
import json
import shutil
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any

from gpujob.sim.app import SimServer
from gpujob.sim.clock import SimClock
from gpujob.sim.engine import SimOptions, Simulator
from gpujob.sim.state import SimState


class Sim:
    def __init__(self, server: SimServer) -> None:
        self.server = server
        self.engine: Simulator = server.sim
        self.env: dict[str, str] = server.endpoints.env()
        self.runpod_url = server.endpoints.runpod_url
        self.paperspace_url = server.endpoints.paperspace_url
        self.data_dir = server.sim.data_dir
        self._started_with = copy.deepcopy(server.sim.options)

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
        from gpujob.faultshim import set_ssh_fault
        from gpujob.sim.ps_engine import machine_dir
        from gpujob.sim.rp_engine import pod_dir

        if not self.engine.options.ssh_faults:
            raise RuntimeError("start the simulator with ssh_faults=True to stall its pods' SSH commands")
        pod, machine = pod_dir(self.engine, resource_id), machine_dir(self.engine, resource_id)
        ctl = (pod if pod.exists() else machine) / "ctl"
        set_ssh_fault(ctl / "ssh_fault", mode, nbytes=nbytes, match=match, armed_by=armed_by)

    def advance(self, seconds: float) -> float:
        return float(self.control("clock/advance", {"seconds": seconds})["now"])

    def now(self) -> float:
        return self.engine.now()

    def leftovers(self) -> list[str]:
        """What a previous test left in this simulator: every resource in its account, every fault
        still armed, every pod or machine process still running (empty after reset())."""
        eng = self.engine
        with eng.lock:
            state = eng.state.model_dump()
            held = [
                f"{kind} {rid}" for kind, value in state.items() if isinstance(value, dict) for rid in value
            ]
            held += [f"ssh key {k[:24]}" for k in eng.state.ssh_keys]
            held += [f"fault {f['fault']}" for f in eng.faults.active()]
            held += [f"process {key}" for key in eng.procs]
        return held

    def reset(self) -> None:
        """An empty account on a fresh clock, as if this simulator had just started: background boots
        finish, every pod and machine process is killed, resources, faults and disks are dropped, and
        the options are those it started with."""
        from gpujob.sim import podproc

        eng = self.engine
        for t in list(eng._threads):
            t.join(timeout=10)
        with eng.lock:
            procs = [("runpod", p.id, p.sshd_pid) for p in eng.state.pods.values() if p.sshd_pid]
            procs += [("paperspace", m.id, m.sshd_pid) for m in eng.state.machines.values() if m.sshd_pid]
        for platform, rid, pid in procs:
            eng.kill(platform, rid, pid)
        for key, proc in list(eng.procs.items()):
            proc.kill()
            proc.wait()
            eng.procs.pop(key, None)
        podproc.sweep(str(eng.data_dir))
        with eng.lock:
            for f in fields(SimOptions):
                setattr(eng.options, f.name, copy.deepcopy(getattr(self._started_with, f.name)))
            eng.clock = SimClock(None, speed=eng.options.speed)
            eng.state = SimState()
            eng.faults.clear()
            eng.graphql_calls = 0
            for platform in ("runpod", "paperspace"):
                shutil.rmtree(eng.data_dir / platform, ignore_errors=True)
            eng.save()


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
