"""Every example in scripts/examples runs to its end, on small data, and prints
what its docstring promises."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "scripts" / "examples"


def run_example(name, *args, cwd):
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def planted_svmlight(folder):
    """train.svm and test.svm: rows labelled by one planted hyperplane (with noise)."""
    from sklearn.datasets import dump_svmlight_file
    from hogwild.datasets.synthetic import make_sparse_classification

    X, y = make_sparse_classification(4000, 500, nnz_per_row=12, seed=0)
    dump_svmlight_file(X[:3000], y[:3000], str(folder / "train.svm"), zero_based=False)
    dump_svmlight_file(X[3000:], y[3000:], str(folder / "test.svm"), zero_based=False)


def test_the_examples_folder_has_one_script_per_problem_and_one_own_objective():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == [
        "graph_cut.py", "own_objective.py", "recommender.py", "segmentation.py",
        "svm_text.py"]


def test_svm_example_prints_the_test_error_and_plots_it_against_time(tmp_path):
    planted_svmlight(tmp_path)
    out = run_example("svm_text.py", "--data", "train.svm", "--test", "test.svm",
                      "--epochs", "3", "--plot", "error.png", cwd=tmp_path)
    final = float(re.search(r"final test error ([\d.]+)%", out).group(1))
    assert len(re.findall(r"^epoch +\d+: test error", out, re.M)) == 3 and final < 25
    assert (tmp_path / "error.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_recommender_example_saves_loads_and_recommends_ten_items(tmp_path):
    rng = np.random.default_rng(0)
    users, items = rng.integers(1, 200, 8000), rng.integers(1, 100, 8000)
    taste = rng.standard_normal((200, 3)) @ rng.standard_normal((3, 100))
    ratings = np.clip(np.round(3 + taste[users, items]), 1, 5)
    lines = [f"{u} {i} {r:g}\n" for u, i, r in zip(users, items, ratings)]
    (tmp_path / "ratings.txt").write_text("".join(lines))
    out = run_example("recommender.py", "--data", "ratings.txt", "--epochs", "5",
                      "--user", users[0], "--model-file", "model.npz", cwd=tmp_path)
    assert f"top 10 for user {users[0]}:" in out
    assert len(re.findall(r"^ +\d+\. item +\d+ +predicted [\d.]+$", out, re.M)) == 10
    assert "the loaded model recommends the same items" in out
    assert (tmp_path / "model.npz").is_file()


def test_segmentation_example_writes_the_labels_as_a_png(tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="segmentation needs Pillow")
    rng = np.random.default_rng(0)
    gray = np.full((40, 60), 60.0)
    gray[10:30, 20:45] = 190.0  # a bright rectangle on a dark ground, with noise
    gray += rng.normal(0, 12, gray.shape)
    Image.fromarray(np.clip(gray, 0, 255).astype(np.uint8)).save(tmp_path / "input.png")
    out = run_example("segmentation.py", "--image", "input.png", "--epochs", "40",
                      "--out", "labels.png", cwd=tmp_path)
    labels = np.asarray(Image.open(tmp_path / "labels.png")) > 0
    assert "labels written to labels.png" in out
    truth = np.zeros(gray.shape, bool)
    truth[10:30, 20:45] = True
    assert np.mean(labels == truth) > 0.95


def test_graph_cut_example_meets_the_exact_minimum_cut(tmp_path):
    out = run_example("graph_cut.py", "--data", "random:300x1500", "--epochs", "100",
                      cwd=tmp_path)
    found = re.search(r"rounded cut ([\d.e+]+), exact minimum cut ([\d.e+]+)", out)
    assert found, out
    rounded, exact = float(found.group(1)), float(found.group(2))
    assert exact <= rounded <= exact * 1.05


def test_own_objective_example_is_as_good_as_scikit_learn(tmp_path):
    out = run_example("own_objective.py", "--epochs", "5", cwd=tmp_path)  # a9a, shipped
    ours = float(re.findall(r"test error ([\d.]+)%", out)[-2])
    theirs = float(re.search(r"LogisticRegression: test error ([\d.]+)%", out).group(1))
    assert ours <= theirs + 0.5
