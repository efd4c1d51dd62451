"""GitHub and GitLab, the two calls `gpujob pr-comment` makes: create-or-edit the marked comment, and
read the approvals in the description of the PR a commit came from. Plain REST over httpx."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gpujob.errors import ConfigError, GpujobError
from gpujob.gitops.comment import approvals_in

PER_PAGE = 100
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Target:
    host: str  # "github" | "gitlab"
    api_url: str  # GITHUB_API_URL / CI_API_V4_URL
    repo: str  # GitHub owner/name, or GitLab project id or path
    token_env: str  # the variable holding the token; its value is never printed


def token(name: str) -> str:
    from gpujob.redact import register

    value = os.environ.get(name, "").strip()
    if not value:
        raise ConfigError(
            f"the environment variable {name} is not set (a token that may comment on pull requests)",
            hint=f"in CI pass it from the host's secrets, e.g. env: {name}: ${{{{ secrets.{name} }}}}",
        )
    register(value)
    return value


class HttpError(GpujobError):
    def __init__(self, message: str, *, status: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class Api:
    def __init__(self, target: Target) -> None:
        import httpx

        secret = token(target.token_env)
        if target.host == "gitlab":
            headers = {"PRIVATE-TOKEN": secret}
        else:
            headers = {
                "Authorization": f"Bearer {secret}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
            }
        self.target = target
        self.http = httpx.Client(
            base_url=target.api_url.rstrip("/"), headers=headers, timeout=TIMEOUT_S, follow_redirects=False
        )

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def call(self, method: str, path: str, payload: Any = None, params: dict[str, Any] | None = None) -> Any:
        import httpx

        try:
            resp = self.http.request(method, path, json=payload, params=params)
        except httpx.HTTPError as exc:
            raise GpujobError(
                f"pr-comment: {method} {self.target.api_url.rstrip('/')}{path}: {exc}",
                hint="check --api-url (GITHUB_API_URL / CI_API_V4_URL) and the network",
            ) from None
        if resp.status_code >= 400:
            detail = " ".join(resp.text[:300].split())
            raise HttpError(
                f"pr-comment: {method} {path}: HTTP {resp.status_code}: {detail}",
                status=resp.status_code,
                hint="401/403: the token may not comment here; 404: check --repo/--project and --pr",
            )
        return resp.json() if resp.content else None


def _comments_path(t: Target, pr: str) -> str:
    if t.host == "gitlab":
        return f"/projects/{quote(t.repo, safe='')}/merge_requests/{pr}/notes"
    return f"/repos/{t.repo}/issues/{pr}/comments"


def _edit_path(t: Target, pr: str, comment_id: Any) -> str:
    if t.host == "gitlab":
        return f"{_comments_path(t, pr)}/{comment_id}"
    return f"/repos/{t.repo}/issues/comments/{comment_id}"


def find_marked(api: Api, path: str, mark: str) -> list[dict[str, Any]]:
    """Every comment that starts with the marker, across every page, oldest first."""
    found: list[dict[str, Any]] = []
    page = 1
    while True:
        items = api.call("GET", path, params={"per_page": PER_PAGE, "page": page}) or []
        found += [dict(item) for item in items if (item.get("body") or "").startswith(mark)]
        if len(items) < PER_PAGE:
            return found
        page += 1


def post_or_edit(target: Target, pr: str, body: str, mark: str) -> tuple[str, Any]:
    """('created' | 'updated', comment id): edits the marked comment, or creates it. A marked comment
    this token may not edit (someone else's, copying the marker) is passed over, not fatal."""
    word = "note" if target.host == "gitlab" else "comment"
    method = "PUT" if target.host == "gitlab" else "PATCH"
    with Api(target) as api:
        path = _comments_path(target, pr)
        for found in find_marked(api, path, mark):
            try:
                api.call(method, _edit_path(target, pr, found["id"]), {"body": body})
            except HttpError as exc:
                if exc.status in (403, 404):
                    continue
                raise
            return f"updated {word}", found["id"]
        created = api.call("POST", path, {"body": body})
        return f"created {word}", created["id"]


def approvals_for_commit(target: Target, sha: str) -> list[str]:
    """Action ids approved in the description of the pull/merge request(s) `sha` belongs to."""
    with Api(target) as api:
        if target.host == "gitlab":
            found = api.call(
                "GET", f"/projects/{quote(target.repo, safe='')}/repository/commits/{sha}/merge_requests"
            )
            texts = [mr.get("description") or "" for mr in found or []]
        else:
            found = api.call("GET", f"/repos/{target.repo}/commits/{sha}/pulls")
            texts = [pr.get("body") or "" for pr in found or []]
    ids: list[str] = []
    for text in texts:
        ids += approvals_in(text)
    return list(dict.fromkeys(ids))
