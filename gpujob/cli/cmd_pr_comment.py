"""`gpujob pr-comment`: the plan as ONE pull/merge request comment, edited on every push."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from gpujob.cli.main import run_command

HELP = """Post `gpujob plan --format markdown` as one pull request (GitHub) or merge request (GitLab)
comment, found again by a hidden marker and edited on each push instead of adding another. A plan over
the host's size limit (GitHub 65,536 characters) is cut at a line boundary with a note saying where
the full plan is. The token is read from the variable named by --token-env and never printed.

\b
In CI everything but --plan defaults from the host's own variables:
  GitHub Actions  GITHUB_API_URL, GITHUB_REPOSITORY, the PR number from GITHUB_EVENT_PATH, GITHUB_TOKEN
  GitLab CI       CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID, GITLAB_TOKEN (GITLAB_CI=true)

\b
Examples:
  gpujob plan --format markdown -o plan.json > plan.md; gpujob pr-comment post --plan plan.md --exit-code $?
  gpujob pr-comment body --plan plan.md > comment.md            the comment, printed (nothing posted)
  gpujob apply plan.json $(gpujob pr-comment approvals)         --approve flags from the merged PR's text
"""


def _host() -> str:
    return "gitlab" if os.environ.get("GITLAB_CI", "").lower() == "true" else "github"


def _github_pr() -> str | None:
    """The PR number of a pull_request event (GITHUB_EVENT_PATH is the event's JSON)."""
    import json

    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        number = json.loads(Path(path).read_text()).get("pull_request", {}).get("number")
    except (OSError, ValueError, AttributeError):
        return None
    return str(number) if number else None


DEFAULTS: dict[str, dict[str, Any]] = {
    "github": {
        "api_url": lambda: os.environ.get("GITHUB_API_URL"),
        "repo": lambda: os.environ.get("GITHUB_REPOSITORY"),
        "pr": _github_pr,
        "sha": lambda: os.environ.get("GITHUB_SHA"),
        "token_env": lambda: "GITHUB_TOKEN",
        "limit": lambda: None,
    },
    "gitlab": {
        "api_url": lambda: os.environ.get("CI_API_V4_URL"),
        "repo": lambda: os.environ.get("CI_PROJECT_ID"),
        "pr": lambda: os.environ.get("CI_MERGE_REQUEST_IID"),
        "sha": lambda: os.environ.get("CI_COMMIT_SHA"),
        "token_env": lambda: "GITLAB_TOKEN",
        "limit": lambda: None,
    },
}
ENV_NAMES = {
    "github": {"api_url": "GITHUB_API_URL", "repo": "GITHUB_REPOSITORY", "pr": "GITHUB_EVENT_PATH", "sha": "GITHUB_SHA"},
    "gitlab": {"api_url": "CI_API_V4_URL", "repo": "CI_PROJECT_ID", "pr": "CI_MERGE_REQUEST_IID", "sha": "CI_COMMIT_SHA"},
}  # fmt: skip
FLAGS = {"api_url": "--api-url", "repo": "--repo", "pr": "--pr", "sha": "--sha"}


def _need(host: str, name: str, given: str | None) -> str:
    from gpujob.errors import ConfigError

    value = given or DEFAULTS[host][name]()
    if not value:
        raise ConfigError(
            f"pr-comment: {FLAGS[name]} is not given and {ENV_NAMES[host][name]} is not set",
            hint=f"pass {FLAGS[name]} (outside {host} CI every target must be named)",
        )
    return str(value)


@click.group(name="pr-comment", help=HELP)
def command() -> None:
    pass


def _host_options(func: Any) -> Any:
    for option in reversed(
        [
            click.option("--gitlab", "host", flag_value="gitlab", help="GitLab merge request notes."),
            click.option("--github", "host", flag_value="github", help="GitHub pull request comments."),
        ]
    ):
        func = option(func)
    return func


def _body_options(func: Any) -> Any:
    options = [
        click.option("--plan", "plan_file", required=True, type=click.Path(path_type=Path, allow_dash=True),
                     help="`gpujob plan --format markdown` output ('-': stdin)."),
        click.option("--exit-code", type=int, help="Exit code of `gpujob plan` (0 none, 2 changes, 1 error)."),
        click.option("--key", default="", help="Tells several plan comments on one PR apart (e.g. a directory)."),
        click.option("--limit", type=click.IntRange(min=200), help="Max comment characters (default: the host's)."),
        click.option("--artifact-hint", default="the `gpujob-plan` artifact of this run (plan.md)",
                     help="Where the full plan is, for the note on a cut plan."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return _host_options(func)


def _body(plan_file: Path, exit_code: int | None, key: str, limit: int | None, host: str, hint: str) -> str:
    from gpujob.errors import ConfigError
    from gpujob.gitops.comment import GITHUB_LIMIT, GITLAB_LIMIT, KEY_RE, build_body

    if key and not KEY_RE.match(key):
        raise ConfigError(
            f"--key {key!r}: letters, digits, '_', '.', '/', '-' only (it goes into an HTML comment)"
        )
    try:
        text = sys.stdin.read() if str(plan_file) == "-" else plan_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{plan_file}: cannot read the plan: {exc}") from None
    cap = limit or (GITLAB_LIMIT if host == "gitlab" else GITHUB_LIMIT)
    return build_body(text, key=key, exit_code=exit_code, limit=cap, artifact_hint=hint)


@command.command(name="body", help="Print the comment body (nothing is posted).")
@_body_options
def body(plan_file: Path, exit_code: int | None, key: str, limit: int | None, host: str | None,
         artifact_hint: str) -> None:  # fmt: skip
    text = run_command(_body, plan_file, exit_code, key, limit, host or _host(), artifact_hint)
    sys.stdout.write(text)


@command.command(name="post", help="Create the marked comment, or edit it when it exists.")
@_body_options
@click.option("--api-url", help="API base (default GITHUB_API_URL / CI_API_V4_URL).")
@click.option(
    "--repo", "--project", "repo", help="GitHub owner/name, GitLab project id or path (default from CI)."
)
@click.option("--pr", help="Pull request number / merge request iid (default from CI).")
@click.option("--token-env", help="Variable holding the token (default GITHUB_TOKEN / GITLAB_TOKEN).")
def post(plan_file: Path, exit_code: int | None, key: str, limit: int | None, host: str | None,
         artifact_hint: str, api_url: str | None, repo: str | None, pr: str | None,
         token_env: str | None) -> None:  # fmt: skip
    def go() -> None:
        from gpujob.gitops.comment import marker
        from gpujob.gitops.hosts import Target, post_or_edit

        h = host or _host()
        text = _body(plan_file, exit_code, key, limit, h, artifact_hint)
        target = Target(
            h, _need(h, "api_url", api_url), _need(h, "repo", repo), token_env or DEFAULTS[h]["token_env"]()
        )
        done, cid = post_or_edit(target, _need(h, "pr", pr), text, marker(key))
        click.echo(f"pr-comment: {done} {cid} ({len(text)} characters)")

    run_command(go)


@command.command(
    name="approvals", help="Print `--approve ID` for each gpujob-approve: line of the merged PR."
)
@_host_options
@click.option("--api-url", help="API base (default GITHUB_API_URL / CI_API_V4_URL).")
@click.option(
    "--repo", "--project", "repo", help="GitHub owner/name, GitLab project id or path (default from CI)."
)
@click.option("--sha", help="The merged commit (default GITHUB_SHA / CI_COMMIT_SHA).")
@click.option("--token-env", help="Variable holding the token (default GITHUB_TOKEN / GITLAB_TOKEN).")
def approvals(host: str | None, api_url: str | None, repo: str | None, sha: str | None,
              token_env: str | None) -> None:  # fmt: skip
    def go() -> None:
        from gpujob.apply.gate import approve_flags
        from gpujob.gitops.hosts import Target, approvals_for_commit

        h = host or _host()
        target = Target(
            h, _need(h, "api_url", api_url), _need(h, "repo", repo), token_env or DEFAULTS[h]["token_env"]()
        )
        click.echo(approve_flags(approvals_for_commit(target, _need(h, "sha", sha))))

    run_command(go)
