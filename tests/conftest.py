"""Shared fixtures: the real datasets in the shared data folder ($HOGWILD_DATA), and
quick runs of the benchmark scripts."""
import importlib.util
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

# hogwild's caches (parsed data, generated matrices, compiled kernels), and the
# user-wide one numba falls back to where a test makes hogwild's unusable, in a
# folder of this session's, set before hogwild is imported (numba fixes a
# function's cache folder when the function is defined) and removed at the end:
# the suite wrote 208 MiB into the user's ~/.cache/hogwild. Processes that the
# tests start inherit it.
SESSION_CACHES = Path(tempfile.mkdtemp(prefix="hogwild-test-caches-"))
os.environ["HOGWILD_CACHE_DIR"] = str(SESSION_CACHES / "hogwild")
os.environ["XDG_CACHE_HOME"] = str(SESSION_CACHES / "user")


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(SESSION_CACHES, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_as_in_a_terminal():
    """SIGINT with Python's default handler for the whole session, whatever the
    suite was started with: a shell without job control starts background commands
    with SIGINT ignored (nohup, a CI runner's `&`), which Python keeps and every
    process a test starts inherits, so a test's Ctrl-C would not reach it (a
    process started with a handler set gets SIGINT's default)."""
    started = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, started)


@pytest.fixture(autouse=True, scope="session")
def _run_in_a_folder_of_the_sessions():
    """Tests run in a temporary folder, not in the repository: what a command
    writes where it runs (the checkpoint a run with --checkpoint-every leaves at
    its default path, hogwild-svm-checkpoint.npz) stays out of the user's tree."""
    folder = SESSION_CACHES / "cwd"
    folder.mkdir()
    started_in = os.getcwd()
    os.chdir(folder)
    yield
    os.chdir(started_in)


from hogwild.datasets.ratings import split_ratings  # noqa: E402 - after the caches' folder
from hogwild.datasets.registry import (RATINGS_DATASETS, SVM_DATASETS,  # noqa: E402
                                       load_ratings, load_svm_data)


def shared_dataset(name):
    """(train, test) of a shared dataset, or skip the test saying where it was looked for."""
    spec = SVM_DATASETS[name]
    if not spec.available():
        pytest.skip(f"shared dataset {name!r} not found at {spec.folder() / spec.train} "
                    "(set HOGWILD_DATA to the shared data folder)")
    return load_svm_data(name)


@pytest.fixture(scope="session")
def a9a():
    return load_svm_data("a9a")


@pytest.fixture(scope="session")
def news20():
    return shared_dataset("news20-bydate")


@pytest.fixture(scope="session")
def imdb():
    return shared_dataset("imdb-aclimdb")


def shared_ratings(name):
    """A rating dataset from the shared data folder, or skip saying where it was looked for."""
    spec = RATINGS_DATASETS[name]
    if spec.locate() is None:
        pytest.skip(f"rating dataset {name!r} not found in the shared data folder or the "
                    "download cache (set HOGWILD_DATA to the shared data folder)")
    return load_ratings(name)


@pytest.fixture(scope="session")
def ml100k():
    return shared_ratings("ml-100k")


@pytest.fixture(scope="session")
def ml1m_split():
    """MovieLens 1M, random 80/20 split of the ratings with seed 0."""
    return split_ratings(shared_ratings("ml-1m"), test_fraction=0.2, seed=0)


@pytest.fixture
def quick_benchmark(tmp_path, capsys):
    """run(name) -> (module, report, markdown): scripts/<name>.py --quick, checking
    that the JSON it prints is the JSON it writes."""
    def run(name):
        path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out, table = tmp_path / "report.json", tmp_path / "report.md"
        module.main(["--quick", "--out", str(out), "--markdown", str(table)])
        report = json.loads(out.read_text())
        assert json.loads(capsys.readouterr().out) == report
        return module, report, table.read_text()
    return run


# Determinism tests: CI runs them a second time under another numba CPU target
# (NUMBA_CPU_NAME=generic), so that a promise of equal bits that holds only for
# this machine's instruction set fails in CI, not on a user's machine. A test is
# one when its name says so (bitwise, reproducible, deterministic, bit_for_bit)
# or it carries @pytest.mark.determinism.
_DETERMINISM_WORDS = ("bitwise", "reproducible", "deterministic", "bit_for_bit")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(word in item.name for word in _DETERMINISM_WORDS):
            item.add_marker(pytest.mark.determinism)
