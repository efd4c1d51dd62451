"""Which local files a sync sends: .gitignore semantics (pathspec's; nested files, negation, anchoring,
`**`, directory-only patterns) for the repo's .gitignore files, the spec's `exclude` globs and the credential
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
    """One pattern: `regex` matches a path relative to `base` (a directory relative to src, "" for the
    root); a directory is asked about as "its/path/" (with the slash), so directory-only patterns
    (`build/`) match only directories."""

    base: str
    regex: re.Pattern[str]
    negate: bool


_GROUP = re.compile(r"\(\?P<\w+>")


def parse(lines: list[str], base: str = "") -> list[Rule]:
    """gitignore lines as rules, in order; the syntax (negation, anchoring, `**`, classes, escapes,
    trailing spaces) is pathspec's gitignore, as git reads it."""
    import pathspec

    rules = []
    for raw in lines:
        (pattern,) = pathspec.GitIgnoreSpec.from_lines([raw.rstrip("\n").rstrip("\r")]).patterns
        if pattern.include is None or pattern.regex is None:  # blank or a comment
            continue
        # Named groups would collide when Matcher joins patterns into one alternation.
        body = _GROUP.sub("(?:", pattern.regex.pattern)
        if raw.strip().endswith("/**"):
            body += "."  # `a/**` is what is inside a/, not a/ itself (git's reading)
        rules.append(Rule(base, re.compile(body), not pattern.include))
    return rules


def _query(rel: str, is_dir: bool) -> str:
    return rel + "/" if is_dir else rel


def ignored(rules: list[Rule], rel: str, is_dir: bool) -> bool:
    """Last matching rule wins (git's rule)."""
    verdict = False
    for r in rules:
        if r.base:
            if not rel.startswith(r.base + "/"):
                continue
            sub = rel[len(r.base) + 1 :]
        else:
            sub = rel
        if r.regex.match(_query(sub, is_dir)):
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
        self.groups = self._groups(rules)

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
        for g in self.groups:
            if g.base:
                if not rel.startswith(g.base + "/"):
                    continue
                sub = rel[len(g.base) + 1 :]
            else:
                sub = rel
            if g.regex.match(_query(sub, is_dir)):
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
