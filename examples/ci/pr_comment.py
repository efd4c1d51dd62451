#!/usr/bin/env python3
"""Post `gpujob plan --format markdown` as ONE pull/merge request comment, updated on every push.

Standard library only, so a CI job needs nothing beyond Python. The comment is found again by a
hidden marker (an HTML comment), so each push edits it instead of adding another. Long plans fold
into <details>; the body is cut at a line boundary to stay under the host's size limit (GitHub:
65,536 characters) with a note saying where the full plan is.

    pr_comment.py body    --plan plan.md [--exit-code N] > comment.md
    pr_comment.py post    --plan plan.md --api-url URL --repo OWNER/NAME --pr N          (GitHub)
    pr_comment.py post    --gitlab --plan plan.md --api-url URL --project ID --pr IID    (GitLab)
    pr_comment.py approvals --api-url URL --repo OWNER/NAME --sha SHA   -> "--approve ID ..." from the PR text

The token is read from the environment variable named by --token-env (GITHUB_TOKEN / GITLAB_TOKEN)
and is never printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

GITHUB_LIMIT = 65536
GITLAB_LIMIT = 1_000_000
MARKER = "<!-- gpujob-plan{key} -->"
FOLD_LINES = 40  # plans longer than this are folded under their summary
SUMMARY_LINES = 25
APPROVE_RE = re.compile(r"^\s*/?gpujob[- ]approve:?\s+(.+)$", re.IGNORECASE | re.MULTILINE)
ACTION_ID_RE = re.compile(r"^[A-Za-z0-9_.-]+$")

EXIT_WORDS = {
    0: "no changes",
    1: "**plan failed or blocked**: see the findings below and the job log",
    2: "changes to apply on merge",
}


def marker(key: str = "") -> str:
    return MARKER.format(key=f":{key}" if key else "")


def _close_fences(lines: list[str]) -> list[str]:
    """A cut inside a ``` block would swallow the rest of the comment: close it."""
    fences = sum(1 for line in lines if line.lstrip().startswith("```"))
    return [*lines, "```"] if fences % 2 else lines


def _summary(lines: list[str]) -> list[str]:
    """The plan's headline: everything before the first second-level section, at most SUMMARY_LINES."""
    head: list[str] = []
    for i, line in enumerate(lines):
        if (i > 0 and line.startswith("## ")) or len(head) >= SUMMARY_LINES:
            break
        head.append(line)
    return _close_fences(head)


def build_body(
    plan_md: str,
    *,
    key: str = "",
    exit_code: int | None = None,
    limit: int = GITHUB_LIMIT,
    artifact_hint: str = "the `gpujob-plan` artifact of this run (plan.md)",
) -> str:
    """The whole comment: marker, status line, plan (folded when long), cut to fit `limit`."""
    title = f"### gpujob plan{f' · {key}' if key else ''}"
    status = EXIT_WORDS.get(exit_code, f"exit {exit_code}") if exit_code is not None else ""
    header = [marker(key), title]
    if status:
        header.append(f"_{status}_")
    header.append("")
    footer = ["", "<sub>Merging applies exactly this saved plan (plan.json); a stale plan is refused.</sub>"]
    lines = plan_md.rstrip("\n").splitlines()

    if len(lines) <= FOLD_LINES:
        body = "\n".join([*header, *lines, *footer]) + "\n"
        if len(body) <= limit:
            return body
    summary = _summary(lines)
    open_tag = ["", f"<details><summary>Full plan ({len(lines)} lines)</summary>", ""]
    close_tag = ["", "</details>"]

    def assemble(shown: list[str], note: list[str]) -> str:
        return "\n".join([*header, *summary, *open_tag, *shown, *close_tag, *note, *footer]) + "\n"

    body = assemble(lines, [])
    if len(body) <= limit:
        return body
    # Binary search the longest prefix of lines that fits with the truncation note.
    lo, hi = 0, len(lines)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        note = _note(mid, len(lines), artifact_hint)
        if len(assemble(_close_fences(lines[:mid]), note)) <= limit:
            lo = mid
        else:
            hi = mid - 1
    body = assemble(_close_fences(lines[:lo]), _note(lo, len(lines), artifact_hint))
    if len(body) > limit:  # the summary alone is too big: keep the marker and the note
        body = "\n".join([*header, *_note(0, len(lines), artifact_hint), *footer]) + "\n"
    return body


def _note(shown: int, total: int, where: str) -> list[str]:
    return ["", f"> **Plan truncated**: showing {shown} of {total} lines to stay under the comment size limit. "
            f"The full plan is in {where}."]  # fmt: skip


# --- HTTP ----------------------------------------------------------------------------------------


