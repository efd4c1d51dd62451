"""Sweeps: a matrix of cells fanned out over several queue machines (issue 27; docs/sweeps.md).

The `sweep:` block and what its cells are is job-file schema (gpujob.jobfile.sweep, gpujob.jobfile.cells).

assign.py  which queue each cell was placed on, kept, so no later split moves a cell a machine may have run
wrapper.py the immutable, versioned queue wrapper and queue files placed on the machine's durable disk,
           and the switch to a newer version between cells
expand.py  a sweep job file -> one ordinary queue job per machine (gpujob-<job>--q<N>--<project>), the
           cells split over them by estimated cost
isolation.py  what a cell wrote outside its own dirs, judged
"""
