"""The layout of a job on its machine and of a sweep over its queues: where its run records, checkpoints,
cells, outputs and code live, what a queue runs, and what a plan shows of it. Pure functions of the job
file (the kernel floor: docs/architecture.md), so the planner, the applier, the sweep and the outputs
capabilities read one layout instead of importing each other."""
