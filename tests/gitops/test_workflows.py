"""The example pipelines: the steps the README promises, and `gpujob pr-comment` calls gpujob accepts."""

from __future__ import annotations

import shlex
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "examples" / "ci"


def load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


def runs(job: dict) -> str:
    return "\n".join(str(s.get("run", "")) for s in job["steps"])


def test_github_workflow_shape() -> None:
    wf = load(CI / "github" / "gpujob.yml")
    jobs = wf["jobs"]
    plan, apply_, audit = jobs["plan"], jobs["apply"], jobs["audit"]
    assert "gpujob validate" in runs(plan)
    assert "gpujob plan --format markdown -o plan.json" in runs(plan)
    assert "gpujob pr-comment post" in runs(plan)
    assert plan["permissions"]["pull-requests"] == "write"
    upload = next(s for s in plan["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert "plan.json" in upload["with"]["path"]
    # Apply: the saved plan, serialised team-wide, never cancelled half-way.
    assert "gpujob apply plan.json" in runs(apply_)
    assert "gpujob plan" not in runs(apply_)
    assert apply_["concurrency"] == {"group": "gpujob-apply", "cancel-in-progress": False}
    assert "gpujob audit" in runs(audit)
    assert "gpujob doctor" in runs(audit)  # nightly: API drift shows up before an apply trips on it


def test_gitlab_pipeline_shape() -> None:
    ci = load(CI / "gitlab" / ".gitlab-ci.yml")
    plan_script = "\n".join(ci["plan"]["script"])
    assert (
        "gpujob plan --format markdown -o plan.json" in plan_script
        and "gpujob pr-comment post --gitlab" in plan_script
    )
    assert "plan.json" in ci["plan"]["artifacts"]["paths"]
    assert ci["apply"]["resource_group"] == "gpujob-apply"
    assert "gpujob apply plan.json" in "\n".join(ci["apply"]["script"])
    assert "gpujob validate" in ci["validate"]["script"]
    assert any("gpujob doctor" in line for line in ci["audit"]["script"])


def _calls(text: str) -> list[list[str]]:
    """Each `gpujob pr-comment ...` command in a pipeline, split into arguments."""
    out = []
    joined = text.replace("\\\n", " ")
    for chunk in joined.split("gpujob pr-comment")[1:]:
        lexer = shlex.shlex(chunk.split("\n")[0], posix=True, punctuation_chars=True)
        args: list[str] = []
        for token in lexer:
            if token in (")", ";", "|", "&&", "||"):
                break
            args.append(token)
        out.append(args)
    return out


def test_pipeline_commands_parse_with_gpujob() -> None:
    """Every `gpujob pr-comment` call written in the pipelines is accepted by gpujob's parser, and
    nothing calls a script a user's repository does not have."""
    from gpujob.cli.cmd_pr_comment import command

    wf = load(CI / "github" / "gpujob.yml")
    ci = load(CI / "gitlab" / ".gitlab-ci.yml")
    texts = [runs(j) for j in wf["jobs"].values()] + ["\n".join(ci[k]["script"]) for k in ("plan", "apply")]
    calls = [c for t in texts for c in _calls(t)]
    assert len(calls) >= 4 and {c[0] for c in calls} == {"post", "approvals"}
    for call in calls:
        args = [a if not a.startswith("$") and "${{" not in a else "1" for a in call]
        sub = command.commands[args[0]]
        ctx = sub.make_context(f"pr-comment {args[0]}", args[1:], resilient_parsing=False)
        assert ctx.params, call
    raw = (CI / "github" / "gpujob.yml").read_text() + (CI / "gitlab" / ".gitlab-ci.yml").read_text()
    assert "examples/ci" not in raw and "pr_comment.py" not in raw
    assert "gpujob @ git+https://" in raw and "gpujob==" not in raw  # installed from the repository, pinned


def test_pipelines_keep_state_in_the_database_not_a_cache() -> None:
    wf = load(CI / "github" / "gpujob.yml")
    jobs = wf["jobs"]
    assert jobs["apply"]["env"]["GPUJOB_STATE_URL"] == "${{ secrets.GPUJOB_STATE_URL }}"
    assert "GPUJOB_STATE_KEY" in jobs["apply"]["env"]
    for name in ("plan", "audit"):  # may read the records, may not write or unseal the SSH key
        assert jobs[name]["env"]["GPUJOB_STATE_URL"] == "${{ secrets.GPUJOB_STATE_URL_READONLY }}"
        assert "GPUJOB_STATE_KEY" not in jobs[name]["env"]
    text = (CI / "github" / "gpujob.yml").read_text() + (CI / "gitlab" / ".gitlab-ci.yml").read_text()
    assert "actions/cache" not in text and "cache:" not in text and ".gpujob" not in text
    ci = load(CI / "gitlab" / ".gitlab-ci.yml")
    assert ci["plan"]["variables"]["GPUJOB_STATE_URL"] == "$GPUJOB_STATE_URL_READONLY"
    assert "GPUJOB_STATE_URL" not in ci["apply"].get("variables", {})  # the protected project variable
