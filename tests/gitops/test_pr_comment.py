"""The CI example's comment script, run as CI runs it (a subprocess), against a local fake host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.gitops.gitops_fakehost import FakeHost

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "ci" / "pr_comment.py"
MARK = "<!-- gpujob-plan -->"

SHORT_PLAN = """## gpujob plan: 1 to create, +$1.64/h

| Job | Action | $/h |
|---|---|---|
| bert | create pod | +$1.64 |
"""


def long_plan(sections: int, rows: int = 30) -> str:
    out = ["## gpujob plan: many changes, +$99.00/h", "", "Summary line.", ""]
    for s in range(sections):
        out.append(f"## job-{s}")
        out.append("```text")
        out += [f"  row {s}.{r}: volume disk 100 GB (stopped, 2×) $0.0278/h" for r in range(rows)]
        out.append("```")
    return "\n".join(out) + "\n"


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=60,
    )


def test_short_plan_inline(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    res = run("body", "--plan", str(tmp_path / "plan.md"), "--exit-code", "2")
    assert res.returncode == 0, res.stderr
    body = res.stdout
    assert body.startswith(MARK + "\n### gpujob plan\n_changes to apply on merge_")
    assert "| bert | create pod | +$1.64 |" in body and "<details>" not in body


def test_long_plan_folded_under_summary(tmp_path: Path) -> None:
    plan = long_plan(5)
    (tmp_path / "plan.md").write_text(plan)
    body = run("body", "--plan", str(tmp_path / "plan.md")).stdout
    n = len(plan.rstrip().splitlines())
    before, sep, inside = body.partition(f"<details><summary>Full plan ({n} lines)</summary>")
    assert sep
    assert "## gpujob plan: many changes" in before and "## job-0" not in before
    assert "row 4.29" in inside and "</details>" in inside and "truncated" not in body


def test_huge_plan_truncated_under_limit(tmp_path: Path) -> None:
    plan = long_plan(400)  # ~1.1 MB
    (tmp_path / "plan.md").write_text(plan)
    body = run("body", "--plan", str(tmp_path / "plan.md")).stdout
    assert len(body) <= 65536 and len(body) > 60000  # uses the room it has
    assert "**Plan truncated**: showing" in body and "gpujob-plan` artifact" in body
    folded = body.split("<details>", 1)[1].split("</details>", 1)[0]
    assert folded.count("```") % 2 == 0  # a cut never leaves a code block open
    assert body.rstrip().endswith("</sub>")
    # A tighter host limit is honoured too.
    small = run("body", "--plan", str(tmp_path / "plan.md"), "--limit", "5000").stdout
    assert len(small) <= 5000 and MARK in small


def test_github_creates_then_updates_one_comment(tmp_path: Path, fake_host: FakeHost) -> None:
    fake_host.comments = [{"id": i, "body": f"unrelated review comment {i}"} for i in range(1, 131)]
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    args = [
        "post",
        "--plan",
        str(tmp_path / "plan.md"),
        "--api-url",
        fake_host.url,
        "--repo",
        "acme/train",
        "--pr",
        "7",
    ]
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
    assert len(marked) == 1 and "+$2.99" in marked[0]["body"]
    pages = [p for m, p, _, _ in fake_host.requests if m == "GET"]
    assert len(pages) >= 3  # 130 unrelated comments: paginated listing
    headers = fake_host.requests[-1][2]
    assert headers["Authorization"] == "Bearer t0ken" and headers["Accept"] == "application/vnd.github+json"


def test_gitlab_notes(tmp_path: Path, fake_host: FakeHost) -> None:
    fake_host.comments = [{"id": 5, "body": f"{MARK}\nold plan"}]
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    res = run("post", "--gitlab", "--plan", str(tmp_path / "plan.md"), "--api-url", fake_host.url,
              "--project", "acme/train", "--pr", "3", env={"GITLAB_TOKEN": "t0ken"})  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert fake_host.writes() == [("PUT", "/projects/acme%2Ftrain/merge_requests/3/notes/5")]
    assert "create pod" in fake_host.comments[0]["body"]


def test_missing_token_and_http_errors_fail_clearly(tmp_path: Path, fake_host: FakeHost) -> None:
    (tmp_path / "plan.md").write_text(SHORT_PLAN)
    args = [
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
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    res = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60
    )
    assert res.returncode != 0 and "GITHUB_TOKEN is not set" in res.stderr
    res = run(*args, env={"GITHUB_TOKEN": "wrong-value"})
    assert res.returncode != 0 and "HTTP 401" in res.stderr and "wrong-value" not in res.stderr


def test_approvals_from_merged_pr(fake_host: FakeHost) -> None:
    fake_host.pulls["abc123"] = [
        {"number": 7, "body": "Tear down the sweep.\n\ngpujob-approve: sweep.pod.terminate, sweep.network_volume.delete-volume\n"
                              "/gpujob approve render.snapshot.delete-snapshot\nnot an approve line; rm -rf /"},
    ]  # fmt: skip
    res = run(
        "approvals",
        "--api-url",
        fake_host.url,
        "--repo",
        "acme/train",
        "--sha",
        "abc123",
        env={"GITHUB_TOKEN": "t0ken"},
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [
        "--approve", "sweep.pod.terminate", "--approve", "sweep.network_volume.delete-volume",
        "--approve", "render.snapshot.delete-snapshot",
    ]  # fmt: skip
