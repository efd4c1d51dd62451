"""The one listing of a remote checkpoint dir: every finished file with its size and sha256, the entries
that cannot be pulled (with why), the dir's real path and the mount it lives on. Pulls start from it
and the teardown gate reads it as the truth right before a destructive call.

Remote names are untrusted text. A name is pullable only when every `/`-separated part is a plain name:
not empty, not `.` or `..`, no backslash, no control character (newline included); and it does not end
in `.part` (gpujob's own temporary suffix). Dotfiles and `*.tmp` (atomic writers' temp files) are not
checkpoints and are not listed. Everything else that is not a regular file or a directory (symlinks,
FIFOs, sockets, devices) is listed as not pullable.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import Field

from gpujob.errors import SSHError
from gpujob.model import Model
from gpujob.quote import q, remote_path
from gpujob.ssh.session import Remote

PART = ".part"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class RemoteFile(Model):
    size: int
    sha256: str


class RemoteListing(Model):
    """A checkpoint dir as the remote showed it at one moment."""

    dir: str
    exists: bool = False
    real_dir: str | None = None  # the dir with symlinks resolved
    mount: str | None = None  # mount point the real dir lives on
    files: dict[str, RemoteFile] = Field(default_factory=dict)
    unpullable: dict[str, str] = Field(default_factory=dict)  # name -> why it cannot be pulled

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files.values())

    def selected(self, only: Callable[[str], bool] | None) -> RemoteListing:
        """The listing cut to the names `only` keeps (files and unpullable entries alike); all when None."""
        if only is None:
            return self
        return self.model_copy(
            update={
                "files": {n: f for n, f in self.files.items() if only(n)},
                "unpullable": {n: w for n, w in self.unpullable.items() if only(n)},
            }
        )


def name_problem(name: str) -> str | None:
    """Why a remote name cannot become a local path below local_dir, or None when it can."""
    if not name:
        return "empty name"
    if _CONTROL.search(name):
        return "control character (newline, tab, ...) in the name"
    if "\\" in name:
        return "backslash in the name"
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "'.', '..', an empty part or a leading/trailing '/'"
    if name.endswith(PART):
        return f"ends in {PART}, gpujob's temporary suffix"
    return None


# One remote pass: R<real dir>, M<mount>, then per entry F<size> <name> (+ H<sha256>, absent when the
# file vanished before it was hashed) or N<type> <name> for what is neither a regular file nor a dir.
_LIST = r"""d={dir}
[ -d "$d" ] || {{ printf 'A\0'; exit 0; }}
cd "$d" || exit 3
{hasher}
printf 'R%s\0' "$(pwd -P)"
printf 'M%s\0' "$(findmnt -n -o TARGET -T . 2>/dev/null || df -P . 2>/dev/null | awk 'NR==2{{sub(/^.*% /, ""); print}}')"
find . -mindepth 1 -name '.*' -prune -o -name '*.tmp' -prune -o \
  -type f \( -printf 'F%s %P\0' {hash} -o -true \) -o \
  ! -type d -printf 'N%y %P\0'
