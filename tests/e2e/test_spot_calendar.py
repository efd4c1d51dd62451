"""The quickstart's spot scenarios through the CLI with RunPod's GraphQL live and gone (the simulator's
`runpod_graphql` mode, as `gpujob sim up --runpod-graphql`): `spot: true` plans a spot pod while GraphQL
lives and is blocked by an error finding once it is gone; `spot: prefer` applies as one spot pod, or one
on-demand pod, and the next plan is clean either way; the create sends the container disk the plan
priced; a stopped spot pod that can no longer resume is replaced by an on-demand pod on the same network
volume; no API key ever leaves the Authorization header."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gpujob.sim.testing import Sim, running_simulator
from tests.e2e.e2e_support import QUICKSTART, Project
from tests.sim_pods import pod_simulator


@pytest.fixture(params=["live", "gone"])
def calendar(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    with pod_simulator(tmp_path / "sim", "the end-to-end tests", runpod_graphql=request.param) as sim:
        yield _project(sim, tmp_path)


def _project(sim: Sim, tmp_path: Path) -> Project:
    d = tmp_path / "quickstart"
    d.mkdir()
    for name in ("train.py", "verify_ckpt.py"):
        shutil.copy(QUICKSTART / name, d / name)
    (d / "job.yaml").write_text((QUICKSTART / "job.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUJOB_")}
    env.update(sim.env)
    env.update({"CI": "true", "NO_COLOR": "1"})
    return Project(dir=d, env=env, sim=sim)


def gone(p: Project) -> bool:
    return p.sim.engine.options.runpod_graphql == "gone"


def edit(p: Project, old: str, new: str) -> None:
    path = p.dir / "job.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def plan_json(p: Project) -> tuple[int, dict[str, Any]]:
    done = p.gj("plan", "--format", "json", check=False)
    return done.returncode, json.loads(done.stdout[done.stdout.find("{") :])


def findings(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for j in plan["jobs"] for f in j["findings"]}


def record(sim: Sim) -> list[tuple[str, str, str]]:
    """Every request the simulator receives: method, path with its query, and the body as sent."""
    seen: list[tuple[str, str, str]] = []
    for server in sim.server._servers:
        inner: Callable[[Any], Any] = server.dispatch

        def dispatch(req: Any, inner: Callable[[Any], Any] = inner) -> Any:
            seen.append((req.method, f"{req.path}?{json.dumps(req.query)}", req.raw.decode(errors="replace")))
            return inner(req)

        server.dispatch = dispatch
    return seen


def test_spot_true_plans_spot_while_graphql_lives_and_is_blocked_once_it_is_gone(calendar: Project) -> None:
    p = calendar
    code, plan = plan_json(p)
    found = findings(plan)
    if gone(p):
        assert code == 1, plan
        err = found["spot-retired"]
        assert err["severity"] == "error" and "needs a spot create" in err["summary"]
        assert "HTTP 410 Gone" in err["summary"] and "prefer" in err["fix"] and "false" in err["fix"]
        rp8 = found["RP8"]  # the balance: a note, never an error
        assert rp8["severity"] == "info" and "no longer reports the balance" in rp8["summary"]
        refused = p.gj("apply", "--auto-approve", check=False)
        assert refused.returncode != 0 and p.live("pods") == []
    else:
        assert code == 0 and "spot-retired" not in found and found["spot-graphql"]["severity"] == "info"
        assert "early 2027" in found["spot-graphql"]["summary"]


def test_spot_prefer_is_one_pod_and_the_next_plan_is_clean(calendar: Project) -> None:
    p = calendar
    edit(p, "  spot: true\n", "  spot: prefer\n")
    edit(p, "  container_disk_gb: 20\n", "")  # unset: the plan prices the profile's default
    seen = record(p.sim)
    code, plan = plan_json(p)
    assert code == 0, plan
    found = findings(plan)
    if gone(p):
        note = found["spot-prefer"]
        assert (
            note["severity"] == "info"
            and "on-demand" in note["summary"]
            and "more than spot" in note["summary"]
        )
    p.gj("apply", "--auto-approve")
    (pod,) = p.live("pods")
    assert pod["interruptible"] is (not gone(p))  # spot while it is offered, on-demand once it is gone
    assert pod["disk"] == 5  # what the plan priced (profile container_disk default_gb), not the platform's 50
    again = p.gj("plan", "--detailed-exitcode", check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    audit = json.loads(p.gj("audit", "--platform", "runpod", "--format", "json").stdout)
    (item,) = [i for i in audit["items"] if i["kind"] == "pod"]
    assert "container disk 5 GB" in json.dumps(item["meters"])  # plan, create and audit agree
    key = p.env["RUNPOD_API_KEY"]
    assert seen and not [s for s in seen if key in s[1] or key in s[2]]  # only ever in the header
    assert not any(key in out for out in p.outputs)


def test_a_stopped_spot_pod_is_replaced_on_demand_once_spot_is_gone(tmp_path: Path) -> None:
    mode = os.environ.get("GPUJOB_SIM_PODS", "auto")
    with running_simulator(tmp_path / "sim", provision_seconds=0.05, boot_seconds=0.0, pod_mode=mode) as sim:
        p = _project(sim, tmp_path)
        p.gj("apply", "--auto-approve")
        (old,) = p.live("pods")
        assert old["interruptible"]
        volume = old["mounts"]["network"][0]["volumeId"]
        assert sim.inject("preempt", pod_id=old["id"], grace=0)["preempted"] == [old["id"]]
        sim.engine.options.runpod_graphql = "gone"  # 2027 arrives while the pod is down

        code, plan = plan_json(p)  # spot: true cannot resume it: blocked, and says why
        assert code == 1 and "needs a spot resume" in findings(plan)["spot-retired"]["summary"]

        edit(p, "  spot: true\n", "  spot: prefer\n")
        code, plan = plan_json(p)
        assert code == 0, plan
        (replace,) = [a for j in plan["jobs"] for a in j["actions"] if a["kind"] == "replace"]
        assert {c["path"]: (c["before"], c["after"]) for c in replace["changes"]}["spot"] == (True, False)
        assert replace["billing"]["summary"] and replace["data"]["summary"]  # the money and the data line
        refused = p.gj("apply", "--auto-approve", check=False)
        assert refused.returncode != 0 and "--approve quickstart.pod.replace" in refused.stderr
        p.gj("apply", "--auto-approve", "--approve", "quickstart.pod.replace")
        (new,) = p.live("pods")
        assert new["id"] != old["id"] and not new["interruptible"]
        assert (
            new["mounts"]["network"][0]["volumeId"] == volume
        )  # the same network volume, checkpoints and all
        assert p.gj("plan", "--detailed-exitcode", check=False).returncode == 0
