"""Disks: will the job's data fit where it goes?

- At plan time (findings.py): RP11, a small RunPod container disk under a `run.setup` that installs
  packages (pip, conda, apt: they land on `/`, whatever run.caches says about the caches).
- While the run goes (usage.py): bytes and inodes used on the durable mount and on `/`, read over SSH,
  for `status` and `watch` (warn at 90 %; watch pulls and parks before a disk is full).
"""
