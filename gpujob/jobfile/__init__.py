"""The job file's schema, every section of it: pure data and the value rules its validators apply
(kernel floor, docs/architecture.md). The loader, its positions and the platform checks are
gpujob.spec's; what a section makes gpujob do is its capability's.

model.py  JobSpec and its blocks (storage, checkpoint, run, outputs, teardown, budget, fallback)
machine.py  the `machine:` block, `nodes` with it (docs/multinode.md); durations.py the duration types
rules.py  the value rules: durations, names, paths, env entries, the cross-field rules
sweep.py  the `sweep:` block; cells.py its cells (expansion, names, estimates)
"""
