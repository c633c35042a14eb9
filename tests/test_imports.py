"""The package's import graph has no cycle (issue 17): every import statement of
every module, at module level or inside a function, read from the source."""
import ast
import subprocess
import sys
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


BACKENDS = ROOT / "hogwild" / "backends"


def backend_of(module):
    """The backend a module belongs to (hogwild.backends.X for a module or package
    X directly under hogwild/backends), or None."""
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["hogwild", "backends"] and len(parts) > 2 \
        else None


def public_names(backend, modules):
    """A backend's public names: its package's __all__, or a module's names that
    do not start with an underscore (None: any such name)."""
    path = modules[backend]
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__"
                                                for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


def private_imports(path, module, modules):
    """(imported module, name) of every import in ``path`` of a backend's private
    name from outside that backend: a name with a leading underscore, a name not
    in a backend package's __all__, or any name from inside a backend package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
            continue
        owner = backend_of(node.module)
        if owner is None or owner == backend_of(module) or owner not in modules:
            continue
        public = public_names(owner, modules)
        for alias in node.names:
            if alias.name.startswith("_") or node.module != owner and public is not None \
                    or public is not None and alias.name not in public:
                found.append(f"{node.module}.{alias.name}")
    return found


def test_no_module_outside_a_backend_imports_a_private_name_of_it():
    modules = package_modules()
    scripts = {f"scripts.{p.stem}": p for p in (ROOT / "scripts").glob("*.py")}
    assert "hogwild.backends.mpi" in modules and "hogwild.backends.mpi.job" in modules
    bad = {module: names for module, path in {**modules, **scripts}.items()
           if (names := private_imports(path, module, modules))}
    assert bad == {}
    # the test sees what it must: hogwild.cli may not reach into the MPI package
    probe = ROOT / "hogwild" / "cli" / "probe.py"
    assert private_imports(probe, "hogwild.cli.probe", modules) == []
    assert public_names("hogwild.backends.mpi", modules) >= {"import_mpi", "AllreduceSettings"}


def test_a_reach_into_a_backend_is_caught(tmp_path):
    modules = package_modules()
    reach = tmp_path / "reach.py"
    reach.write_text("from hogwild.backends.mpi.job import import_mpi\n"
                     "from hogwild.backends.threads import _Crew\n"
                     "from hogwild.backends.ray import ParameterServer\n"
                     "from hogwild.backends.mpi import AllreduceSettings\n")
    assert private_imports(reach, "hogwild.cli.reach", modules) == [
        "hogwild.backends.mpi.job.import_mpi", "hogwild.backends.threads._Crew",
        "hogwild.backends.ray.ParameterServer"]


def test_no_backend_module_is_over_400_lines_and_fit_is_under_60():
    lengths = {str(p.relative_to(BACKENDS)): len(p.read_text().splitlines())
               for p in BACKENDS.rglob("*.py")}
    assert {"mpi/backend.py", "ray/backend.py", "replicas.py"} <= set(lengths)
    assert {name: n for name, n in lengths.items() if n > 400} == {}
    engine = ast.parse((ROOT / "hogwild" / "engine.py").read_text())
    (fit,) = [n for n in engine.body if isinstance(n, ast.FunctionDef) and n.name == "fit"]
    assert fit.end_lineno - fit.lineno + 1 < 60


def test_importing_the_mpi_and_ray_backends_starts_neither():
    code = ("import sys, hogwild.backends.mpi, hogwild.backends.ray, hogwild.cli; "
            "from hogwild.backends import get_backend; get_backend('mpi'); get_backend('ray'); "
            "print(sorted(m for m in ('mpi4py', 'mpi4py.MPI', 'ray') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