true"""


# The remote sha256 is computed from the file at rest by OpenSSL's digest when it is there and right
# (it gives the known digest of no input): on the 2-core bench machine it hashes ~4× faster per CPU
# second than coreutils' sha256sum (SHA-NI), and that pass used to be a third of a pull's time.
# sha256sum stays the fallback. Both print the 64 hex digits first.
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
HASHER = (
    "H=sha256sum; [ \"$(printf '' | openssl dgst -sha256 -r 2>/dev/null | cut -c1-64)\" = "
    f"{_EMPTY_SHA256} ] && H='openssl dgst -sha256 -r'; export H"
)
_HASH = r"""-exec sh -c 'h=$($H < "$1") && printf "H%.64s\0" "$h"' sh {} \;"""
_NO_HASH = r"""-printf 'H-\0'"""

# The claimed total, then the size of the disk holding it (1024-byte blocks): a sparse or forged file
# may claim more than its disk, and the hashing bound is sized from the smaller (gpujob.ssh.space).
_TOTAL = r"""cd {dir} 2>/dev/null || {{ echo 0; exit 0; }}
find . -mindepth 1 -name '.*' -prune -o -type f -printf '%s\n' | awk '{{s+=$1}} END {{printf "%.0f\n", s+0}}'
df -Pk . 2>/dev/null | awk 'NR==2 {{print $2}}'"""


async def list_remote(remote: Remote, remote_dir: str, *, hashes: bool = True) -> RemoteListing:
    """Every finished checkpoint file under `remote_dir` with size and sha256. The remote hashes them
    all; the wait for that is sized from their total (a quick first pass sums the sizes). With
    hashes=False only names and sizes (sha256 ""): enough to see whether a dir holds anything."""
    rdir = remote_path(remote_dir)
    what = f"listing checkpoints in {rdir}"
    if not hashes:
        out = await remote.run(
            _LIST.format(dir=q(rdir), hasher="", hash=_NO_HASH), what=what, left="nothing was pulled yet"
        )
        return parse_listing(rdir, out.stdout)
    total = (await remote.run(_TOTAL.format(dir=q(rdir)), what=what, left="nothing was pulled yet")).stdout
    words = total.split()
    claimed = int(words[0]) if words and words[0].isdigit() else 0
    disk = int(words[1]) * 1024 if len(words) > 1 and words[1].isdigit() else None
    bound = remote.limits.for_bytes(min(claimed, disk) if disk else claimed)
    out = await remote.run(
        _LIST.format(dir=q(rdir), hasher=HASHER, hash=_HASH),
        timeout=bound,
        idle=bound,  # silent while it hashes a large file
        what=f"hashing the checkpoints in {rdir}",
        left="nothing was pulled yet",
    )
    return parse_listing(rdir, out.stdout)


def parse_listing(rdir: str, out: str) -> RemoteListing:
    """The listing from the remote's output, which is untrusted: anything malformed is refused."""
    fields = out.split("\0")
    if fields and fields[-1] == "":
        fields.pop()
    if fields == ["A"] or not fields:
        return RemoteListing(dir=rdir)
    real: str | None = None
    mount: str | None = None
    files: dict[str, RemoteFile] = {}
    unpullable: dict[str, str] = {}
    pending: tuple[str, int] | None = None
    for item in fields:
        tag, body = item[:1], item[1:]
        if tag == "R":
            real = body
        elif tag == "M":
            mount = body or None
        elif tag == "H" and pending is not None and (_HEX64.match(body) or body == "-"):
            name, size = pending
            pending = None
            why = name_problem(name)
            if why is None:
                files[name] = RemoteFile(size=size, sha256="" if body == "-" else body)
            else:
                unpullable[name] = why
        elif tag in ("F", "N"):
            pending = None  # an F without its H: the file vanished between the two reads
            head, sep, name = body.partition(" ")
            if not sep:
                raise _malformed(rdir, item)
            if tag == "N":
                unpullable[name] = f"not a regular file ({_KINDS.get(head, head)})"
            elif head.isdigit():
                pending = (name, int(head))
            else:
                raise _malformed(rdir, item)
        else:
            raise _malformed(rdir, item)
    return RemoteListing(
        dir=rdir, exists=True, real_dir=real, mount=mount, files=files, unpullable=unpullable
    )


_KINDS = {"l": "symbolic link", "p": "FIFO", "s": "socket", "c": "device", "b": "device"}


def _malformed(rdir: str, item: str) -> SSHError:
    return SSHError(f"unexpected listing of {rdir} from the remote: {item[:80]!r}")


def state_command(path: str) -> str:
    """The shell text remote_state sends. The run's keep rotation may delete the file between any two of
    its steps: gone at any point is "gone" (empty answer, exit 0), never a failed command; only a file
    still there that cannot be read fails."""
    p = q(path)
    return (
        f"[ -f {p} ] || exit 0; {HASHER}; "
        f"if s=$(stat -c %s -- {p} 2>/dev/null) && h=$($H 2>/dev/null < {p}); "
        f'then printf \'%s %.64s\' "$s" "$h"; '
        f"elif [ -e {p} ]; then echo 'cannot read the file' >&2; exit 1; fi"
    )


async def remote_state(remote: Remote, path: str, size_hint: int = 0) -> RemoteFile | None:
    """Size and sha256 of one remote file now, or None when it is gone."""
    cmd = state_command(path)
    bound = remote.limits.for_bytes(size_hint)
    answer = await remote.run(cmd, timeout=bound, idle=bound, what=f"remote sha256 of {path}")
    size, _, digest = answer.stdout.strip().partition(" ")
    if not size.isdigit() or not _HEX64.match(digest):
        return None
    return RemoteFile(size=int(size), sha256=digest)
