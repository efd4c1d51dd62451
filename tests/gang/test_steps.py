"""Complete checkpoint steps over the writers and the teardown gate on them (gpujob.jobfile.steps)."""

from __future__ import annotations

from gpujob.jobfile.steps import (
    complete_steps,
    files_of_step,
    gate_problem,
    newest_complete,
    pull_subdir,
    step_of,
)


def test_step_is_the_number_after_step_else_the_first_number() -> None:
    assert step_of("step-000120.pt") == 120 and step_of("final.pt") is None
    assert step_of("model-rank1-step120.pt") == 120 and step_of("ckpt_7/rank1.pt") == 7


def test_rank0_writers_need_only_node_zero() -> None:
    listings = {0: ["step-10.pt", "step-20.pt"], 1: []}
    assert complete_steps(listings, "rank0", 2) == [10, 20]


def test_all_writers_need_every_node_to_have_the_step() -> None:
    listings = {0: ["s10/r0.pt", "s20/r0.pt", "s30/r0.pt"], 1: ["s10/r1.pt", "s20/r1.pt"]}
    assert newest_complete(listings, "all", 2) == 20  # node 1 has not written step 30 yet
    assert newest_complete({0: ["s10/r0.pt"]}, "all", 2) is None  # node 1 not read: no step
    assert files_of_step(listings, "all", 2, 20) == {0: ["s20/r0.pt"], 1: ["s20/r1.pt"]}
    assert (pull_subdir(1, 2), pull_subdir(0, 1)) == ("node-1", "")


def test_gate_waits_for_the_newest_complete_step_from_every_writer() -> None:
    listings = {0: ["s10/r0.pt", "s20/r0.pt"], 1: ["s10/r1.pt", "s20/r1.pt"]}
    assert gate_problem(listings, {0: ["s20/r0.pt"], 1: ["s20/r1.pt"]}, "all", 2) is None
    why = gate_problem(listings, {0: ["s20/r0.pt"], 1: ["s10/r1.pt"]}, "all", 2)
    assert why is not None and "step 20" in why and "node 1: s20/r1.pt" in why
    assert gate_problem({0: [], 1: []}, {}, "all", 2) is None  # nothing to protect
    why = gate_problem({0: ["s10/r0.pt"], 1: []}, {}, "all", 2)
    assert why is not None and "no checkpoint step is complete" in why


def test_the_gate_reads_every_writer_from_the_pull_record() -> None:
    from types import SimpleNamespace

    from gpujob.apply.runtime.gang import writers_problem

    from .specs import gang_spec

    spec = gang_spec(nodes=2, writers="all")
    f = lambda name, ok=True: SimpleNamespace(name=name, verified=ok)  # noqa: E731
    record = SimpleNamespace(
        remote_files={"step-2.pt": "a", "node-1/step-2.pt": "b"},
        files=[f("step-2.pt"), f("node-1/step-2.pt", ok=False)],
    )
    why = writers_problem(spec, record, ["step-2.pt"])
    assert why is not None and "node 1: step-2.pt" in why
    record.files[1] = f("node-1/step-2.pt")
    assert writers_problem(spec, record, ["step-2.pt"]) is None
    assert writers_problem(gang_spec(nodes=1), record, ["x"]) is None
