"""`gpujob pr-comment`, run as CI runs it (a subprocess), against a local fake of the GitHub and GitLab
APIs on loopback (real HTTP; never the real services)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.gitops.gitops_fakehost import FakeHost

MARK = "<!-- gpujob-plan -->"

SHORT_PLAN = """## gpujob plan

**Plan: 1 to create, 0 to destroy.**

| Job | Action | $/h |
|---|---|---|
| bert | create pod | +$1.64 |
"""

CI_VARS = ("GITHUB_API_URL", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH", "GITHUB_SHA", "GITHUB_TOKEN",
           "GITLAB_CI", "CI_API_V4_URL", "CI_PROJECT_ID", "CI_MERGE_REQUEST_IID", "CI_COMMIT_SHA", "GITLAB_TOKEN")  # fmt: skip


def long_plan(jobs: int, rows: int = 30) -> str:
    out = ["## gpujob plan", "", "**Plan: many changes.**", ""]
    for s in range(jobs):
        out += ["<details>", f"<summary>job-{s}</summary>", "", "```text"]
        out += [f"  row {s}.{r}: volume disk 100 GB (stopped, 2×) $0.0278/h" for r in range(rows)]
        out += ["```", "", "</details>", ""]
    return "\n".join(out) + "\n"


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in CI_VARS}
    return subprocess.run([sys.executable, "-m", "gpujob", "pr-comment", *args], capture_output=True,
                          text=True, env={**base, **(env or {})}, cwd=cwd, timeout=60)  # fmt: skip


def test_body_keeps_the_plans_one_heading(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    res = run("body", "--plan", str(tmp_path / "plan.md"), "--exit-code", "2")
    assert res.returncode == 0, res.stderr
    body = res.stdout
    assert body.startswith(MARK + "\n## gpujob plan\n\n_changes to apply on merge_\n")
    assert [ln for ln in body.splitlines() if ln.startswith("#")] == ["## gpujob plan"]
    assert "| bert | create pod | +$1.64 |" in body and "<details>" not in body
    keyed = run("body", "--plan", str(tmp_path / "plan.md"), "--key", "infra/gpu").stdout
    assert keyed.startswith("<!-- gpujob-plan:infra/gpu -->\n## gpujob plan · infra/gpu\n")
    bad = run("body", "--plan", str(tmp_path / "plan.md"), "--key", "x --><script>")
    assert bad.returncode == 1 and "--key" in bad.stderr


def test_long_plan_is_not_folded_again(tmp_path: Path) -> None:
    plan = long_plan(5)
    (tmp_path / "plan.md").write_text(plan)
    body = run("body", "--plan", str(tmp_path / "plan.md")).stdout
    assert body.count("<details>") == 5  # the plan's own folds, no outer one: one click to a job
    assert "row 4.29" in body and "truncated" not in body


def test_huge_plan_cut_under_the_limit_with_nothing_left_open(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text(long_plan(400))  # ~1.1 MB
    body = run("body", "--plan", str(tmp_path / "plan.md")).stdout
    assert 60000 < len(body) <= 65536  # uses the room it has
    assert "**Plan truncated**: showing" in body and "gpujob-plan` artifact" in body
    assert body.count("```") % 2 == 0  # a cut never leaves a code block open
    assert body.count("<details>") == body.count("</details>")
    assert body.rstrip().endswith("</sub>")
    small = run("body", "--plan", str(tmp_path / "plan.md"), "--limit", "5000").stdout
    assert len(small) <= 5000 and MARK in small and small.count("```") % 2 == 0
    gitlab = run("body", "--gitlab", "--plan", str(tmp_path / "plan.md")).stdout
    assert len(gitlab) > 65536 and "truncated" not in gitlab  # GitLab's limit is 1,000,000


def test_github_creates_then_edits_one_comment(tmp_path: Path, fake_host: FakeHost) -> None:
    fake_host.comments = [{"id": i, "body": f"unrelated review comment {i}"} for i in range(1, 131)]
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    args = ["post", "--plan", str(tmp_path / "plan.md"), "--api-url", fake_host.url, "--repo", "acme/train",
            "--pr", "7"]  # fmt: skip
    env = {"GITHUB_TOKEN": "t0ken"}
    first = run(*args, "--exit-code", "2", env=env)
    assert first.returncode == 0, first.stderr
    assert "created comment" in first.stdout and "t0ken" not in first.stdout + first.stderr
    assert fake_host.writes() == [("POST", "/repos/acme/train/issues/7/comments")]
    created = fake_host.comments[-1]
    # Second push: the plan changed; the same comment is edited (found on page 2), none is added.
    (tmp_path / "plan.md").write_text(SHORT_PLAN.replace("1.64", "2.99"))
    second = run(*args, "--exit-code", "2", env=env)
    assert second.returncode == 0, second.stderr
    assert f"updated comment {created['id']}" in second.stdout
    assert fake_host.writes()[-1] == ("PATCH", f"/repos/acme/train/issues/comments/{created['id']}")
    marked = [c for c in fake_host.comments if MARK in c["body"]]
    assert len(marked) == 1 and "+$2.99" in marked[0]["body"] and len(fake_host.comments) == 131
    pages = [p for m, p, _, _ in fake_host.requests if m == "GET"]
    assert len(pages) >= 3  # 130 unrelated comments: paginated listing
    headers = {k.lower(): v for k, v in fake_host.requests[-1][2].items()}
    assert headers["authorization"] == "Bearer t0ken" and headers["accept"] == "application/vnd.github+json"


def test_github_defaults_come_from_the_actions_environment(tmp_path: Path, fake_host: FakeHost) -> None:
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    (tmp_path / "event.json").write_text(json.dumps({"pull_request": {"number": 12}}))
    env = {"GITHUB_TOKEN": "t0ken", "GITHUB_API_URL": fake_host.url, "GITHUB_REPOSITORY": "acme/train",
           "GITHUB_EVENT_PATH": str(tmp_path / "event.json")}  # fmt: skip
    res = run("post", "--plan", str(tmp_path / "plan.md"), env=env)
    assert res.returncode == 0, res.stderr
    assert fake_host.writes() == [("POST", "/repos/acme/train/issues/12/comments")]
    missing = run("post", "--plan", str(tmp_path / "plan.md"), env={"GITHUB_TOKEN": "t0ken"})
    assert (
        missing.returncode == 1 and "--api-url is not given and GITHUB_API_URL is not set" in missing.stderr
    )


def test_gitlab_creates_then_edits_one_note(tmp_path: Path, fake_host: FakeHost) -> None:
    fake_host.comments = [{"id": 5, "body": "a reviewer's note"}]
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    env = {"GITLAB_TOKEN": "t0ken", "GITLAB_CI": "true", "CI_API_V4_URL": fake_host.url,
           "CI_PROJECT_ID": "acme/train", "CI_MERGE_REQUEST_IID": "3"}  # fmt: skip
    first = run("post", "--plan", str(tmp_path / "plan.md"), "--exit-code", "2", env=env)
    assert first.returncode == 0, first.stderr
    assert fake_host.writes() == [("POST", "/projects/acme%2Ftrain/merge_requests/3/notes")]
    note = fake_host.comments[-1]
    (tmp_path / "plan.md").write_text(SHORT_PLAN.replace("create pod", "replace pod"))
    second = run("post", "--plan", str(tmp_path / "plan.md"), env=env)
    assert second.returncode == 0, second.stderr
    assert f"updated note {note['id']}" in second.stdout
    assert fake_host.writes()[-1] == ("PUT", f"/projects/acme%2Ftrain/merge_requests/3/notes/{note['id']}")
    assert [c["body"].count(MARK) for c in fake_host.comments] == [0, 1]
    assert "replace pod" in fake_host.comments[-1]["body"]
    headers = {k.lower(): v for k, v in fake_host.requests[-1][2].items()}
    assert headers["private-token"] == "t0ken"


def _post_to_pr_1(tmp_path: Path, fake_host: FakeHost) -> list[str]:
    """`post` of tmp_path/plan.md to PR 1 of a/b on the fake host, everything given as options."""
    return [
        "post",
        "--plan",
        str(tmp_path / "plan.md"),
        "--api-url",
        fake_host.url,
        "--repo",
        "a/b",
        "--pr",
        "1",
    ]


def test_someone_elses_comment_with_the_marker_is_passed_over(tmp_path: Path, fake_host: FakeHost) -> None:
    fake_host.comments = [
        {"id": 1, "author": "mallory", "body": f"{MARK}\nlooks like a plan"},
        {"id": 2, "author": "alice", "body": f"see {MARK} above"},  # quotes it: not a plan comment
    ]
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    args = _post_to_pr_1(tmp_path, fake_host)
    first = run(*args, env={"GITHUB_TOKEN": "t0ken"})
    assert first.returncode == 0, first.stderr
    assert fake_host.writes() == [
        ("PATCH", "/repos/a/b/issues/comments/1"),
        ("POST", "/repos/a/b/issues/1/comments"),
    ]
    assert fake_host.comments[0]["body"] == f"{MARK}\nlooks like a plan"  # untouched
    ours = fake_host.comments[-1]
    second = run(*args, env={"GITHUB_TOKEN": "t0ken"})
    assert f"updated comment {ours['id']}" in second.stdout and len(fake_host.comments) == 3


def test_missing_token_and_http_errors_fail_clearly(tmp_path: Path, fake_host: FakeHost) -> None:
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    args = _post_to_pr_1(tmp_path, fake_host)
    res = run(*args)
    assert res.returncode == 1 and "GITHUB_TOKEN is not set" in res.stderr
    res = run(*args, env={"GITHUB_TOKEN": "wrong-value"})
    assert res.returncode == 1 and "HTTP 401" in res.stderr and "wrong-value" not in res.stderr
    assert "Traceback" not in res.stderr


def test_approvals_from_the_merged_pr(fake_host: FakeHost) -> None:
    fake_host.pulls["abc123"] = [
        {"number": 7, "body": "Tear down the sweep.\n\ngpujob-approve: sweep.pod.terminate, sweep.network_volume.delete-volume\n"
                              "/gpujob approve render.snapshot.delete-snapshot\nnot an approve line; rm -rf /"},
    ]  # fmt: skip
    res = run("approvals", "--api-url", fake_host.url, "--repo", "acme/train", "--sha", "abc123",
              env={"GITHUB_TOKEN": "t0ken"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [
        "--approve", "sweep.pod.terminate", "--approve", "sweep.network_volume.delete-volume",
        "--approve", "render.snapshot.delete-snapshot",
    ]  # fmt: skip
    fake_host.pulls["def456"] = [
        {"iid": 3, "description": "gpujob-approve: vit.pod.replace `$(rm -rf ~)` echo"}
    ]
    res = run("approvals", "--gitlab", "--api-url", fake_host.url, "--project", "acme/train", "--sha", "def456",
              env={"GITLAB_TOKEN": "t0ken"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["--approve", "vit.pod.replace"]  # the rest is no action id


def test_an_approval_line_never_carries_the_unverified_override(fake_host: FakeHost) -> None:
    fake_host.pulls["abc124"] = [
        {"number": 8, "body": "gpujob-approve: sweep.pod.terminate sweep.pod.terminate.unverified\n"}
    ]
    res = run(
        "approvals", "--api-url", fake_host.url, "--repo", "acme/train", "--sha", "abc124",
        env={"GITHUB_TOKEN": "t0ken"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["--approve", "sweep.pod.terminate"]
