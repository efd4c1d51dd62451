"""Assemble a running simulator: the engine plus one HTTP server per platform on 127.0.0.1."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpujob.sim.engine import SimOptions, Simulator
from gpujob.sim.http import serve


@dataclass
class Endpoints:
    runpod_port: int
    paperspace_port: int
    paperspace_ssh_port: int
    runpod_key: str
    paperspace_key: str
    ssh_user: str = "root"

    @property
    def runpod_url(self) -> str:
        return f"http://127.0.0.1:{self.runpod_port}"

    @property
    def paperspace_url(self) -> str:
        return f"http://127.0.0.1:{self.paperspace_port}"

    def env(self) -> dict[str, str]:
        """The variables gpujob reads (gpujob.config): point the real clients at the simulator."""
        return {
            "GPUJOB_RUNPOD_API_URL": f"{self.runpod_url}/v2",
            "GPUJOB_RUNPOD_GRAPHQL_URL": f"{self.runpod_url}/graphql",
            "GPUJOB_PAPERSPACE_API_URL": f"{self.paperspace_url}/v1",
            "RUNPOD_API_KEY": self.runpod_key,
            "PAPERSPACE_API_KEY": self.paperspace_key,
            "GPUJOB_PAPERSPACE_SSH_PORT": str(self.paperspace_ssh_port),
            "GPUJOB_PAPERSPACE_SSH_USER": self.ssh_user,
        }


class SimServer:
    """Engine + both HTTP servers. `close()` stops serving and kills every pod process."""

    def __init__(
        self,
        data_dir: Path,
        options: SimOptions | None = None,
        runpod_port: int = 0,
        paperspace_port: int = 0,
    ) -> None:
        from gpujob.sim import ps_engine, rp_engine
        from gpujob.sim.paperspace_api import PaperspaceApi
        from gpujob.sim.runpod_rest import RunPodRest

        self.sim = Simulator(
            data_dir,
            options,
            on_tick=(rp_engine.on_tick, ps_engine.on_tick),
            stoppers={"runpod": rp_engine.stop},
        )
        self._servers: list[Any] = []
        self._threads: list[threading.Thread] = []
        try:
            rp = RunPodRest(self.sim)
            ps = PaperspaceApi(self.sim)
            for api, port in ((rp, runpod_port), (ps, paperspace_port)):
                server, thread = serve("127.0.0.1", port, api.dispatch, self.sim.now)
                self._servers.append(server)
                self._threads.append(thread)
        except BaseException:
            self.close()
            raise
        o = self.sim.options
        self.sim.control_url = f"http://127.0.0.1:{self._servers[0].server_address[1]}"
        self.endpoints = Endpoints(
            self._servers[0].server_address[1],
            self._servers[1].server_address[1],
            self.sim.ps_ssh_port,
            o.runpod_api_key,
            o.paperspace_api_key,
            self.sim.ssh_user,
        )

    def close(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for t in self._threads:
            t.join(timeout=2)
        self.sim.shutdown()
