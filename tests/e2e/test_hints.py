"""Every hint the CLI prints in these scenarios is a command that works as printed: each is taken from
the output of a real run against the simulator and run in a fresh `bash -c` in the same directory and
environment. A hint that depends on a condition ("if that process is gone", "remove it, then") is run
once the condition holds, and one that shows a state is checked to show it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.e2e.e2e_support import CANARY_NAME, Project, poll
from tests.e2e.hint_support import printed_hints, run_hint

TERM = "quickstart.pod.terminate"
DELVOL = "quickstart.network_volume.delete-volume"
EVERY_ID = f"--approve {TERM} --approve {DELVOL}"
GARBAGE = "'echo garbage > /workspace/ckpt/step_999999.json'"


def gj_in(where: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpujob", *args],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def checkpointed(p: Project) -> None:
    poll("a checkpoint", lambda: (p.status().get("run") or {}).get("last_checkpoint"))


def test_no_job_file_hints_init_or_the_job_file_nearby(project: Project, tmp_path: Path) -> None:
    env = project.env
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = gj_in(empty, env, "plan")
    assert refused.returncode == 1 and "no job files found" in refused.stderr
    assert printed_hints(refused) == ["gpujob init"]
    run_hint("gpujob init", empty, env)
    assert gj_in(empty, env, "validate").returncode == 0  # it wrote a job file here, as it said
    nearby = gj_in(tmp_path, env, "validate")  # quickstart/ and empty/ each hold a job.yaml
    name_one, init = printed_hints(nearby, at_least=2)
    assert name_one == "gpujob validate empty/job.yaml" and init == "gpujob init"  # the first, sorted
    run_hint(name_one, tmp_path, env)
    run_hint(init, tmp_path, env)
    assert (tmp_path / "job.yaml").is_file()


def test_every_hint_of_the_lifecycle_runs_as_printed(project: Project) -> None:
    p = project
    ran: list[str] = []

    def run(cmd: str, **kw: object) -> subprocess.CompletedProcess[str]:
        ran.append(cmd)
        return run_hint(cmd, p.dir, p.env, **kw)  # type: ignore[arg-type]

    # A missing secret: nothing is made; exported as the hint says, its command applies.
    no_secret = {k: v for k, v in p.env.items() if k != CANARY_NAME}
    refused = gj_in(p.dir, no_secret, "apply", "--auto-approve")
    assert refused.returncode == 1 and f"fix: export {CANARY_NAME}=... before apply" in refused.stdout
    assert printed_hints(refused) == ["gpujob apply --auto-approve"]
    assert p.sim_objects("pods") == []
    run("gpujob apply --auto-approve")
    assert len(p.live("pods")) == 1

    # A locked job whose holder runs here: the hint stops that process (force-unlock would refuse it).
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from gpujob.lock import job_lock\n"
         "with job_lock(Path('.gpujob'), 'quickstart', command='held by the test'):\n"
         "    print('held', flush=True); sys.stdin.read()"],
        cwd=p.dir, env=p.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        locked = p.gj("apply", "--auto-approve", check=False)
        assert locked.returncode == 1 and "is locked by" in locked.stderr
        assert "force-unlock" not in locked.stderr  # it would refuse a live holder
        assert printed_hints(locked, at_least=0) == []  # no gpujob command can help here
        stop = f"kill {holder.pid}"
        assert f"`{stop}`" in locked.stderr
        run(stop)
        assert holder.wait(timeout=30) != 0  # ended by the signal, holding nothing any more
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert p.gj("apply", "--auto-approve").returncode == 0  # the job is free again

    # A stale saved plan: make it again, review, apply it.
    assert p.gj("plan", "-o", "plan.json").returncode == 0
    job = p.dir / "job.yaml"
    job.write_text(job.read_text() + "# edited after planning\n")
    stale = p.gj("apply", "plan.json", check=False)
    assert stale.returncode == 1 and "stale" in stale.stderr
    assert printed_hints(stale, at_least=2) == ["gpujob plan -o plan.json", "gpujob apply plan.json"]
    for cmd in printed_hints(stale):
        run(cmd)

    # A checkpoint that fails checkpoint.verify: pull shows what the check printed, and its hints look
    # at the machine and, once the file is gone, pull again.
    checkpointed(p)
    p.gj("ssh", "--", "sh", "-c", GARBAGE)
    failed = p.gj("pull", check=False)
    assert failed.returncode == 1
    assert "checkpoint.verify failed on it (python3 verify_ckpt.py {file}); it printed:" in failed.stdout
    assert re.search(r"\| .*step_999999\.json: cannot load: ", failed.stdout), failed.stdout
    look, again = printed_hints(failed, at_least=2)
    assert look == "gpujob ssh -- ls -la /workspace/ckpt" and again == "gpujob pull"
    assert "step_999999.json" in run(look).stdout  # it shows the file the hint is about
    p.gj("ssh", "--", "rm", "-f", "/workspace/ckpt/step_999999.json")
    assert "all verified" in run(again).stdout

    # Destroy in CI: without flags, and after a partial approval, the hint is the whole command line
    # CI needs, every gated id included (approvals are not remembered).
    bare = p.gj("destroy", check=False)
    assert bare.returncode == 1 and "no terminal" in bare.stderr
    partial = p.gj("destroy", "--auto-approve", "--approve", TERM, check=False)
    assert partial.returncode == 1 and f"need explicit approval: {DELVOL} " in partial.stderr
    (whole,) = printed_hints(bare)
    assert printed_hints(partial) == [whole] and whole == f"gpujob destroy --auto-approve {EVERY_ID}"
    assert len(p.live("pods")) == 1 and len(p.live("volumes")) == 1  # neither touched anything
    assert "Destroy finished: 3 done, 0 failed" in run(whole).stderr
    assert p.live("pods") == [] and p.live("volumes") == []

    # A destroy stopped by a failed verify: its step's hints, then its Re-run line, finish the job.
    # (The destroy above is remembered: only --recreate brings the job back.)
    assert "apply --recreate" in p.gj("apply", "--auto-approve", check=False).stderr
    p.gj("apply", "--auto-approve", "--recreate")
    checkpointed(p)
    # A new volume under the same name: the deleted one's pull record is not shown for it.
    assert "last_pull" not in p.status()
    assert "no pull on record" in p.gj("destroy", check=False).stdout
    p.gj("ssh", "--", "sh", "-c", GARBAGE)
    stopped = p.gj("destroy", "--auto-approve", "--approve", TERM, "--approve", DELVOL, check=False)
    assert (
        stopped.returncode == 1 and "failed verification: step_999999.json (verify said: " in stopped.stderr
    )
    cmds = printed_hints(stopped, at_least=3)
    assert len(cmds) == 3, stopped.stdout + stopped.stderr
    look, again, rerun = cmds
    assert (look, again) == ("gpujob ssh -- ls -la /workspace/ckpt", "gpujob pull")
    assert rerun == f"gpujob destroy --auto-approve {EVERY_ID}"
    assert "step_999999.json" in run(look).stdout
    p.gj("ssh", "--", "rm", "-f", "/workspace/ckpt/step_999999.json")
    run(again)
    assert "Destroy finished" in run(rerun).stderr
    assert p.live("pods") == [] and p.live("volumes") == []
    assert len(ran) == 10, ran  # every hint above ran, the kill included


def test_hints_name_the_job_file_when_it_is_not_the_default(project: Project) -> None:
    p = project
    jobs = p.dir / "jobs"
    jobs.mkdir()
    for name in ("train.py", "verify_ckpt.py"):  # the job file's paths are relative to its directory
        shutil.copy(p.dir / name, jobs / name)
    os.replace(p.dir / "job.yaml", jobs / "qs.yaml")
    p.gj("apply", "jobs/qs.yaml", "--auto-approve")
    checkpointed_at = lambda: (json_status(p, "jobs/qs.yaml").get("run") or {}).get("last_checkpoint")  # noqa: E731
    poll("a checkpoint", checkpointed_at)
    p.gj("ssh", "-f", "jobs/qs.yaml", "--", "sh", "-c", GARBAGE)
    failed = p.gj("pull", "jobs/qs.yaml", check=False)
    look, again = printed_hints(failed, at_least=2)
    assert (
        look == "gpujob ssh -f jobs/qs.yaml -- ls -la /workspace/ckpt" and again == "gpujob pull jobs/qs.yaml"
    )
    assert "step_999999.json" in run_hint(look, p.dir, p.env).stdout
    p.gj("ssh", "-f", "jobs/qs.yaml", "--", "rm", "-f", "/workspace/ckpt/step_999999.json")
    run_hint(again, p.dir, p.env)
    partial = p.gj("destroy", "jobs/qs.yaml", "--auto-approve", "--approve", TERM, check=False)
    (whole,) = printed_hints(partial)
    assert whole == f"gpujob destroy jobs/qs.yaml --auto-approve {EVERY_ID}"
    run_hint(whole, p.dir, p.env)
    assert p.live("pods") == [] and p.live("volumes") == []


def json_status(p: Project, job_file: str) -> dict:  # type: ignore[type-arg]
    import json

    return dict(json.loads(p.gj("status", job_file, "--format", "json").stdout)[0])
