"""The simulator core: state, clock, meters, faults and pod processes, shared by both platforms.

Concurrency: one re-entrant lock guards the state. Slow work (booting an sshd, killing a pod) runs
outside the lock in worker threads; every transition bumps the resource's `gen`, so a worker whose
resource changed under it (a stop during provisioning) gives up and cleans after itself.

Restart policy: a simulator that restarts over an existing data dir brings every pod / machine that
was up back *stopped* (RunPod EXITED, Paperspace off): the container disk is wiped, volumes kept."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpujob.sim import meters, podproc
from gpujob.sim.clock import SimClock
from gpujob.sim.faults import FaultBook
from gpujob.sim.prices import Prices
from gpujob.sim.state import Metered, SimState, load_state, save_state


@dataclass
class SimOptions:
    provision_seconds: float = 0.05  # RunPod PROVISIONING / Paperspace provisioning, real seconds
    boot_seconds: float = 0.02  # STARTING before sshd is launched
    stop_grace: float = 0.0  # SIGTERM -> SIGKILL on a user stop
    preempt_grace: float | None = None  # None: the profile's spot grace
    speed: float = 1.0  # simulated seconds per real second
    balance: float = 1_000_000.0  # USD; creates get 402 and pods auto-stop once the bill reaches it
    pods: bool = True  # run real sshd pods; False: lifecycle only, no SSH
    pod_mode: str = "auto"  # auto | namespaces | plain | a podproc.MODES name (see gpujob/sim/podproc.py)
    ssh_faults: bool = False  # pods run each SSH command through the stall shim (Sim.stall_ssh)
    new_host_on_restart: bool = True  # a restart lands on a new host: new port and new host key
    rate_limit_per_minute: int = 6000
    runpod_api_key: str = "sim-runpod-key"
    paperspace_api_key: str = "sim-paperspace-key"
    paperspace_ssh_port: int = 0  # 0: pick a free port
    tick_seconds: float = 0.05
    host_cuda: str = "12.8"  # the CUDA every simulated RunPod host reports (pod.cudaVersion)
    runpod_graphql: str = "live"  # live | limited | gone: RunPod's GraphQL calendar (sim/runpod_graphql.py)
    runpod_spot: str = "offered"  # offered | withdrawn: GraphQL answers but offers no spot (2026-05-06 on)
    extra: dict[str, Any] = field(default_factory=dict)


class SimError(Exception):
    """An API-level failure; each API layer renders it in its platform's error format."""

    def __init__(self, status: int, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


Ticker = Callable[["Simulator", bool], None]
Stopper = Callable[["Simulator", str], object]


class Simulator:
    def __init__(
        self,
        data_dir: Path,
        options: SimOptions | None = None,
        on_tick: Sequence[Ticker] = (),
        stoppers: Mapping[str, Stopper] | None = None,
    ) -> None:
        # The platforms' engines plug in here (gpujob.sim.app hands them in, so this core imports
        # neither): what each does on every tick, called in order with whether the account's balance is
        # exhausted; and how a machine of a platform is stopped when it stops itself (gpujob.sim.selfstop).
        self.on_tick = tuple(on_tick)
        self.stoppers = dict(stoppers or {})
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.options = options or SimOptions()
        self.state_path = self.data_dir / "state.json"
        self.lock = threading.RLock()
        self.state: SimState = load_state(self.state_path)
        self.clock = SimClock(self.state.clock or None, speed=self.options.speed)
        self.faults = FaultBook()
        self.rp_prices = Prices("runpod")
        self.ps_prices = Prices("paperspace")
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.graphql_calls = 0  # counts GraphQL requests: `limited` refuses every third
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.ps_ssh_port = self.options.paperspace_ssh_port or podproc.free_port()
        # Machines stop themselves through /_sim/self-stop (gpujob.sim.selfstop): the URL is set once the
        # HTTP servers listen, the secret behind each machine's token lives as long as this process.
        self.control_url = ""
        self.self_stop_secret = secrets.token_hex(16)
        # Raises PodsUnavailable (what to install) when no pod can run here.
        self.pod_mode = podproc.choose(self.options.pod_mode) if self.options.pods else None
        self._recover()
        self._ticker = threading.Thread(target=self._tick_loop, name="sim-ticker", daemon=True)
        self._ticker.start()

    # --- persistence and time
    def now(self) -> float:
        return self.clock.now()

    def save(self) -> None:
        with self.lock:
            self.state.clock = self.now()
            save_state(self.state_path, self.state)

    def accrue(self, res: Metered) -> None:
        meters.accrue(res, self.now(), self.rp_prices, self.ps_prices)

    def bill(self) -> dict[str, Any]:
        with self.lock:
            return meters.bill(self.state, self.now(), self.rp_prices, self.ps_prices)

    def advance(self, seconds: float) -> float:
        with self.lock:
            for _, _, res in meters.all_resources(self.state):
                self.accrue(res)  # bill the elapsed real time at the old rates first
            now = self.clock.advance(seconds)
        self.tick()
        self.save()
        return now

    # --- background work
    def spawn(self, target: Any, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def _tick_loop(self) -> None:
        while not self._stop.wait(self.options.tick_seconds):
            with contextlib.suppress(Exception):  # the ticker must survive a bad resource
                self.tick()

    def tick(self) -> None:
        with self.lock:
            spent = self.bill()["totals"]["total"]
            if spent >= self.options.balance and not self.state.balance_exhausted:
                self.state.balance_exhausted = True
            exhausted = self.state.balance_exhausted
        for hook in self.on_tick:
            hook(self, exhausted)

    # --- pod processes
    @property
    def ssh_user(self) -> str:
        """The login name pods accept (root, or the local user for plain pods)."""
        return self.pod_mode.ssh_user if self.pod_mode else "root"

    def pod_key(self, platform: str, rid: str) -> str:
        return f"{self.data_dir}:{platform}:{rid}"

    def launch(self, platform: str, rid: str, launch: podproc.PodLaunch, ready_host: str) -> int | None:
        """Start an sshd pod; returns its host pid once it accepts connections, None on failure."""
        if self.pod_mode is None:
            return None
        proc, pid = podproc.spawn(launch, self.pod_mode)
        if pid is None or not podproc.wait_ready(ready_host, launch.port, proc):
            if pid is not None:
                podproc.kill_pod(pid, launch.key)
            proc.kill()
            proc.wait()
            return None
        self.procs[self.pod_key(platform, rid)] = proc
        return pid

    def kill(self, platform: str, rid: str, pid: int | None, grace: float = 0.0) -> None:
        key = self.pod_key(platform, rid)
        if pid is not None and podproc.is_pod_sshd(pid, key):
            podproc.kill_pod(pid, key, grace)
        proc = self.procs.pop(key, None)
        if proc is not None:
            proc.kill()
            proc.wait()

    def _recover(self) -> None:
        """Kill pods left by a previous run and bring their resources back stopped."""
        podproc.sweep(str(self.data_dir))
        now = self.now()
        for pod in self.state.pods.values():
            if pod.ended_at is None and pod.status in ("PROVISIONING", "STARTING", "RUNNING"):
                meters.accrue(pod, now, self.rp_prices, self.ps_prices)
                pod.status, pod.ssh_port, pod.sshd_pid, pod.gen = "EXITED", None, None, pod.gen + 1
                wipe(self.data_dir / "runpod" / "pods" / pod.id / "container")
        for m in self.state.machines.values():
            if m.ended_at is None and m.state != "off":
                meters.accrue(m, now, self.rp_prices, self.ps_prices)
                m.state, m.sshd_pid, m.gen = "off", None, m.gen + 1
                if m.public_ip_type == "dynamic":
                    m.public_ip = None
                wipe(self.data_dir / "paperspace" / "machines" / m.id / "tmp")
        self.save()

    def shutdown(self) -> None:
        """Stop the ticker and kill every pod process; the state keeps the resources."""
        self._stop.set()
        self._ticker.join(timeout=2)
        with self.lock:
            pods = [("runpod", p.id, p.sshd_pid) for p in self.state.pods.values() if p.sshd_pid]
            pods += [("paperspace", m.id, m.sshd_pid) for m in self.state.machines.values() if m.sshd_pid]
            self.save()
        for platform, rid, pid in pods:
            self.kill(platform, rid, pid)
        for key, proc in list(self.procs.items()):
            proc.kill()
            proc.wait()
            self.procs.pop(key, None)
        deadline = time.monotonic() + 5
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        # a worker may have booted a pod while we were killing: sweep by marker
        podproc.sweep(str(self.data_dir))
        for proc in list(self.procs.values()):
            proc.kill()
            proc.wait()


def wipe(path: Path) -> None:
    """Empty a directory (a disk being wiped) but keep it."""
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
