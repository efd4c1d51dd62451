"""What gpujob asks Paperspace to create: the machine type for a GPU count, the disk it gets, whole
hours for auto-shutdown, and the startup script that installs the SSH public key."""

from __future__ import annotations

import math
import shlex

DEFAULT_DISK_GB = 100


def ssh_key_script(public_key: str) -> str:
    """A startup script that adds the key to root's and paperspace's authorized_keys, once."""
    key = shlex.quote(public_key.strip())
    return (
        "#!/bin/bash\n"
        "for home in /root /home/paperspace; do\n"
        '  [ -d "$home" ] || continue\n'
        '  mkdir -p "$home/.ssh" && chmod 700 "$home/.ssh"\n'
        f'  grep -qxF {key} "$home/.ssh/authorized_keys" 2>/dev/null || echo {key} >> "$home/.ssh/authorized_keys"\n'
        '  chmod 600 "$home/.ssh/authorized_keys"\n'
        "done\n"
    )


def whole_hours(hours: float) -> int:
    """autoShutdownTimeout is a whole number of hours (Metaphysic's client sends it as int64); the spec
    check refuses anything finer, so rounding up only guards against float noise."""
    return max(1, math.ceil(float(hours) - 1e-9))


def machine_type(gpu_id: str, count: int) -> str:
    if count > 1 and "x" not in gpu_id.split("-")[-1]:
        return f"{gpu_id}x{count}"
    return gpu_id
