"""`python -m gpujob.sim --data-dir DIR`: the simulator as a long-running process (what `gpujob sim up`
starts detached). It writes DIR/daemon.json (pid, ports, env) once serving and removes it on exit;
SIGTERM / SIGINT stop it and kill every pod process."""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from pathlib import Path

DAEMON_FILE = "daemon.json"


def main(argv: list[str] | None = None) -> int:
    from gpujob.depwarnings import quiet_known

    quiet_known()  # a process entry, like the CLI's: the pods' key handling imports asyncssh
    from gpujob.sim.app import SimServer
    from gpujob.sim.engine import SimOptions

    ap = argparse.ArgumentParser(prog="python -m gpujob.sim")
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--runpod-port", type=int, default=0)
    ap.add_argument("--paperspace-port", type=int, default=0)
    ap.add_argument("--speed", type=float, default=1.0)
    ap.add_argument("--provision-seconds", type=float, default=1.0)
    ap.add_argument("--boot-seconds", type=float, default=0.5)
    ap.add_argument("--no-pods", action="store_true", help="lifecycle only, no sshd pods")
    ap.add_argument(
        "--pods", default="auto", help="pod mode: auto | namespaces | plain (gpujob/sim/podproc.py)"
    )
    ap.add_argument(
        "--runpod-graphql",
        default="live",
        choices=["live", "limited", "gone"],
        help="RunPod's GraphQL calendar",
    )
    ap.add_argument(
        "--runpod-spot",
        default="offered",
        choices=["offered", "withdrawn"],
        help="RunPod's spot: offered, or withdrawn while GraphQL still answers",
    )
    args = ap.parse_args(argv)

    options = SimOptions(
        speed=args.speed,
        provision_seconds=args.provision_seconds,
        boot_seconds=args.boot_seconds,
        pods=not args.no_pods,
        pod_mode=args.pods,
        runpod_graphql=args.runpod_graphql,
        runpod_spot=args.runpod_spot,
    )
    server = SimServer(args.data_dir, options, args.runpod_port, args.paperspace_port)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    ep = server.endpoints
    info = {
        "pid": os.getpid(),
        "data_dir": str(server.sim.data_dir),
        "runpod_url": ep.runpod_url,
        "paperspace_url": ep.paperspace_url,
        "paperspace_ssh_port": ep.paperspace_ssh_port,
        "pods": options.pods,
        "runpod_graphql": options.runpod_graphql,
        "runpod_spot": options.runpod_spot,
        "pod_mode": server.sim.pod_mode.name if server.sim.pod_mode else "off",
        "pod_mode_why": server.sim.pod_mode.why if server.sim.pod_mode else "",
        "env": ep.env(),
    }
    path = args.data_dir / DAEMON_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=1))
    os.replace(tmp, path)
    try:
        done.wait()
    finally:
        server.close()
        path.unlink(missing_ok=True)
    return 0


def read_daemon(data_dir: Path) -> dict | None:  # type: ignore[type-arg]
    """The running daemon's info, or None when none is running (a stale file is ignored)."""
    path = data_dir / DAEMON_FILE
    try:
        info = json.loads(path.read_text())
        os.kill(int(info["pid"]), 0)
    except (OSError, ValueError, KeyError):
        return None
    return info  # type: ignore[no-any-return]
