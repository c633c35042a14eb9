"""The package's import graph has no cycle (issue 17): every import statement of
every module, at module level or inside a function, read from the source."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"hogwild": ROOT / "hogwild", "hogwild.problems": ROOT / "problems",
            "hogwild.datasets": ROOT / "datasets"}
NOT_MODULES = {"loops_template.py"}  # read as text by the compiler, never imported


def package_modules():
    """{dotted name: source file} of every module of the installed package."""
    modules = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            if path.name in NOT_MODULES or "__pycache__" in path.parts:
                continue
            parts = [p for p in path.relative_to(folder).with_suffix("").parts
                     if p != "__init__"]
            modules[".".join([package, *parts])] = path
    return modules


def imported_modules(path, modules):
    """The package modules that ``path`` imports (``from a.b import c`` counts as
    a.b.c when that is a module, else a.b)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            found.update(name if name in modules else node.module for name in names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {_owner(name, modules) for name in found} - {None}


def _owner(name, modules):
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def find_cycle(graph):
    """One cycle of ``graph`` ({node: set of nodes}) as a list, or None."""
    state, trail = {}, []

    def visit(node):
        state[node] = "open"
        trail.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        trail.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_has_no_import_cycle():
    modules = package_modules()
    assert {"hogwild.engine", "hogwild.backends.ray", "hogwild.problems.sparse_svm",
            "hogwild.datasets.svmlight"} <= set(modules)
    graph = {name: imported_modules(path, modules) - {name} for name, path in modules.items()}
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def reachable(graph, start):
    """Every module ``start`` imports, directly or not."""
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_the_objective_and_the_structure_it_declares_sit_below_schedulers_and_backends():
    modules = package_modules()
    graph = {name: imported_modules(path, modules) - {name} for name, path in modules.items()}
    for low in ("hogwild.objective", "hogwild.structure", "hogwild.datasets.graphs"):
        above = sorted(m for m in reachable(graph, low) if m.startswith(
            ("hogwild.schedulers", "hogwild.backends", "hogwild.engine", "hogwild.bench")))
        assert above == [], f"{low} imports {above}"
    assert "hogwild.structure" in graph["hogwild.objective"]
