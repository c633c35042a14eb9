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
        "graph_cut.py", "implicit_recommender.py", "own_objective.py", "recommender.py",
        "segmentation.py", "svm_text.py"]


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


def example_parser(script, monkeypatch):
    """The argparse parser ``script`` builds (its main stopped at parse_args)."""
    import argparse
    import runpy

    built = []

    def stop(parser, *args, **kwargs):
        built.append(parser)
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    with pytest.raises(SystemExit):
        runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    return built[0]


@pytest.mark.parametrize("script", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_every_examples_help_is_its_whole_docstring_and_every_option_has_help(script,
                                                                            monkeypatch):
    import ast
    parser = example_parser(script, monkeypatch)
    docstring = ast.get_docstring(ast.parse((EXAMPLES / script).read_text()), clean=False)
    assert parser.description == docstring and docstring.rstrip().endswith((".", ")"))
    for action in parser._actions:
        assert action.help and action.help.strip(), (script, action.option_strings)


def test_implicit_recommender_example_ranks_held_out_items_and_finds_similar_ones(tmp_path):
    rng = np.random.default_rng(0)
    users, items = rng.integers(1, 300, 30_000), rng.integers(1, 100, 30_000)
    liked = (users % 4) == (items % 4)  # four tastes
    lines = [f"u{u};m{i};{5 if like else 2}\n" for u, i, like in zip(users, items, liked)]
    (tmp_path / "ratings.csv").write_text("".join(lines))
    out = run_example("implicit_recommender.py", "--data", "ratings.csv", "--epochs", "10",
                      cwd=tmp_path)
    precision = float(re.search(r"precision@10 ([\d.]+)", out).group(1))
    assert precision > 0.15, out  # the planted tastes: a random ranking gets about 0.05
    top = re.search(r"top 10 for user (u\d+): (.*)", out)
    assert top and len(top.group(2).split(", ")) == 10
    assert all(item.startswith("m") for item in top.group(2).split(", "))
    like = re.search(r"items most like m(\d+): (.*)", out)
    similar = [int(item.split()[0][1:]) for item in like.group(2).split(", ")]
    assert len(similar) == 5 and {i % 4 for i in similar} == {int(like.group(1)) % 4}