class Api:
    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self.base = base.rstrip("/")
        self.headers = headers

    def call(self, method: str, path: str, payload: Any = None) -> tuple[Any, dict[str, str]]:
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        for k, v in self.headers.items():
            req.add_header(k, v)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
                return (json.loads(raw) if raw else None), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise SystemExit(f"pr_comment: {method} {path}: HTTP {exc.code}: {detail}") from None
        except urllib.error.URLError as exc:
            raise SystemExit(f"pr_comment: {method} {path}: {exc.reason}") from None


def _token(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise SystemExit(f"pr_comment: the environment variable {name} is not set (a token that may comment)")
    return value


def find_comment(api: Api, list_path: str, mark: str) -> Any:
    """The first comment carrying the marker, across all pages (100 per page)."""
    page = 1
    while True:
        sep = "&" if "?" in list_path else "?"
        items, _ = api.call("GET", f"{list_path}{sep}per_page=100&page={page}")
        if not items:
            return None
        for item in items:
            if mark in (item.get("body") or ""):
                return item
        if len(items) < 100:
            return None
        page += 1


def post(args: argparse.Namespace, body: str) -> str:
    mark = marker(args.key)
    if args.gitlab:
        api = Api(args.api_url, {"PRIVATE-TOKEN": _token(args.token_env or "GITLAB_TOKEN")})
        base = f"/projects/{urllib.request.quote(str(args.project), safe='')}/merge_requests/{args.pr}/notes"
        existing = find_comment(api, base, mark)
        if existing:
            api.call("PUT", f"{base}/{existing['id']}", {"body": body})
            return f"updated note {existing['id']}"
        created, _ = api.call("POST", base, {"body": body})
        return f"created note {created['id']}"
    api = Api(
        args.api_url,
        {
            "Authorization": f"Bearer {_token(args.token_env or 'GITHUB_TOKEN')}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        },
    )
    listing = f"/repos/{args.repo}/issues/{args.pr}/comments"
    existing = find_comment(api, listing, mark)
    if existing:
        api.call("PATCH", f"/repos/{args.repo}/issues/comments/{existing['id']}", {"body": body})
        return f"updated comment {existing['id']}"
    created, _ = api.call("POST", listing, {"body": body})
    return f"created comment {created['id']}"


def approvals(args: argparse.Namespace) -> list[str]:
    """Action ids approved in the merged PR's description, one `gpujob-approve: ID [ID...]` line each."""
    api = Api(
        args.api_url,
        {
            "Authorization": f"Bearer {_token(args.token_env or 'GITHUB_TOKEN')}",
            "Accept": "application/vnd.github+json",
        },
    )
    pulls, _ = api.call("GET", f"/repos/{args.repo}/commits/{args.sha}/pulls")
    ids: list[str] = []
    for pr in pulls or []:
        for match in APPROVE_RE.finditer(pr.get("body") or ""):
            ids += [w for w in match.group(1).replace(",", " ").split() if ACTION_ID_RE.match(w)]
    return list(dict.fromkeys(ids))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("body", "post"):
        p = sub.add_parser(name)
        p.add_argument("--plan", type=Path, required=True, help="gpujob plan --format markdown output")
        p.add_argument(
            "--exit-code", type=int, help="exit code of `gpujob plan` (0 none, 2 changes, 1 error)"
        )
        p.add_argument(
            "--key", default="", help="distinguishes several plan comments on one PR (e.g. a directory)"
        )
        p.add_argument("--limit", type=int, help="max comment characters (default: the host's limit)")
        p.add_argument("--gitlab", action="store_true", help="GitLab merge request notes instead of GitHub")
        p.add_argument("--artifact-hint", default="the `gpujob-plan` artifact of this run (plan.md)")
        if name == "post":
            p.add_argument("--api-url", required=True, help="GITHUB_API_URL / CI_API_V4_URL")
            p.add_argument("--repo", help="GitHub owner/name")
            p.add_argument("--project", help="GitLab project id or path")
            p.add_argument("--pr", required=True, help="pull request number / merge request iid")
            p.add_argument("--token-env", help="variable holding the token (GITHUB_TOKEN / GITLAB_TOKEN)")
    a = sub.add_parser("approvals")
    a.add_argument("--api-url", required=True)
    a.add_argument("--repo", required=True)
    a.add_argument("--sha", required=True)
    a.add_argument("--token-env")
    args = parser.parse_args(argv)

    if args.cmd == "approvals":
        print(" ".join(f"--approve {i}" for i in approvals(args)))
        return 0
    limit = args.limit or (GITLAB_LIMIT if args.gitlab else GITHUB_LIMIT)
    body = build_body(
        args.plan.read_text(),
        key=args.key,
        exit_code=args.exit_code,
        limit=limit,
        artifact_hint=args.artifact_hint,
    )
    if args.cmd == "body":
        sys.stdout.write(body)
        return 0
    if not args.gitlab and not args.repo:
        parser.error("--repo is required for GitHub")
    if args.gitlab and not args.project:
        parser.error("--project is required with --gitlab")
    print(f"pr_comment: {post(args, body)} ({len(body)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
