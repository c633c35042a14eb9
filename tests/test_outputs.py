"""A file the command or an example writes never replaces one it reads: each such typo is one
line, exit 2, before anything is read or trained, and every input is left byte for
byte as it was."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hogwild.cli import main

SVM_ROWS = "".join(f"{1 if k % 3 else -1} 1:{k % 7 / 7:.3f} {2 + k % 5}:1\n" for k in range(60))
RATINGS = "".join(f"{k % 9} {k % 11} {1 + k % 5}\n" for k in range(200))
EDGES = "".join(f"{k} {(k * 7 + 1) % 40}\n" for k in range(40))
EXAMPLES = Path(__file__).resolve().parents[1] / "scripts" / "examples"


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A working folder with a data file of each kind, a test file, two part files,
    a link and a hard link to the svmlight file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.svm").write_text(SVM_ROWS)
    (tmp_path / "test.svm").write_text(SVM_ROWS)
    (tmp_path / "ratings.txt").write_text(RATINGS)
    (tmp_path / "edges.txt").write_text(EDGES)
    (tmp_path / "parts").mkdir()
    for name in ("part-0", "part-1"):
        (tmp_path / "parts" / name).write_text(SVM_ROWS)
    (tmp_path / "link.svm").symlink_to(tmp_path / "train.svm")
    os.link(tmp_path / "train.svm", tmp_path / "hard.svm")
    return tmp_path


@pytest.mark.parametrize("argv, message", [
    (["svm", "--data", "train.svm", "--save", "train.svm"],
     "--save train.svm is the --data file: the run would replace it"),
    (["svm", "--data", "train.svm", "--save", "link.svm"],
     "--save link.svm is the --data file: the run would replace it"),
    (["svm", "--data", "link.svm", "--save", "hard.svm"],
     "--save hard.svm is the --data file: the run would replace it"),
    (["svm", "--data", "train.svm", "--test", "test.svm", "--save", "test.svm"],
     "--save test.svm is the --test file: the run would replace it"),
    (["svm", "--data", "train.svm", "--checkpoint", "train.svm"],
     "--checkpoint train.svm is the --data file: the run would replace it"),
    (["mc", "--data", "ratings.txt", "--save", "ratings.txt"],
     "--save ratings.txt is the --data file: the run would replace it"),
    (["cuts", "--data", "edges.txt", "--out", "./edges.txt"],
     "--out ./edges.txt is the --data file: the run would replace it"),
    (["svm", "--data", "parts", "--save", "parts/model.npz"],
     "--save parts/model.npz is inside the --data folder parts: the next run would read "
     "it as data"),
    (["svm", "--data", "parts/part-*", "--save", "parts/part-9"],
     "--save parts/part-9 matches the --data pattern parts/part-*: the next run would read "
     "it as data"),
    (["svm", "--data", "train.svm", "--save", "model.npz", "--checkpoint", "./model.npz"],
     "--checkpoint and --save both name model.npz: one would replace the other; give each "
     "its own path"),
])
def test_an_output_that_names_an_input_is_refused_before_anything_is_read(
        folder, capsys, argv, message):
    before = {path: _digest(path) for path in folder.rglob("*") if path.is_file()}
    assert main(["run", *argv, "--epochs", "1"]) == 2
    out, err = capsys.readouterr()
    ending = "" if message.endswith("its own path") else "; give another path"
    assert err == f"hogwild: error: {message}{ending}\n"
    assert out == ""
    assert {path: _digest(path) for path in folder.rglob("*") if path.is_file()} == before


def test_the_checkpoint_that_a_resumed_run_reads_is_the_one_it_rewrites(folder, capsys):
    assert main(["run", "svm", "--data", "train.svm", "--epochs", "1", "--seed", "1",
                 "--checkpoint", "run.ckpt", "--checkpoint-every", "1", "--json"]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["history"][0]
    assert main(["run", "svm", "--data", "train.svm", "--epochs", "2", "--seed", "1",
                 "--resume", "run.ckpt", "--checkpoint", "run.ckpt",
                 "--checkpoint-every", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [record["epoch"] for record in report["history"]] == [1, 2]
    assert report["history"][0]["seconds"] == first["seconds"]  # epoch 1: the checkpoint's
    # the model, though, would replace the checkpoint it resumed from
    assert main(["run", "svm", "--data", "train.svm", "--epochs", "3", "--resume",
                 "run.ckpt", "--save", "run.ckpt"]) == 2
    assert capsys.readouterr().err == ("hogwild: error: --save run.ckpt is the --resume file: "
                                       "the run would replace it; give another path\n")


def test_hidden_files_in_a_data_folder_are_no_data_and_may_be_written(folder, capsys):
    assert main(["run", "svm", "--data", "parts", "--epochs", "1",
                 "--save", "parts/.model.npz"]) == 0
    assert (folder / "parts" / ".model.npz").is_file()


@pytest.mark.parametrize("script, argv, message", [
    ("svm_text.py", ["--data", "train.svm", "--test", "test.svm", "--plot", "test.svm"],
     "--plot test.svm is the --test file: the run would replace it"),
    ("segmentation.py", ["--image", "edges.txt", "--out", "edges.txt"],
     "--out edges.txt is the --image file: the run would replace it"),
    ("recommender.py", ["--data", "ratings.txt", "--model-file", "hard.txt"],
     "--model-file hard.txt is the --data file: the run would replace it"),
])
def test_the_examples_refuse_an_output_that_names_an_input(folder, script, argv, message):
    os.link(folder / "ratings.txt", folder / "hard.txt")
    before = {path: _digest(path) for path in folder.rglob("*") if path.is_file()}
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *argv],
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"{script}: error: {message}; give another path\n"
    assert {path: _digest(path) for path in folder.rglob("*") if path.is_file()} == before
