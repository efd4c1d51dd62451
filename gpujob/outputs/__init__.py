"""Results besides checkpoints (the job file's `outputs:` block) and the run's own log and records:
where they are on the machine (roots.py), how they are listed, pulled and checked over SSH
(remote.py), and what the last pull brought home (record.py). The teardown gate, `gpujob pull` and
`gpujob watch` use them; pulls go through the same resumable, checksummed path as checkpoints
(gpujob.ssh.pull)."""
