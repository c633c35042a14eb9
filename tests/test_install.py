"""The package as pip installs it: compiled caches stay out of it, so uninstalling
it (or reinstalling editable over it, the README's two commands in order) leaves
nothing behind. Regression test for issue 15, item 4: numba wrote its caches into
site-packages/hogwild/.../__pycache__, pip left them on uninstall, and the empty
``hogwild`` folder then imported as a namespace package that shadowed the editable
install (``cannot import name 'HogwildError' from 'hogwild' (unknown location)``)."""
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _install_layout(site):
    """Copy the package's files to site/ the way pyproject.toml maps them (what a
    regular ``pip install .`` puts in site-packages); returns the files copied."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dirs = config["package-dir"]
    copied = []
    for package in config["packages"]:
        root = next(name for name in sorted(package_dirs, key=len, reverse=True)
                    if package == name or package.startswith(name + "."))
        source = REPO / package_dirs[root] / Path(*package[len(root):].split(".")[1:])
        target = site / Path(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        patterns = ["*.py"] + config.get("package-data", {}).get(package, [])
        for pattern in patterns:
            for path in source.glob(pattern):
                shutil.copy2(path, target / path.name)
                copied.append(target / path.name)
    return copied


RUN = """
import sys
import hogwild
assert hogwild.__file__.startswith(sys.argv[1]), hogwild.__file__
from hogwild.cli import main
main(["run", "svm", "--epochs", "2", "--workers", "2", "--seed", "0", "--json",
      "--checkpoint", sys.argv[2]])
"""


def test_a_run_writes_no_compiled_cache_into_the_installed_package(tmp_path):
    site = tmp_path / "site-packages"
    copied = _install_layout(site)
    env = {**os.environ, "PYTHONPATH": str(site), "HOGWILD_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", RUN, str(site), str(tmp_path / "ck.npz")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    written = sorted(str(p.relative_to(site)) for p in (site / "hogwild").rglob("*")
                     if p.is_file() and p not in copied)
    assert written == [], f"files written into the installed package: {written[:5]}"
    assert list((tmp_path / "cache" / "numba").rglob("*.nbi")), "no numba cache at all"
    # what pip's uninstall removes (the files it installed) leaves no folder with files
    for path in copied:
        path.unlink()
    left = [p for p in (site / "hogwild").rglob("*") if p.is_file()]
    assert left == []


CHECKOUT_ONLY = """
import sys
# what is left when a regular install has replaced the editable one: no editable
# finder, and the checkout first on sys.path (python -m pytest puts the working
# directory there)
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in
                   (f if isinstance(f, type) else type(f)).__module__]
sys.path.insert(0, sys.argv[1])
import hogwild.problems.sparse_svm
import hogwild.datasets.registry
assert hogwild.problems.sparse_svm.__file__.startswith(sys.argv[1])
print("ok")
"""


def test_the_checkout_imports_its_subpackages_without_an_editable_finder(tmp_path):
    """The README's commands in the other order (the test extra editable, then the
    cli extra regular) leave no editable finder; `python -m pytest` at the checkout
    must still import hogwild.problems and hogwild.datasets from it."""
    done = subprocess.run([sys.executable, "-c", CHECKOUT_ONLY, str(REPO)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_kernels_cache_stamp_changes_with_the_helpers_it_calls_from_other_modules(
        monkeypatch):
    """numba stamps a cache entry with its function's own file alone; the Vowpal
    Wabbit parser inlines the hash and the number scanner from two other modules, so
    an edit to either must make its cached machine code stale too."""
    import hogwild.numba_cache as numba_cache
    from hogwild.datasets import hashing, vw_parser

    kernel = vw_parser.parse_block.py_func
    locator = numba_cache.HogwildCacheLocator(kernel, kernel.__code__.co_filename)
    before = locator.get_source_stamp()
    named = [name for name, _, _ in before[2]]
    assert hashing.__file__ in named
    assert any(name.endswith("svmlight_parser.py") for name in named)
    assert kernel.__code__.co_filename not in named

    real_stat = os.stat

    def edited(path, *args, **kwargs):
        stat = real_stat(path, *args, **kwargs)
        if str(path) != hashing.__file__:
            return stat
        fields = list(stat[:10]) + [None] * 3 + [stat.st_atime_ns, stat.st_mtime_ns + 1,
                                                 stat.st_ctime_ns]
        return os.stat_result(fields)  # the same file, its modification a moment later

    monkeypatch.setattr(numba_cache.os, "stat", edited)
    assert locator.get_source_stamp() != before
