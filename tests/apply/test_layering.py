"""gpujob/apply/ is one-way: every module imports (at the top, in a function or under TYPE_CHECKING)
only modules of a lower layer of apply/, or of its own layer when they form no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import gpujob.apply

APPLY = Path(gpujob.apply.__file__).parent

# Bottom up. A module's rank is the index of its layer; a module not listed fails the test, so a new
# one is placed deliberately.
LAYERS: list[set[str]] = [
    # gpujob.cli.progress picks the terminal renderer (progress_rich) lazily, so rich loads only there.
    {
        "journal",
        "records",
        "sshapi",
        "progress",
        "progress_rich",
        "localfiles",
        "reconcile",
        "unreachable",
        "reach_evidence",
        "migration",
    },
    {"context", "gate"},
    {"runtime.transfer", "runtime.remote", "runtime.gangcheck"},
    {"runtime.launch", "runtime.pulling", "runtime.gang"},  # launch and pulling use gang lazily
    {"stop_pull"},  # the Iron Law's pull before a stop: quiesce.stop calls it
    {"runtime", "ownership", "capacity", "observe", "quiesce", "reach_gate"},
    {"runfacts"},
    {"refresh"},
    {"carry", "teardown_look", "stopped_pull", "volume_stays"},
    {"teardown_helper"},
    {"teardown"},
    # the steps by resource: stepbase < volume_steps < machine_steps < run_steps < change_steps
    {"stepbase", "volume_steps", "machine_steps", "run_steps", "change_steps"},
    {"steps"},
    {"applier"},
    {"rederive"},
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in APPLY.rglob("*.py"):
        rel = path.relative_to(APPLY).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        if parts:
            out[".".join(parts)] = path
    return out


def _apply_imports(path: Path, package: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:  # relative: resolve against the module's package
                pkg = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(["gpujob", "apply", *[p for p in pkg if p]]) + "." + node.module
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for n in names:
            if n.startswith("gpujob.apply."):
                found.add(n.removeprefix("gpujob.apply."))
    return found


def test_every_apply_module_has_a_layer() -> None:
    ranked = set().union(*LAYERS)
    assert set(_modules()) - ranked == set()


def test_no_module_of_apply_imports_a_layer_above_its_own() -> None:
    rank = {m: i for i, layer in enumerate(LAYERS) for m in layer}
    modules = _modules()
    upward = []
    for name, path in sorted(modules.items()):
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for target in _apply_imports(path, package):
            while target not in modules and "." in target:  # `from gpujob.apply.x import name`
                target = target.rpartition(".")[0]
            if target not in modules or target == name or target.startswith(name + "."):
                continue
            if rank[target] > rank[name]:
                upward.append(f"{name} (layer {rank[name]}) imports {target} (layer {rank[target]})")
    assert upward == []
