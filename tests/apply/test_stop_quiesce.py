"""Every stop apply makes lets the run save first (the gate's quiesce), and a launch that finds its run
ended and its machine stopped by itself does not run it again."""

from __future__ import annotations

import contextlib
import dataclasses

from gpujob.apply.journal import Journal
from gpujob.apply.reconcile import finished_marker
from gpujob.errors import SSHConnectError
from gpujob.plan.model import ActionKind
from tests.apply.fakes import FakeLoaded, action, make_plan
from tests.apply.test_applier import World, create_plan


def _pod(w: World):  # type: ignore[no-untyped-def]
    return next(r for r in w.prov.resources.values() if r.kind == "pod")


def test_a_stop_sends_the_run_sigterm_and_waits_for_its_save_before_the_platform_stop(tmp_path):
    w = World(tmp_path)
    assert w.apply(create_plan()).ok
    assert w.ssh.alive
    res = w.apply(make_plan(("toy", [action("toy", ActionKind.STOP, resource_id=_pod(w).id)])))
    assert res.ok, res.failed
    assert len(w.ssh.quiesced) == 1 and w.ssh.quiesced[0] >= 30  # the gate's grace
    assert not w.ssh.alive and _pod(w).status == "stopped"
    detail = next(d for a, phase, d in w.hooks.events if a == "toy.pod.stop" and phase == "done")
    assert "the run exited after SIGTERM" in detail


def test_a_stop_of_a_machine_gpujob_cannot_reach_still_stops_it(tmp_path):
    w = World(tmp_path)
    assert w.apply(create_plan()).ok

    @contextlib.asynccontextmanager
    async def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise SSHConnectError("could not connect to pod: connection refused")
        yield

    w.ssh.connect = refuse  # type: ignore[method-assign]
    res = w.apply(make_plan(("toy", [action("toy", ActionKind.STOP, resource_id=_pod(w).id)])))
    assert res.ok, res.failed
    assert w.ssh.quiesced == [] and _pod(w).status == "stopped"
    assert any(phase == "note" and "could not reach the run" in m for _, phase, m in w.hooks.events)


def _relaunch_after_a_self_stop(tmp_path, digest: str):
    """A run launched from job file digest d1 ended (exit 0) and stopped its pod itself; apply now
    launches the job again from a job file of `digest`."""
    w = World(tmp_path)
    w.loaded = [FakeLoadedDigest(w.spec, tmp_path / "job.yaml", digest)]
    assert w.apply(create_plan()).ok
    Journal(w.state, "toy").append(
        "done", w.clock.now(), action_id="toy.run.spec", detail="launched from spec d1"
    )
    w.ssh.alive, w.ssh.exit_code = False, 0
    w.ssh.stopped_itself = "the run finished (exit 0) and teardown.on_finish is stop"
    res = w.apply(make_plan(("toy", [action("toy", ActionKind.LAUNCH, "run", resource_id=_pod(w).id)])))
    return w, res


def test_a_run_that_ended_and_stopped_its_pod_itself_is_not_launched_again(tmp_path):
    w, res = _relaunch_after_a_self_stop(tmp_path, "d1")
    assert res.ok, res.failed
    assert len(w.ssh.launches) == 1  # only the first
    assert _pod(w).status == "stopped"
    assert finished_marker(Journal(w.state, "toy").entries(), "d1") is not None


def test_a_changed_job_file_is_launched_even_after_a_self_stop(tmp_path):
    w, res = _relaunch_after_a_self_stop(tmp_path, "d2")
    assert res.ok and len(w.ssh.launches) == 2


@dataclasses.dataclass(frozen=True)
class FakeLoadedDigest(FakeLoaded):
    digest: str = ""
