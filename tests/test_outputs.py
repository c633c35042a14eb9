"""A file the command or an example writes never replaces one it reads: each such
typo is one line, exit 2, before anything is read or trained, and every input is
left byte for byte as it was; and a folder that cannot be written refuses only the
outputs asked for there, each with one line."""
import errno
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hogwild import HogwildError
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


def _read_only(folder):
    """What writing a file into ``folder`` raises where its disk is mounted read-only
    (root writes through permission bits, so the test cannot make one)."""
    def refuse(*args, dir=None, **kwargs):
        if dir is not None and os.path.samefile(dir, folder):
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, dir=dir, **kwargs)
    real = tempfile.TemporaryFile
    return refuse


def test_a_read_only_working_folder_refuses_only_a_checkpoint_asked_for_there(
        folder, capsys, monkeypatch):
    """The Ctrl-C checkpoint goes to the working folder unless --checkpoint says
    otherwise: a run that names none is not refused for a folder it may never write."""
    monkeypatch.setattr(tempfile, "TemporaryFile", _read_only(folder))
    assert main(["run", "svm", "--data", "train.svm", "--epochs", "1"]) == 0
    capsys.readouterr()
    assert main(["run", "svm", "--data", "train.svm", "--epochs", "1",
                 "--checkpoint", "run.ckpt"]) == 2
    assert capsys.readouterr().err == (f"hogwild: error: --checkpoint run.ckpt: the folder "
                                       f"{folder} is not writable (Read-only file system)\n")


def test_a_file_that_cannot_be_written_is_one_error_on_a_read_only_disk(tmp_path, monkeypatch):
    """Nothing to remove where the temporary file could not be made: its removal
    failing too (EROFS, not ENOENT) was a traceback in place of the error."""
    from hogwild import atomic

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(atomic, "open", refuse, raising=False)
    monkeypatch.setattr(atomic.Path, "unlink", refuse)
    with pytest.raises(HogwildError, match=r"^cannot write .*model\.npz: Read-only file system$"):
        with atomic.atomic_file(tmp_path / "model.npz") as f:
            f.write(b"x")
