"""The preflight: is the machine's GPU what is billed, and healthy, before the run is started on it?

Read over SSH from inside the machine (the API's GPU count is what was asked for, not what is there):
nvidia-smi's GPUs against the billed count and model (RP1 zero-GPU, U31), Xid errors in the kernel log
or, where the container cannot read it, the driver's uncorrected ECC count (U22), a hardware or thermal
slowdown (U23; the idle reason every idle GPU shows is not one), and whether the image's Python can use
CUDA when it has torch (RP9, U28).

probe.py runs and parses the read; checks.py judges it (pure); hook.py is what apply calls before every
launch: on a failure a fresh machine this apply created is replaced (at most twice), anything else is
stopped and the step fails naming the finding.
"""
