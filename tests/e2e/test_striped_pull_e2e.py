"""`gpujob pull` striping a large checkpoint over several SSH connections to a simulated pod: the
teardown gate's pull (runtime.pull_over) opens the extra connections, and what arrives is the file."""

from __future__ import annotations

import hashlib

from tests.e2e.e2e_support import Project, poll

MAKE_BIG = (
    "python3 -c \"import json, os; json.dump({'format': 'toy-v1', 'step': 1, "
    "'pad': os.urandom(6_000_000).hex()}, open('/workspace/ckpt/big.json', 'w'))\""
)


def test_pull_stripes_a_large_checkpoint_over_three_connections(project: Project) -> None:
    p = project
    p.gj("apply", "--auto-approve")
    poll("a checkpoint", lambda: "step_" in p.gj("ssh", "--", "ls", "/workspace/ckpt", check=False).stdout)
    p.gj("ssh", "--", MAKE_BIG)  # ssh joins its arguments into one remote shell line
    remote_sum = p.gj("ssh", "--", "sha256sum", "/workspace/ckpt/big.json").stdout.split()[0]

    p.env.update(GPUJOB_PULL_STRIPES="3", GPUJOB_PULL_STRIPE_MIN_MB="2")
    pulled = p.gj("pull")
    assert "all verified" in pulled.stdout, pulled.stdout + pulled.stderr
    assert "large files striped over 3 connections" in pulled.stderr
    local = p.dir / "checkpoints" / "big.json"
    assert hashlib.sha256(local.read_bytes()).hexdigest() == remote_sum
    assert not [f.name for f in local.parent.iterdir() if f.name.endswith((".part", "-spans"))]
