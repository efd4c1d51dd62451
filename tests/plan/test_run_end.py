"""Why a run ended, from inside the machine (gpujob.ssh.cgroup, U3/U41), and what the plan does with it:
an out-of-memory kill is relaunched once, and a second in a row is not relaunched into the same wall."""

from __future__ import annotations

from collections.abc import Callable

from gpujob.plan.model import ActionKind
from gpujob.plan.planner import build_plan
from gpujob.ssh.cgroup import ended_how, human_bytes, readings
from tests.plan.plan_helpers import NOW, RUNPOD_JOB, live, pod, volume
from tests.plan.test_trap_findings import NV, run_fact

Write = Callable[..., object]
OOMED = "killed: out of memory (limit 32 GiB; the cgroup's oom_kill counter rose by 1)"


def test_the_cgroup_readings_tell_an_oom_from_a_reboot_from_a_signal() -> None:
    kv = {
        "mem_max": str(32 * 1024**3),
        "oom_kill": "3",
        "oom_kill_start": "2",
        "ooms": "1",
        "boot_id": "b",
        "boot_id_start": "b",
    }
    r = readings(kv)
    assert r == {"memory_limit": 32 * 1024**3, "oom_kills": 1, "earlier_ooms": 1, "rebooted": False}
    common = {"alive": False, "started": True, "memory_limit": 32 * 1024**3}
    assert ended_how(exit_code=137, oom_kills=1, rebooted=False, **common) == OOMED  # type: ignore[arg-type]
    assert ended_how(exit_code=None, oom_kills=0, rebooted=True, **common).startswith("machine rebooted")  # type: ignore[arg-type]
    assert ended_how(exit_code=143, oom_kills=0, rebooted=False, **common).startswith(  # type: ignore[arg-type]
        "killed by a signal (SIGTERM, exit 143; not an OOM kill)"
    )
    assert ended_how(exit_code=1, oom_kills=0, rebooted=False, **common) is None  # type: ignore[arg-type]
    assert (
        ended_how(exit_code=None, oom_kills=None, rebooted=False, alive=True, started=True, memory_limit=None)
        is None
    )
    assert (
        readings({"mem_max": "", "oom_kill": "", "boot_id": "a"})["oom_kills"] is None
    )  # no cgroup: no claim
    assert human_bytes(32 * 1024**3) == "32 GiB" and human_bytes(1536 * 1024**2) == "1.5 GiB"


def test_an_oom_killed_run_is_relaunched_once_and_not_a_second_time(write_job: Write) -> None:
    once = run_fact(state="exited", exit_code=137, ended=OOMED)
    plan = build_plan([write_job(RUNPOD_JOB)], live(pod(**NV), volume(), runs=once), now=NOW, env={})
    (launch,) = [a for a in plan.all_actions() if a.kind is ActionKind.LAUNCH]
    assert launch.reasons[0].startswith(f"the run was {OOMED}: relaunched once")
    assert not [f for f in plan.all_findings() if f.code == "run-failed"]
    twice = run_fact(state="exited", exit_code=137, ended=OOMED, earlier_ooms=1)
    plan = build_plan([write_job(RUNPOD_JOB)], live(pod(**NV), volume(), runs=twice), now=NOW, env={})
    assert not [a for a in plan.all_actions() if a.kind is ActionKind.LAUNCH]
    (f,) = [f for f in plan.all_findings() if f.code == "run-oom"]
    assert f.severity == "warning" and "again after its one relaunch: it is not relaunched" in f.summary
    assert "(limit 32 GiB" in f.summary and "U41" in f.detail
    # a lost run the OOM killer took whole (the launcher too) is the same
    lost = run_fact(state="lost", ended=OOMED, earlier_ooms=1)
    plan = build_plan([write_job(RUNPOD_JOB)], live(pod(**NV), volume(), runs=lost), now=NOW, env={})
    assert not [a for a in plan.all_actions() if a.kind is ActionKind.LAUNCH]


def test_a_second_oom_kill_stops_the_machine_it_would_only_bill(write_job: Write) -> None:
    twice = run_fact(state="exited", exit_code=137, ended=OOMED, earlier_ooms=1)
    plan = build_plan([write_job(RUNPOD_JOB)], live(pod(**NV), volume(), runs=twice), now=NOW, env={})
    (stop,) = [a for a in plan.all_actions() if a.kind is ActionKind.STOP]
    assert stop.reasons[0] == (
        "out of memory twice (limit 32 GiB): the run is not relaunched, so the machine is stopped"
    )
    assert not plan.blocked
    once = run_fact(state="exited", exit_code=137, ended=OOMED)
    plan = build_plan([write_job(RUNPOD_JOB)], live(pod(**NV), volume(), runs=once), now=NOW, env={})
    assert not [a for a in plan.all_actions() if a.kind is ActionKind.STOP]


def test_a_run_fact_says_nothing_new_when_nothing_was_read() -> None:
    """The plan's JSON keeps its shape for a run whose end was not read (the golden plans)."""
    dumped = run_fact(state="running")["job"].model_dump(mode="json")
    assert "ended" not in dumped and "earlier_ooms" not in dumped
    assert run_fact(state="lost", ended="x", earlier_ooms=2)["job"].model_dump()["earlier_ooms"] == 2
