"""The node command lines really start a gang: each node's command and environment from
gpujob.jobfile.nodes, run by bash as the launcher runs it, two "nodes" on two loopback addresses (no
SSH, no simulator). The torchrun gang runs end to end only (tests/e2e/test_multinode_run.py): torch
costs seconds to import, and that test starts it on every node anyway."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpujob.jobfile.nodes import gang_launches

from .specs import gang_spec, live_nodes

CODE = Path(__file__).with_name("code")


def _run_gang(spec, tmp_path: Path, extra: dict[str, str]) -> list[str]:
    procs = []
    for start, node in zip(gang_launches(spec, live_nodes(2)), live_nodes(2), strict=True):
        env = {
            **os.environ,
            **dict(start.env),
            **extra,
            "GPUJOB_CHECKPOINT_DIR": str(tmp_path / f"ck{node.rank}"),
        }
        env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # this Python's torchrun
        procs.append(
            subprocess.Popen(
                ["bash", "-c", start.command],
                cwd=CODE,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outs = [p.communicate(timeout=90)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    return outs


def test_launcher_none_nodes_meet_over_master_addr(tmp_path: Path) -> None:
    spec = gang_spec(nodes=2, command="python3 exchange.py", rendezvous_port=29531)
    outs = _run_gang(spec, tmp_path, {})
    assert "NODE_RANK=0 WORLD_SIZE=2" in outs[0] and "node 0 heard: hello from node 1" in outs[0]
    assert "NODE_RANK=1 WORLD_SIZE=2" in outs[1] and "node 1 heard: hello from node 0" in outs[1]
