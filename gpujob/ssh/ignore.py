"""Which local files a sync sends: .gitignore semantics (nested files, negation, anchoring, `**`,
directory-only patterns) for the repo's .gitignore files, the spec's `exclude` globs and the credential
deny list (DENY, extended by the spec's `deny` globs), which nothing re-includes."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Not worth shipping, unless the job file's exclude list re-includes them (`!pattern`).
DEFAULT_EXCLUDES = ("__pycache__/",)

# Never shipped to a machine, whatever .gitignore or run.sync.exclude say (these rules come last, so no
# negation re-includes them): gpujob's own state (it holds the private key), VCS internals, and the
# usual homes of keys and credentials across the ecosystem. A pod's disks and network volumes are not
# private (RP8). `run.sync.deny` in a job file adds patterns to this list; docs/security.md lists it.
DENY = (
    ".gpujob/",
    ".git/",
    # environment files
    ".env",
    ".env.*",
    ".envrc",
    # SSH keys and certificates
    ".ssh/",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    # cloud and cluster CLIs
    ".aws/",
    ".azure/",
    "**/.config/gcloud/",
    "application_default_credentials.json",
    "credentials.json",
    ".kube/",
    "**/.docker/config.json",
    ".terraform.d/",
    ".vault-token",
    # package registries and git hosts
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    "**/.cargo/credentials",
    "**/.cargo/credentials.toml",
    "**/.gem/credentials",
    # ML services
    "**/.huggingface/token",
    "**/.cache/huggingface/token",
    "**/.kaggle/kaggle.json",
)


@dataclass(frozen=True)
class Rule:
    base: str  # directory (relative to src, "" for the root) the pattern is relative to
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(pat: str) -> str:
    out, i, n = [], 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pat.find("]", i + 2 if pat[i + 1 : i + 2] in ("!", "]") else i + 1)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pat[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pat[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def parse(lines: list[str], base: str = "") -> list[Rule]:
    rules = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip("\r")
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = re.compile(("^" if anchored else "^(?:.*/)?") + body + "$")
        rules.append(Rule(base, regex, negate, dir_only))
    return rules


def ignored(rules: list[Rule], rel: str, is_dir: bool) -> bool:
    """Last matching rule wins (git's rule)."""
    verdict = False
    for r in rules:
        if r.dir_only and not is_dir:
            continue
        if r.base:
            if not rel.startswith(r.base + "/"):
                continue
            sub = rel[len(r.base) + 1 :]
        else:
            sub = rel
        if r.regex.match(sub):
            verdict = not r.negate
    return verdict


@dataclass(frozen=True)
class _Group:
    base: str
    regex: re.Pattern[str]
    negate: bool


class Matcher:
    """`ignored` for one rule list, compiled: consecutive rules with the same base and sign become one
    alternation, tried last to first (the first group that matches decides), so a path costs a few
    regex matches rather than one per rule (the DENY list alone has dozens)."""

    def __init__(self, rules: list[Rule]) -> None:
        self.files = self._groups([r for r in rules if not r.dir_only])
        self.dirs = self._groups(rules)

    @staticmethod
    def _groups(rules: list[Rule]) -> list[_Group]:
        runs: list[tuple[str, bool, list[str]]] = []
        for r in rules:
            if runs and runs[-1][0] == r.base and runs[-1][1] == r.negate:
                runs[-1][2].append(r.regex.pattern)
            else:
                runs.append((r.base, r.negate, [r.regex.pattern]))
        groups = [_Group(b, re.compile("|".join(f"(?:{p})" for p in ps)), n) for b, n, ps in runs]
        return groups[::-1]

    def __call__(self, rel: str, is_dir: bool) -> bool:
        for g in self.dirs if is_dir else self.files:
            if g.base:
                if not rel.startswith(g.base + "/"):
                    continue
                sub = rel[len(g.base) + 1 :]
            else:
                sub = rel
            if g.regex.match(sub):
                return not g.negate
        return False


@dataclass(frozen=True)
class LocalEntry:
    rel: str
    path: str
    size: int
    mtime: int  # whole seconds: what tar restores and what the remote listing compares
    mode: int
    link: str | None = None


def walk(src: Path, exclude: list[str]) -> Iterator[LocalEntry]:
    """Files and symlinks under `src` not excluded; excluded directories are pruned (git's rule:
    nothing under an ignored directory can be re-included). The DENY list is applied last."""
    src = Path(src)
    base_rules = parse(list(DEFAULT_EXCLUDES)) + parse(list(exclude)) + parse(list(DENY))
    stack: list[tuple[str, list[Rule]]] = [("", [])]
    while stack:
        rel_dir, inherited = stack.pop()
        absdir = os.path.join(src, rel_dir) if rel_dir else str(src)
        rules = inherited
        gi = os.path.join(absdir, ".gitignore")
        if os.path.isfile(gi):
            with open(gi, encoding="utf-8", errors="replace") as fh:
                rules = inherited + parse(fh.readlines(), rel_dir)
        # User excludes come last so they can override a .gitignore negation, and vice versa only
        # where git would allow it.
        active = Matcher(rules + base_rules)
        with os.scandir(absdir) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            if e.is_dir(follow_symlinks=False):
                if not active(rel, True):
                    stack.append((rel, rules))
                continue
            if active(rel, False):
                continue
            st = e.stat(follow_symlinks=False)
            if e.is_symlink():
                target = os.readlink(e.path)
                yield LocalEntry(rel, e.path, len(target.encode()), int(st.st_mtime), 0o777, target)
            elif e.is_file(follow_symlinks=False):
                yield LocalEntry(rel, e.path, st.st_size, int(st.st_mtime), st.st_mode & 0o7777)
