"""Run as an unprivileged user by test_pod_modes.py: start one user-namespace pod, print where it
listens, keep it until stdin closes, then kill it. Standard library only (run with `python -I`).

usage: unpriv_pod.py REPO_ROOT BASE_DIR [MODE]   (BASE_DIR holds authorized_keys; the pod's disks go
there; MODE: a pod mode, default namespaces)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])

from gpujob.sim import podproc


def main(base: Path, requested: str) -> int:
    mode = podproc.choose(requested)
    launch = podproc.PodLaunch(
        key=f"{base}:runpod:unpriv",
        ctl_dir=base / "ctl",
        mounts={"/workspace": base / "volume", "/root": base / "container", "/tmp": base / "tmp"},
        listen="127.0.0.1",
        port=podproc.free_port(),
        authorized_keys=(base / "authorized_keys").read_text().splitlines(),
    )
    proc, pid = podproc.spawn(launch, mode)
    if pid is None or not podproc.wait_ready("127.0.0.1", launch.port, proc):
        log = base / "ctl" / "boot.log"
        print(log.read_text() if log.exists() else "the pod did not start", file=sys.stderr)
        return 1
    print(json.dumps({"mode": mode.name, "port": launch.port, "pid": pid}), flush=True)
    sys.stdin.read()
    podproc.kill_pod(pid, launch.key)
    proc.kill()
    proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "namespaces"))
