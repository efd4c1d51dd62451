"""A simulated pod's disks at their own sizes: `df` on a pod reports the disk the pod was created with
(a 20 GB volume shows 20 GB, the container disk its own GB), not the simulator host's filesystem.

Each pod's control dir holds `gpu/disks`: one line per disk, `<path in the pod>\\t<host dir>\\t<bytes>`.
The pod's `df` (first on its PATH, gpujob/sim/gpuhost.py) finds each path's disk by the longest prefix
(the pod's own path in a namespace, the host dir in a plain pod; `/` holds everything else), reports
that size, as used what the disk's directory holds (du), and leaves inode and human-readable listings
to the real df. `gpujob sim inject disk_fill` still applies on top."""

from __future__ import annotations

from pathlib import Path

GB = 1_000_000_000

DF = r"""#!/bin/sh
# gpujob simulator: df, each disk its own size, as full as `gpujob sim inject disk_fill` says (gpujob/sim/podisks.py)
d=$(dirname "$0")/..
real=$(PATH=/usr/bin:/bin command -v df)
fill() {
  if [ ! -f "$d/disk_fill" ]; then cat; return; fi
  awk -v p="$(cat "$d/disk_fill")" \
    'NR==1 || $2 !~ /^[0-9]+$/ {print; next} {u=sprintf("%.0f", $2*p/100); $3=u; $4=sprintf("%.0f", $2-u); $5=p "%"; print}'
}
unit=1024; sized=1; opts=""; ops=""; nl='
'
for a in "$@"; do
  case "$a" in
    -B1|--block-size=1) unit=1; opts="$opts $a" ;;
    -k|-P|-Pk|-kP|--portability) opts="$opts $a" ;;
    -*) sized=0 ;;
    *) ops="$ops$a$nl" ;;
  esac
done
if [ ! -f "$d/disks" ] || [ "$sized" = 0 ] || [ -z "$ops" ]; then
  if [ -f "$d/disk_fill" ]; then "$real" "$@" | fill; exit; fi
  exec "$real" "$@"
fi
rows() {
rc=0; first=1
IFS=$nl; set -f
for op in $ops; do
  IFS=" "
  row=$("$real" $opts -- "$op" | sed -n 2p)
  if [ -z "$row" ]; then rc=1; continue; fi
  if [ "$first" = 1 ]; then "$real" $opts -- "$op" | sed -n 1p; first=0; fi
  abs=$({ cd "$op" 2>/dev/null || cd "$(dirname -- "$op")" 2>/dev/null; } && pwd -P)
  disk=$(awk -F'\t' -v a="$abs" '
    function under(p) { return p == "/" || a == p || index(a, p "/") == 1 }
    { for (i = 1; i <= 2; i++) if (under($i) && length($i) > best) { best = length($i); pick = $1 "\t" $2 "\t" $3 } }
    END { print pick }' "$d/disks")
  [ -n "$disk" ] || { echo "$row"; continue; }
  mnt=$(echo "$disk" | cut -f1); host=$(echo "$disk" | cut -f2); bytes=$(echo "$disk" | cut -f3)
  used=$(du -sk -- "$host" 2>/dev/null | cut -f1)
  echo "$row" | awk -v b="$bytes" -v k="${used:-0}" -v unit="$unit" -v m="$mnt" '{
    s = b / unit; u = k * 1024 / unit; if (u > s) u = s
    $2 = sprintf("%.0f", s); $3 = sprintf("%.0f", u); $4 = sprintf("%.0f", s - u)
    $5 = (s > 0 ? sprintf("%d", (u * 100 + s - 1) / s) : 0) "%"; $6 = m; NF = 6; print }'
done
return $rc
}
out=$(rows); rc=$?
[ -z "$out" ] || printf '%s\n' "$out" | fill
exit $rc
"""


def write(ctl_dir: Path, disks: dict[str, tuple[Path, int]]) -> None:
    """`disks`: path in the pod -> (its host directory, size in GB); none: the real df answers."""
    path = ctl_dir / "gpu" / "disks"
    if not disks:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (f"{pod}\t{host.resolve()}\t{gb * GB}\n" for pod, (host, gb) in sorted(disks.items()) if gb > 0)
    path.write_text("".join(lines))
