"""gpujob: plan and apply GPU training jobs on RunPod and Paperspace.

Kept import-free on purpose: `gpujob --help` must start fast, so heavy modules
(httpx, asyncssh, deepdiff, jinja2, rich) are imported only by the commands that use them.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
