"""A run change applies from the next cell of a running queue, and no re-split moves a placed cell: the
wrapper run for real in bash on temp dirs (its version switch between cells, never mid-cell, no file
rewritten), the plan's update of a queue's run, and the split with the cells already placed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpujob.jobfile.cells import Cell, expand
from gpujob.jobfile.sweep import SweepSpec
from gpujob.layout.isolation import local_records
from gpujob.layout.queues import split
from gpujob.layout.wrapper import place, place_command, queue_command
from gpujob.spec.load import load_specs
from tests.e2e.e2e_support import poll
from tests.sweep.test_sweep_unit import JOB, run, write

# A cell that says which MSG it saw at its start and at its end, and whether OLD was set; the cell
# named in $HOLD waits for the test's go-file (bounded) so the test can change the run while it is in
# flight.
CELL = r"""echo run >> "$GPUJOB_CELL_DIR/runs"
echo "start ${MSG:-unset} ${OLD:-unset}" >> "$GPUJOB_CELL_DIR/seen"
if [ "$V" = "$HOLD" ]; then
  touch "$GPUJOB_CELL_DIR/holding"
  i=0; while [ ! -e "$GO" ] && [ "$i" -lt 600 ]; do sleep 0.05; i=$((i+1)); done
fi
echo "end ${MSG:-unset}" >> "$GPUJOB_CELL_DIR/seen"
"""


def sweep(**kw: object) -> SweepSpec:
    return SweepSpec.model_validate({"machines": 1, **kw})


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    return {
        str(f.relative_to(root)): (f.stat().st_ino, f.stat().st_mtime_ns, f.read_bytes())
        for f in sorted(root.rglob("*"))
        if f.is_file()
    }


def start(command: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["bash", "-c", command], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_a_run_change_is_picked_up_before_the_next_cell_never_mid_cell_and_no_file_is_rewritten(
    tmp_path: Path,
) -> None:
    mount, go = tmp_path / "ws", tmp_path / "go"
    cells = expand(sweep(matrix={"V": ["a", "b", "c"]}))
    more = expand(sweep(matrix={"V": ["a", "b", "c", "d"]}))  # the change also appends a cell
    names = {c.env["V"]: c.name for c in more}
    cmd = f"HOLD=a GO={go} && " + CELL
    v1 = place(
        job="abl",
        mount=str(mount),
        ck_dir=None,
        command=cmd,
        queues=[cells],
        env=[("MSG", "one"), ("OLD", "x")],
    )
    v2 = place(job="abl", mount=str(mount), ck_dir=None, command=cmd, queues=[more], env=[("MSG", "two")])
    assert v1.version != v2.version
    queue = start(queue_command(v1, 1), tmp_path)
    try:
        results = mount / "sweeps" / "abl"
        poll(
            "cell a in flight", lambda: (results / names["a"] / "holding").exists(), deadline_s=30, every=0.02
        )
        before = snapshot(Path(v1.root))
        run(place_command(v2, 1), tmp_path)  # what `apply` runs on the machine while cell a is in flight
        assert snapshot(Path(v1.root)) == before  # the live version's files: not one rewritten
        again = snapshot(Path(v2.root))
        run(place_command(v2, 1), tmp_path)  # placing it twice writes nothing again either
        assert snapshot(Path(v2.root)) == again
        go.touch()
        out, _ = queue.communicate(timeout=60)
    finally:
        queue.kill()
    assert queue.returncode == 0, out
    seen = {v: (results / names[v] / "seen").read_text().splitlines() for v in "abcd"}
    # a ran under v1 from its start to its end (never switched mid-cell); b, c and the appended d under
    # v2, which dropped OLD
    assert seen == {
        "a": ["start one x", "end one"],
        "b": ["start two unset", "end two"],
        "c": ["start two unset", "end two"],
        "d": ["start two unset", "end two"],
    }, out
    assert all(len((results / names[v] / "runs").read_text().split()) == 1 for v in "abcd"), out
    records = local_records(results, list(names.values()))
    versions = {r.cell: (r.version, r.queue, r.exit) for r in records.values() if r is not None}
    assert versions == {
        names["a"]: (v1.version, 1, 0),
        names["b"]: (v2.version, 1, 0),
        names["c"]: (v2.version, 1, 0),
        names["d"]: (v2.version, 1, 0),
    }
    assert out.count("picks up version") == 1 and f"picks up version {v2.version}" in out, out
    assert f"before cell {names['b']}" in out, out
    # `gpujob status` reads the same from the machine's state dir: the version each cell ran under
    from types import SimpleNamespace

    from gpujob.sweep.status import cells_command, parse_cells

    spec = SimpleNamespace(storage=SimpleNamespace(mount=str(mount)))
    q = SimpleNamespace(sweep_job="abl", n=1, cells=more)
    rows = parse_cells(
        run(cells_command(spec, q), tmp_path).stdout, machine="m", alive=False, step=None, usd_per_hour=0
    )
    assert [(r["state"], r["version"]) for r in rows] == [("done", v1.version)] + [("done", v2.version)] * 3


def test_a_version_placed_during_the_last_cell_is_picked_up_at_the_end_of_the_queue(tmp_path: Path) -> None:
    mount, go = tmp_path / "ws", tmp_path / "go"
    one = expand(sweep(matrix={"V": ["a"]}))
    two = expand(sweep(matrix={"V": ["a", "b"]}))
    cmd = f"HOLD=a GO={go} && " + CELL
    v1 = place(job="abl", mount=str(mount), ck_dir=None, command=cmd, queues=[one], env=[("MSG", "one")])
    v2 = place(job="abl", mount=str(mount), ck_dir=None, command=cmd, queues=[two], env=[("MSG", "two")])
    queue = start(queue_command(v1, 1), tmp_path)
    try:
        results = mount / "sweeps" / "abl"
        poll(
            "cell a in flight",
            lambda: (results / one[0].name / "holding").exists(),
            deadline_s=30,
            every=0.02,
        )
        run(place_command(v2, 1), tmp_path)
        go.touch()
        out, _ = queue.communicate(timeout=60)
    finally:
        queue.kill()
    assert queue.returncode == 0 and "at the end of its queue" in out, out
    assert (results / two[1].name / "seen").read_text().splitlines() == ["start two unset", "end two"]
    assert (results / one[0].name / "runs").read_text().split() == ["run"]  # not run again by v2


def test_a_pointer_that_names_no_complete_version_is_ignored(tmp_path: Path) -> None:
    mount = tmp_path / "ws"
    cells = expand(sweep(matrix={"V": ["a", "b"]}))
    v1 = place(job="abl", mount=str(mount), ck_dir=None, command=CELL, queues=[cells], env=[("MSG", "one")])
    run(place_command(v1, 1), tmp_path)
    state = Path(v1.root).parent / "state"
    (state / "version.q1").write_text("v0123456789ab\n")  # names a dir that is not there
    out = run(f"exec bash {v1.root}/queue.sh {v1.root}/q1.txt", tmp_path).stdout
    assert "picks up" not in out and out.count(" start 1") == 2, out


# --- the split keeps placed cells where they are ---------------------------------------------------


def cell(name: str, est: float = 600) -> Cell:
    return Cell(name, (("N", name),), est)


def names_of(parts: list[list[Cell]]) -> list[list[str]]:
    return [[c.name for c in q] for q in parts]


def test_placed_cells_stay_on_their_queue_whatever_machines_estimates_or_cells_now_say() -> None:
    six = [cell(x) for x in "abcdef"]
    first = split(six, 2)
    placed = {c.name: n for n, q in enumerate(first, start=1) for c in q}
    assert names_of(first) == [["a", "c", "e"], ["b", "d", "f"]]
    # 2 -> 3 machines: a re-split from scratch would move cells a queue may have run...
    assert names_of(split(six, 3)) != [*names_of(first), []]
    # ...with what was placed, nothing moves, and a queue with nothing to do is none
    assert names_of(split(six, 3, placed)) == names_of(first)
    # new cells go onto the least loaded queues, the new machine first
    eight = [*six, cell("g"), cell("h")]
    assert names_of(split(eight, 3, placed)) == [["a", "c", "e"], ["b", "d", "f"], ["g", "h"]]
    # an estimate that changes does not move a placed cell; a new long cell balances against the rest
    longer = [cell(x, 3600 if x == "a" else 600) for x in "abcdef"] + [cell("i", 1200)]
    assert names_of(split(longer, 2, placed)) == [["a", "c", "e"], ["b", "d", "f", "i"]]
    # fewer machines: a queue holding placed cells stays (its machine's guard is the only one that
    # knows what it ran); new cells go only onto the queues asked for
    assert names_of(split(eight, 1, placed)) == [["a", "c", "e", "g", "h"], ["b", "d", "f"]]
    # a removed cell is simply gone; an unknown placement (queue 0) is none
    assert names_of(split(six[:4], 2, {**placed, "zz": 1, "a": 0})) == [["a", "c"], ["b", "d"]]


def test_the_placed_cells_come_from_the_store_and_from_the_pulled_records(tmp_path: Path) -> None:
    from gpujob.state import open_store
    from gpujob.sweep.assign import note_placed, read_assignment

    job = write(tmp_path, JOB)
    first = {ls.sweep.n: [c.name for c in ls.sweep.cells] for ls in load_specs([job])}
    store = open_store(job)
    note_placed(store, "abl", 1, first[1])
    note_placed(store, "abl", 2, first[2][:1])
    assert read_assignment(store, "abl") == {**dict.fromkeys(first[1], 1), first[2][0]: 2}
    # a finished cell pulled with its record stays where it ran even when the store forgot it
    ran = tmp_path / "outputs" / first[2][1]
    ran.mkdir(parents=True)
    (ran / "gpujob-cell.txt").write_text(f"cell={first[2][1]}\nexit=0\nstarts=1\nversion=v1\nqueue=q2\n")
    three = load_specs([write(tmp_path, JOB.replace("machines: 2", "machines: 3"))])
    got = {ls.sweep.n: [c.name for c in ls.sweep.cells] for ls in three}
    # q1's last placed cell leaves (phase 1 of gpujob.sweep.rebalance: on no queue until proven), the
    # rest of q1 and the finished cell stay, the never-placed cell goes onto the new machine
    assert got[1] == first[1][:2] and three[0].sweep.leaving == (first[1][2],), got
    assert [(m.cell, m.origin, m.to, m.state) for m in three[0].sweep.moves] == [
        (first[1][2], 1, 3, "leaves")
    ]
    assert set(first[2][:2]) <= set(got[2]), got
    moved = [c for c in first[2][2:] if c not in got[2]]
    assert moved and set(moved) <= set(got.get(3, [])), got
    assert [ls.spec.name for ls in three] == ["abl--q1", "abl--q2", "abl--q3"]
    from gpujob.sweep.plan import sweep_plan

    # every cell placed, a fourth machine asked for: no fourth queue, and the plan says why
    note_placed(store, "abl", 3, moved)
    four = load_specs([write(tmp_path, JOB.replace("machines: 2", "machines: 4"))])
    assert [ls.sweep.n for ls in four] == [1, 2, 3]
    summary = sweep_plan(four[0], 1.0).summary  # type: ignore[union-attr]
    assert (
        "6 cells on 3 machines (sweep.machines is 4: a cell placed on a queue moves to another only"
        in summary
    )
    assert f"cell {first[1][2]} leaves q1 -> q4 (not started yet)" in summary
    fresh = sweep_plan(load_specs([write(tmp_path, JOB.replace("abl", "new"))])[0], 1.0)
    assert fresh is not None and "sweep.machines is" not in fresh.summary  # nothing placed: no note


# A cell that stops its queue mid-cell: `exec`, so the stop's TERM ends the sleep itself (a sleep left
# behind by a killed shell would hold the output pipe open for its whole five seconds).
STOPPING_CELL = """n=$(cat finished 2>/dev/null | wc -l)
if [ -e limit ] && [ "$n" -ge "$(cat limit)" ]; then kill -TERM "$PPID"; exec sleep 5; fi
echo "$GPUJOB_CELL" >> finished
"""


def test_machines_two_to_three_after_some_cells_finished_runs_every_cell_exactly_once(tmp_path: Path) -> None:
    """Each queue machine is a dir of its own (its own mount, state dir and guard). q1 finishes two
    cells and q2 one, then both are stopped mid-cell; the sweep then gets a third machine and two more
    cells, and every queue drains: each cell finished exactly once, on one machine. The rebalance
    (gpujob.sweep.rebalance) moves the last cell of each old queue to the new machine: q1's had started
    (stopped mid-cell), so its machine's records keep it there; q2's had not, so it lands on q3."""
    from gpujob.state import open_store
    from gpujob.sweep.assign import note_placed
    from gpujob.sweep.evidence import decide, evidence_command, parse_evidence
    from gpujob.sweep.expand import expand_loaded
    from gpujob.sweep.rebalance import note_leaving, note_started

    text = JOB.replace("/workspace", "/MOUNT").replace("python3 cell.py", "bash cell.sh")
    job = write(tmp_path, text)
    store = open_store(job)

    def launch(loaded: list, limits: dict[int, int]) -> None:
        for ls in loaded:
            q = ls.sweep
            note_leaving(store, "abl", [m for m in q.moves if m.origin == q.n])  # as apply does before it
            note_placed(store, "abl", q.n, [c.name for c in q.cells])  # places a version
            note_started(store, "abl", q.started)
            box = tmp_path / f"m{q.n}"
            box.mkdir(exist_ok=True)
            (box / "cell.sh").write_text(STOPPING_CELL)
            (box / "limit").unlink(missing_ok=True)
            if q.n in limits:
                (box / "limit").write_text(f"{limits[q.n]}\n")
            cmd = ls.spec.run.command.replace("/MOUNT", str(box / "mnt"))
            proc = subprocess.run(["bash", "-c", cmd], cwd=box, capture_output=True, text=True, timeout=60)
            assert proc.returncode == (143 if q.n in limits else 0), proc.stdout + proc.stderr

    def finished() -> dict[int, list[str]]:
        boxes = sorted(tmp_path.glob("m*/finished"))
        return {int(f.parent.name[1:]): f.read_text().split() for f in boxes}

    two = load_specs([job])
    launch(two, {1: 2, 2: 1})
    first = finished()
    assert {q: len(c) for q, c in first.items()} == {1: 2, 2: 1}, first
    bigger = text.replace("machines: 2", "machines: 3").replace('"1e-4"]', '"1e-4", "3e-5"]')
    three = load_specs([write(tmp_path, bigger)])
    everything = [c.name for c in three[0].sweep.all_cells]
    # the scenario is one where a split from scratch would have put a finished cell on another machine
    scratch = {c.name: n for n, q in enumerate(split(list(three[0].sweep.all_cells), 3), start=1) for c in q}
    assert any(scratch[c] != q for q, cells in first.items() for c in cells), scratch
    assert [ls.sweep.n for ls in three] == [1, 2, 3]
    leaving = {m.cell: (m.origin, m.to, m.state) for m in three[0].sweep.moves}
    assert {(o, t, st) for o, t, st in leaving.values()} == {(1, 3, "leaves"), (2, 3, "leaves")}, leaving
    started_on_q1 = next(c for c, (o, _, _) in leaving.items() if o == 1)
    assert started_on_q1 not in first[1]  # the cell q1 was stopped in, not one it finished
    launch(three, {})
    # phase 2, as a later plan reads it: each origin machine's state, one command per machine
    verdicts = {}
    for cell, (origin, _, _) in leaving.items():
        box = tmp_path / f"m{origin}"
        out = run(evidence_command(str(box / "mnt"), "abl", origin, [cell]), box).stdout
        verdicts[cell] = decide(cell, origin, machine_running=True, evidence=parse_evidence(out))
    assert {c: v[0] for c, v in verdicts.items()} == {
        c: "stays" if c == started_on_q1 else "lands" for c in leaving
    }, verdicts
    settled = expand_loaded(three[0].sweep.origin, verdicts)
    on = {c.name: ls.sweep.n for ls in settled for c in ls.sweep.cells}
    assert {c: on[c] for c in leaving} == {c: 1 if c == started_on_q1 else 3 for c in leaving}, on
    launch(settled, {})
    runs = [c for cells in finished().values() for c in cells]
    assert sorted(runs) == sorted(everything) and len(everything) == 8, finished()
    landed = next(c for c in leaving if c != started_on_q1)
    assert landed in finished()[3] and started_on_q1 in finished()[1], finished()
    # converged: the next load proposes nothing and nothing waits
    again = load_specs([job])
    assert again[0].sweep.moves == () and sorted(c.name for ls in again for c in ls.sweep.cells) == sorted(
        everything
    )
